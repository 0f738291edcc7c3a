/* The C side of the std-values bench (bench/values.py): N calls of
 * take_values(&sixteen), a 16-element array of uint64_t, with the
 * protocol of target.c (usage: values_target N).
 * Built -O0 -g; the probe is on the nop's line, an instruction the kernel
 * emulates (a single-stepped one costs ~12 us on this VM, drowning what
 * the value costs). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile uint64_t sink;

__attribute__((noinline)) void take_values(const uint64_t (*values)[16])
{
    __asm__ volatile("nop"); /* LINE:probe — an instruction the kernel emulates */
    sink += (*values)[0];
}

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    char line[64];
    uint64_t sixteen[16];
    long n = argc > 1 ? atol(argv[1]) : 1;
    for (int i = 0; i < 16; i++)
        sixteen[i] = i + 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    if (fgets(line, sizeof line, stdin) == NULL)
        return 1;
    long t0 = now_ns();
    for (long i = 0; i < n; i++)
        take_values(&sixteen);
    printf("elapsed_ns %ld %ld\n", n, now_ns() - t0);
    return fgets(line, sizeof line, stdin) == NULL;
}
