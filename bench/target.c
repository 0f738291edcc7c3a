/* Benchmark target for bench/compare.py (built -O0 -g).
 *
 *   target tick [SECONDS]  call add() about every 1 ms (default: stop after 60 s)
 *   target loop N          print "ready", wait for a line on stdin, call add()
 *                          N times in a tight loop, print "elapsed_ns N <ns>"
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile long sink;

__attribute__((noinline)) int add(int a, int b)
{
    int total = a + b;
    sink += total;
    return total;
}

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && argv[1][0] == 't') {
        double seconds = argc >= 3 ? atof(argv[2]) : 60.0;
        long end = now_ns() + (long)(seconds * 1e9);
        for (int i = 0; now_ns() < end; i++) {
            add(i, 2 * i);
            usleep(1000);
        }
        return 0;
    }
    if (argc >= 3 && argv[1][0] == 'l') {
        long n = atol(argv[2]);
        char line[64];
        printf("ready %d\n", (int)getpid());
        if (!fgets(line, sizeof line, stdin))
            return 1;
        long t0 = now_ns();
        for (long i = 0; i < n; i++)
            add((int)i, (int)(i ^ 1));
        long t1 = now_ns();
        printf("elapsed_ns %ld %ld\n", n, t1 - t0);
        return 0;
    }
    fprintf(stderr, "usage: %s tick [SECONDS] | loop N\n", argv[0]);
    return 2;
}
