/* The C++ side of the std-values bench (bench/values.py): N calls of
 * take_pairs(&sixteen), a 16-element std::map<int, int> (i -> i * i, the
 * pairs of values_target.c's take_pairs), with the protocol of target.c
 * (usage: values_target_cpp N).
 * Built -O0 -g; the probe is on the nop's line, an instruction the kernel
 * emulates. */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <unistd.h>

volatile long sink;

extern "C" __attribute__((noinline)) void take_pairs(const std::map<int, int> *values)
{
    __asm__ volatile("nop"); /* LINE:pairs — an instruction the kernel emulates */
    sink += values->size();
}

static long now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    char line[64];
    std::map<int, int> sixteen;
    long n = argc > 1 ? atol(argv[1]) : 1;
    for (int i = 0; i < 16; i++)
        sixteen[i] = i * i;
    setvbuf(stdout, nullptr, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    if (fgets(line, sizeof line, stdin) == nullptr)
        return 1;
    long t0 = now_ns();
    for (long i = 0; i < n; i++)
        take_pairs(&sixteen);
    printf("elapsed_ns %ld %ld\n", n, now_ns() - t0);
    return fgets(line, sizeof line, stdin) == nullptr;
}
