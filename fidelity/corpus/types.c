/* Fidelity corpus: every kind of C value (__int128, _Complex, vectors and
 * _Float16 included), and pointers into every region of the process
 * (stack, heap, .data, .bss, .rodata, a shared library).
 * Deterministic: no input, no time, no output; the exit status is 0.
 * fidelity-globals: g_data_int g_bss_counter g_rodata_text g_origin g_table g_color g_word g_flags_global
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct point { int x; int y; };

struct rect {
    struct point tl;
    struct point br;
    const char *label;
    char tag[8];
};

union number {
    int i;
    float f;
    unsigned char bytes[4];
};

enum color { RED, GREEN = 5, BLUE };

struct flags {
    unsigned ready : 1;
    signed level : 4;
    unsigned mode : 3;
    unsigned wide : 20;
};

typedef struct {
    short id;
    unsigned char kind;
} item_t;

struct with_anon {
    int tag;
    union {
        int as_int;
        float as_float;
    };
};

int g_data_int = 42;                          /* .data */
int g_bss_counter;                            /* .bss */
static const char g_rodata_text[] = "read-only text";
const double g_table[4] = {0.5, 1.5, -2.25, 1e300};
struct point g_origin = {1, -1};
enum color g_color = BLUE;
const char *g_word = "global word";
struct flags g_flags_global = {1, -3, 5, 77777};
volatile long g_sink;

__attribute__((noinline)) int describe_rect(const struct rect *r, struct point offset,
                                            enum color c)
{
    int width = r->br.x - r->tl.x;
    int height = r->br.y - r->tl.y;
    const char *label = r->label;
    struct point moved = {r->tl.x + offset.x, r->tl.y + offset.y};
    g_sink += width * height + label[0] + moved.x + c;
    return width * height;
}

__attribute__((noinline)) double mix_numbers(float f, double d, long double ld, bool flag,
                                             union number n)
{
    float half = f / 2.0f;
    double scaled = d * 3.0;
    long double wide = ld * 2.0L;
    bool inverted = !flag;
    double result = half + scaled + (double)wide + (inverted ? 1.0 : 0.0) + n.f;
    g_sink += (long)result;
    return result;
}

__attribute__((noinline)) int classify_flags(struct flags fl, item_t item,
                                             struct with_anon anon)
{
    int level = fl.level;
    unsigned mode = fl.mode;
    int score = item.id * 10 + item.kind + anon.as_int;
    if (fl.ready)
        score += level;
    g_sink += score + mode;
    return score;
}

__attribute__((noinline)) int fill_array(int *out, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        out[i] = i * i - 3;
        total += out[i];
    }
    int grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
    struct point pts[3] = {{1, 2}, {3, 4}, {5, 6}};
    total += grid[1][2] + pts[2].y;
    g_sink += total;
    return total;
}

__attribute__((noinline)) size_t string_kinds(const char *text, char *heap_copy)
{
    char local_buf[16];
    strcpy(local_buf, "on the stack");
    const char *ro = g_rodata_text;
    const char *lit = "a literal";
    size_t length = strlen(text) + strlen(local_buf) + strlen(heap_copy) + strlen(ro);
    g_sink += length + lit[0];
    return length;
}

__attribute__((noinline)) long region_pointers(int depth)
{
    int on_stack = depth * 7;
    int *stack_ptr = &on_stack;
    int *heap_ptr = malloc(4 * sizeof(int));
    int *data_ptr = &g_data_int;
    int *bss_ptr = &g_bss_counter;
    const char *rodata_ptr = g_rodata_text;
    const double *table_ptr = &g_table[2];
    FILE *libc_data_ptr = stderr;
    int (*libc_function)(int) = abs;
    int (*own_function)(int *, int) = fill_array;
    void *nothing = NULL;
    heap_ptr[0] = on_stack;
    g_bss_counter += *stack_ptr + *data_ptr + *bss_ptr + rodata_ptr[0] + (int)*table_ptr;
    long sum = heap_ptr[0] + (libc_data_ptr != NULL) + libc_function(-depth) +
               (own_function != NULL) + (nothing == NULL);
    free(heap_ptr);
    g_sink += sum;
    return sum;
}

typedef int v4si __attribute__((vector_size(16)));

__attribute__((noinline)) long wide_values(__int128 big, unsigned __int128 ubig,
                                           _Complex double z, _Complex float zf,
                                           _Complex long double zl, v4si vec, _Float16 half)
{
    __int128 twice = big * 2;
    _Complex double squared = z * z;
    v4si doubled = vec + vec;
    _Float16 more = half + (_Float16)1.0f;
    g_sink += (long)twice + (long)__real__ squared + doubled[1] + (long)__imag__ zf +
              (long)ubig + (long)__real__ zl + (long)more;
    return g_sink;
}

int main(void)
{
    struct rect box = {{1, 2}, {11, 22}, "box", "tagged"};
    union number n = {.f = 1.25f};
    struct flags fl = {1, -5, 6, 123456};
    item_t item = {-12, 200};
    struct with_anon anon = {3, {.as_int = 99}};
    int values[6];
    char *heap_copy = malloc(32);
    strcpy(heap_copy, "heap text");
    for (int round = 0; round < 2; round++) {
        describe_rect(&box, g_origin, round ? GREEN : BLUE);
        mix_numbers(0.75f + round, -2.5, 3.25L, round == 0, n);
        classify_flags(fl, item, anon);
        fill_array(values, 6);
        string_kinds("argument text", heap_copy);
        region_pointers(round + 3);
        v4si vec = {1, -2, 3, round};
        wide_values(-((__int128)1 << 100) - 5 - round, ~(unsigned __int128)0 - round,
                    1.5 - 2.0i, 0.5f + 3.0fi, 0.1L + 1.0Li * round, vec, (_Float16)2.5f);
        box.br.x += 5;
    }
    free(heap_copy);
    return 0;
}
