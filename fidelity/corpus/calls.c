/* Fidelity corpus: call shapes. A deep call chain, recursion, functions
 * with more parameters than registers (the rest on the stack), small and
 * large structs passed and returned by value, early returns, a switch,
 * loops with induction variables.
 * fidelity-globals: g_calls g_last_op
 */
#include <stdint.h>

struct pair { int first; int second; };
struct triple { long a; long b; long c; };      /* 24 bytes: passed in memory */
struct mixed { double weight; int count; };     /* one SSE and one integer eightbyte */
enum op { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_NEG };

int g_calls;
enum op g_last_op = OP_NEG;
volatile long g_sink;

__attribute__((noinline)) long many_ints(int a, long b, short c, char d, unsigned e,
                                         long long f, int g, int h, unsigned char i, long j)
{
    long total = a + b + c + d + e + f + g + h + i + j;
    g_sink += total;
    return total;
}

__attribute__((noinline)) double many_doubles(double d1, double d2, double d3, double d4,
                                              double d5, double d6, double d7, double d8,
                                              double d9, float f10, int k)
{
    double total = d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8 + d9 + f10;
    g_sink += (long)total + k;
    return total * k;
}

__attribute__((noinline)) struct pair make_pair(int first, int second)
{
    struct pair p = {first, second};
    g_calls++;
    return p;
}

__attribute__((noinline)) struct pair swap_pair(struct pair p)
{
    struct pair swapped = {p.second, p.first};
    return swapped;
}

__attribute__((noinline)) struct triple scale_triple(struct triple t, long factor)
{
    struct triple out = {t.a * factor, t.b * factor, t.c * factor};
    return out;
}

__attribute__((noinline)) double weigh(struct mixed m, struct pair p)
{
    double w = m.weight * m.count + p.first - p.second;
    return w;
}

__attribute__((noinline)) int early_exit(int x, const int *table, int n)
{
    if (x < 0)
        return -1;
    if (table == 0)
        return -2;
    for (int i = 0; i < n; i++) {
        if (table[i] == x)
            return i;
    }
    int missing = n + x;
    return missing;
}

__attribute__((noinline)) int apply(enum op o, int a, int b)
{
    int result;
    g_last_op = o;
    switch (o) {
    case OP_ADD:
        result = a + b;
        break;
    case OP_SUB:
        result = a - b;
        break;
    case OP_MUL:
        result = a * b;
        break;
    case OP_DIV:
        if (b == 0)
            return 0;
        result = a / b;
        break;
    default:
        result = -a;
        break;
    }
    return result;
}

__attribute__((noinline)) uint64_t loops(int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += (uint64_t)i * i;
    int j = n;
    while (j > 0) {
        sum ^= (uint64_t)j << 3;
        j -= 2;
    }
    for (int row = 0; row < 3; row++)
        for (int col = 0; col < n; col += 2)
            sum += row * col;
    return sum;
}

__attribute__((noinline)) int recurse(int depth, int acc)
{
    if (depth == 0)
        return acc;
    int next = acc * 3 + depth;
    return recurse(depth - 1, next) + 1;
}

__attribute__((noinline)) int chain5(int v, int *out) { int w = v * 5; *out += w; return w + recurse(3, v); }
__attribute__((noinline)) int chain4(int v, int *out) { int w = v + 4; return chain5(w, out) + *out; }
__attribute__((noinline)) int chain3(int v, int *out) { int w = v - 3; *out += 1; return chain4(w, out); }
__attribute__((noinline)) int chain2(int v, int *out) { int w = v * 2; return chain3(w, out) - w; }
__attribute__((noinline)) int chain1(int v, int *out) { int w = v + 1; return chain2(w, out); }

int main(void)
{
    int table[5] = {4, 8, 15, 16, 23};
    struct triple t = {1, -2, 3};
    struct mixed m = {0.5, 3};
    int out = 0;
    long acc = 0;
    for (int round = 0; round < 2; round++) {
        acc += many_ints(1, -2, 3, 'x', 5u, -6LL, 7, 8, 250, 10L + round);
        acc += (long)many_doubles(1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5f, round + 1);
        struct pair p = make_pair(round, 40);
        struct pair q = swap_pair(p);
        struct triple s = scale_triple(t, round + 2);
        acc += q.first + s.c + (long)weigh(m, q);
        acc += early_exit(15, table, 5) + early_exit(-1, table, 5) + early_exit(99, table, 5);
        for (enum op o = OP_ADD; o <= OP_NEG; o++)
            acc += apply(o, 12, round);
        acc += (long)loops(5 + round);
        acc += chain1(round + 2, &out);
    }
    g_sink = acc;
    return 0;
}
