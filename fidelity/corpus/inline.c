/* Fidelity corpus: inlined code. static inline and always_inline helpers
 * called from several places (each copy its own inlined instance), an
 * inline helper that calls another, and names shadowed in nested blocks
 * (the innermost block that declares a name wins).
 * fidelity-globals: g_scale
 */
int g_scale = 3;
volatile long g_sink;

static inline int clamp(int value, int low, int high)
{
    if (value < low)
        return low;
    if (value > high)
        return high;
    return value;
}

__attribute__((always_inline)) static inline int scale(int value, int factor)
{
    int scaled = value * factor + g_scale;
    return clamp(scaled, -100, 100);
}

__attribute__((always_inline)) static inline long accumulate(const int *items, int count)
{
    long total = 0;
    for (int k = 0; k < count; k++)
        total += scale(items[k], k + 1);
    return total;
}

__attribute__((noinline)) int first_user(int a, int b)
{
    int left = scale(a, 2);
    int right = scale(b, 3);
    return left - right;
}

__attribute__((noinline)) long second_user(const int *items, int count)
{
    long sum = accumulate(items, count);
    int bounded = clamp((int)sum, 0, 50);
    return sum + bounded;
}

__attribute__((noinline)) int shadowing(int x)
{
    int y = x + 1;
    {
        int x = y * 2;               /* shadows the parameter */
        y += x;
        {
            int y = x - 5;           /* shadows the outer local */
            g_sink += y;
        }
    }
    return y + x;
}

int main(void)
{
    int items[4] = {5, -7, 30, 2};
    long total = 0;
    for (int round = 0; round < 2; round++) {
        total += first_user(round + 4, -round);
        total += second_user(items, 4 - round);
        total += shadowing(round + 10);
        total += scale(round, 9);
    }
    g_sink = total;
    return 0;
}
