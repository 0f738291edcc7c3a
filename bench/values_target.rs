// The Rust side of the std-values bench (bench/values.py): N calls of
// take_values(&v), a Vec<u64> of 16 elements, with target.c's protocol
// (usage: values_target_rs N). Built -C opt-level=0 -g.
use std::hint::black_box;
use std::io::{BufRead, Write};
use std::time::Instant;

#[no_mangle]
#[inline(never)]
pub fn take_values(values: &Vec<u64>) -> u64 {
    unsafe { std::arch::asm!("nop") } // LINE:probe — an instruction the kernel emulates
    black_box(values[0])
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let v: Vec<u64> = (1..=16).collect();
    let stdin = std::io::stdin();
    let mut line = String::new();
    println!("ready {}", std::process::id());
    std::io::stdout().flush().unwrap();
    if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
        std::process::exit(1);
    }
    let start = Instant::now();
    for _ in 0..n {
        black_box(take_values(black_box(&v)));
    }
    println!("elapsed_ns {} {}", n, start.elapsed().as_nanos());
    std::io::stdout().flush().unwrap();
    line.clear();
    let _ = stdin.lock().read_line(&mut line);
}
