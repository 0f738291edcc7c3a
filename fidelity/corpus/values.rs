// The fidelity corpus's Rust program (fidelity/README.md): values of many
// shapes, passed, returned and kept in locals across calls, a loop, a
// closure, a trait method and generic functions. Built with
// `rustc --edition 2021 -g -C opt-level=0..3`; a fixed workload that reads
// no input, prints nothing and exits 0. Nothing here depends on the
// environment (no HashMap: its RandomState seeds from getrandom).
// fidelity-globals: values::G_COUNTER values::G_TABLE values::G_NAME
use std::hint::black_box;
use std::num::NonZeroU32;

static mut G_COUNTER: u64 = 7;
static G_TABLE: [i16; 4] = [-1, 2, -3, 4];
static G_NAME: &str = "corpus";

#[derive(Clone, Copy)]
pub struct Point {
    x: i32,
    y: i32,
}

pub struct Pair(u8, i64);

pub enum Shape {
    Circle { r: f64 },
    Rect(u32, u32),
    Empty,
}

// Niche layouts: the discriminant lives in a field's invalid values.
pub enum Slot<'a> {
    Free,
    Taken(&'a Point),
}

#[derive(Clone, Copy)]
pub enum Level {
    Low = 1,
    High = 9,
}

pub struct Order {
    id: u64,
    name: String,
    tags: Vec<u16>,
    total: Option<u32>,
    shape: Shape,
    level: Level,
}

pub trait Area {
    fn area(&self) -> f64;
}

impl Area for Shape {
    #[inline(never)]
    fn area(&self) -> f64 {
        let scale = 2.0f64;
        match self {
            Shape::Circle { r } => scale * r * r,
            Shape::Rect(w, h) => (*w as f64) * (*h as f64),
            Shape::Empty => 0.0,
        }
    }
}

#[inline(never)]
fn scalars(a: i8, b: u16, c: i32, d: u64, e: i128, f: bool, g: char, h: f32, k: f64) -> i64 {
    let sum = a as i64 + b as i64 + c as i64 + d as i64 + e as i64;
    let flag = f && g != 'x';
    let ratio = h as f64 / k;
    black_box((sum, flag, ratio));
    if flag { sum } else { -sum }
}

#[inline(never)]
fn tuples(t: (i32, bool, u8), p: Point, q: Pair) -> (i64, Point) {
    let moved = Point { x: p.x + t.0, y: p.y - q.0 as i32 };
    let wide = q.1 * moved.x as i64;
    black_box(&moved);
    (wide, moved)
}

#[inline(never)]
fn options(o: Option<u32>, n: Option<NonZeroU32>, r: Result<i16, u8>, s: Slot) -> u32 {
    let base = o.unwrap_or(3);
    let nz = n.map_or(0, |v| v.get());
    let rr: i32 = match r {
        Ok(v) => v as i32,
        Err(e) => -(e as i32),
    };
    let taken = match s {
        Slot::Free => 0,
        Slot::Taken(p) => p.x,
    };
    black_box((base + nz) as i32 + rr + taken) as u32
}

#[inline(never)]
fn references(p: &Point, m: &mut Point, raw: *const i32, slice: &[u32], text: &str) -> usize {
    m.x += p.y;
    let first = slice[0];
    let n = text.len() + slice.len();
    black_box((raw, first));
    n + m.x as usize
}

#[inline(never)]
fn owned(s: String, v: Vec<i64>, b: Box<Point>, arr: [u8; 5]) -> usize {
    let total: i64 = v.iter().sum();
    let boxed_sum = b.x + b.y;
    let bytes = arr.len() + s.len();
    black_box((total, boxed_sum));
    bytes
}

#[inline(never)]
fn describe(o: &Order) -> f64 {
    let area = o.shape.area();
    let tag_count = o.tags.len();
    let level = o.level as u8;
    black_box((tag_count, level, o.total, &o.name));
    area + o.id as f64
}

#[inline(never)]
fn largest<T: PartialOrd + Copy>(items: &[T]) -> T {
    let mut best = items[0];
    for &item in items {
        if item > best {
            best = item;
        }
    }
    best
}

#[inline(never)]
fn depth(n: u32, acc: u64) -> u64 {
    if n == 0 {
        return acc;
    }
    let next = acc * 3 + n as u64;
    black_box(depth(n - 1, next))
}

#[inline(never)]
fn accumulate(values: &[i32]) -> i32 {
    let mut total = 0;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        if v % 2 == 0 {
            total += v;
        } else {
            total -= v;
        }
        i += 1;
    }
    total
}

fn main() {
    let point = Point { x: 3, y: -4 };
    let mut other = Point { x: 10, y: 20 };
    let numbers = [5u32, 8, 13, 21];
    let greeting = "hello, corpus";
    let widened = scalars(-5, 60000, -70000, 1 << 40, -(1i128 << 70), true, 'λ', 1.5, -0.25);
    let (wide, moved) = tuples((4, false, 200), point, Pair(9, -1234567890123));
    let opt = options(Some(11), NonZeroU32::new(42), Err(17), Slot::Taken(&point));
    let none = options(None, None, Ok(-300), Slot::Free);
    let refs = references(&point, &mut other, &point.x, &numbers, greeting);
    let owned_len = owned(String::from("owned text"), vec![1, -2, 3, -4], Box::new(moved),
                          [1, 2, 3, 4, 5]);
    let order = Order {
        id: 42,
        name: String::from("order-42"),
        tags: vec![7, 8, 9],
        total: Some(99),
        shape: Shape::Rect(3, 4),
        level: Level::High,
    };
    let circle = Order {
        id: 7,
        name: String::new(),
        tags: Vec::new(),
        total: None,
        shape: Shape::Circle { r: 1.5 },
        level: Level::Low,
    };
    let d1 = describe(&order);
    let d2 = describe(&circle);
    let empty_area = Shape::Empty.area();
    let big = largest(&[3i64, -9, 27, 1]);
    let bigf = largest(&[0.5f32, 2.25, -1.0]);
    let deep = depth(5, 1);
    let mix = accumulate(&[1, 2, 3, 4, 5, 6]);
    let offset = 100i64;
    let adjust = |x: i64| x + offset + wide;
    let adjusted = adjust(big);
    unsafe {
        G_COUNTER += deep;
    }
    black_box((widened, opt, none, refs, owned_len, d1, d2, empty_area, bigf, mix, adjusted,
               &G_TABLE, G_NAME));
}
