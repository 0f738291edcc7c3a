// The fidelity corpus's C++ program (fidelity/README.md): classes with
// single, multiple and virtual bases, namespaces (nested, anonymous),
// class and function templates, lvalue and rvalue references, enum class,
// member functions, static members, a lambda, overloads, a pointer to a
// data member, a union, bitfields, an array of classes and three std
// types read by their layout (std::string, std::vector<int>,
// std::optional<int>). Built with `g++ -g -O0..-O3`; a fixed workload that
// reads no input, prints nothing and exits 0.
// fidelity-globals: shop::g_orders shop::Counter::instances g_ratio
#include <optional>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))

template <typename T> inline void keep(T &value) { asm volatile("" : : "g"(&value) : "memory"); }

double g_ratio = 0.5;

namespace shop {

int g_orders = 3;

enum class Color : unsigned char { Red = 1, Green = 2, Blue = 7 };

struct Point {
    int x;
    int y;
};

struct Named {
    char label[8];
    short code;
};

struct Item : Point {               // single base
    long price;
    Color color;
};

struct Tagged : Named, Point {      // multiple bases
    unsigned flags;
};

struct Root {
    int id;
};

struct LeftPart : virtual Root {
    int left;
};

struct RightPart : virtual Root {
    int right;
};

struct Diamond : LeftPart, RightPart {   // a virtual base, shared
    int extra;
};

struct Counter {
    static int instances;
    int value;
    int step;

    NOINLINE int bump(int by)
    {
        int before = value;
        value += by * step;
        instances += 1;
        return before;
    }
};

int Counter::instances = 0;

struct Packed {
    unsigned low : 3;
    unsigned mid : 9;
    signed neg : 5;
    bool on : 1;
};

union Word {
    int whole;
    unsigned short halves[2];
    float real;
};

namespace detail {                  // nested namespace

template <typename T, int N> struct Ring {
    T items[N];
    int head;

    NOINLINE T push(T item)
    {
        T old = items[head];
        items[head] = item;
        head = (head + 1) % N;
        return old;
    }
};

template <typename T> NOINLINE T biggest(const T *values, int count)
{
    T best = values[0];
    for (int i = 1; i < count; i++) {
        if (values[i] > best)
            best = values[i];
    }
    return best;
}

}  // namespace detail

NOINLINE long total(const Item &item, Item &&moved, const Tagged &tagged)
{
    long sum = item.x + item.y + item.price;       // members of a base, through a reference
    sum += moved.price * (moved.color == Color::Blue ? 2 : 1);
    sum += tagged.code + tagged.x - (long)tagged.flags;
    keep(sum);
    return sum;
}

NOINLINE int walk(Diamond &diamond, LeftPart *left, RightPart &right)
{
    int sum = diamond.id + diamond.left + diamond.right + diamond.extra;
    sum += left->id + left->left;
    sum += right.id * right.right;
    keep(sum);
    return sum;
}

}  // namespace shop

namespace {                         // anonymous namespace

NOINLINE int scale(int value) { return value * 3; }

NOINLINE double scale(double value, double by) { return value * by; }

NOINLINE int pick(const shop::Point *points, int shop::Point::*field, int count)
{
    int sum = 0;
    for (int i = 0; i < count; i++)
        sum += points[i].*field;
    return sum;
}

NOINLINE unsigned pack(shop::Packed bits, shop::Word word)
{
    unsigned mixed = bits.low + bits.mid + (unsigned)bits.neg + bits.on;
    mixed ^= word.halves[0];
    keep(mixed);
    return mixed + (unsigned)word.whole;
}

NOINLINE std::size_t strings(const std::string &name, std::vector<int> &numbers,
                             std::optional<int> maybe)
{
    std::string copy = name;
    copy += "-x";
    numbers.push_back((int)copy.size());
    int fallback = maybe.value_or(-1);
    std::size_t length = copy.size() + numbers.size();
    keep(copy);
    keep(fallback);
    return length + (std::size_t)fallback;
}

}  // namespace

int main()
{
    using namespace shop;
    Item items[3] = {{{1, 2}, 100, Color::Red}, {{3, 4}, 250, Color::Green},
                     {{-5, 6}, 75, Color::Blue}};
    Tagged tagged = {{"tag", 11}, {7, 8}, 0x5u};
    Diamond diamond;
    diamond.id = 40;
    diamond.left = 41;
    diamond.right = 42;
    diamond.extra = 43;
    Counter counter = {0, 2};
    detail::Ring<short, 4> ring = {{0, 0, 0, 0}, 0};
    Packed bits = {5, 300, -7, true};
    Word word;
    word.whole = 0x12345678;
    std::string name = "customer-name-longer-than-sso";
    std::string small = "ok";
    std::vector<int> numbers = {4, 8, 15};
    std::optional<int> maybe = 16;
    std::optional<int> nothing;
    long grand = 0;
    int offset = 10;
    auto add = [&grand, offset](long amount) { grand += amount + offset; };
    for (int round = 0; round < 3; round++) {
        Item &chosen = items[round];
        grand += total(chosen, Item{{round, -round}, 9, Color::Blue}, tagged);
        grand += walk(diamond, &diamond, diamond);
        counter.bump(round + 1);
        short old = ring.push((short)(round * 7));
        add(old + scale(round));
        double scaled = scale(g_ratio, (double)round);
        grand += (long)scaled;
        grand += pick(items, round % 2 ? &Point::y : &Point::x, 3);
        bits.mid = (unsigned)(bits.mid + round);
        word.halves[1] = (unsigned short)round;
        grand += pack(bits, word);
        grand += (long)strings(round ? name : small, numbers, round == 1 ? nothing : maybe);
        diamond.extra += round;
        g_orders += 1;
    }
    long values[] = {grand, 3, -9};
    long big = detail::biggest(values, 3);
    double ratios[] = {0.25, g_ratio, 1.5};
    double bigd = detail::biggest(ratios, 3);
    keep(big);
    keep(bigd);
    keep(counter);
    return 0;
}
