/* Benchmark target for `make bench` (bench/README.md), built -O0 -g.
 *
 *   target loop N    print "ready PID", wait for a line on stdin, call hot()
 *                    N times in a tight loop, print "elapsed_ns N NS", exit
 *                    after one more line on stdin
 *   target flood N   the same with tick(), the function every event comes from
 *   target once      call hot(1, 2) and tick(7) once (gdb runs this one)
 *
 * Every tracer probes the same instruction: a line of its own holding one
 * instruction, chosen for how the kernel runs a uprobe there.  A `nop` the
 * kernel emulates; `mov %rax,%rax` (a no-op too) it must single-step out of
 * line.  The bench finds the lines by their LINE: markers, and their
 * addresses and `total`'s frame slot with gdb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile long sink;

/* One instruction on a line of its own, with a function symbol NAME at it:
 * bpftrace 0.17 built without libbfd refuses FUNC+OFFSET probes, but takes
 * a symbol; the others probe the same address by line or file offset. */
#define PROBE_SITE(name, insn) \
    __asm__ volatile(".globl " #name "\n.type " #name ", @function\n" #name ":\n" insn "\n.size " #name ", .-" #name)

__attribute__((noinline)) int hot(int a, int b)
{
    int total = a + b;
    PROBE_SITE(at_nop, "nop");                  /* LINE:nop */
    PROBE_SITE(at_mov, "mov %rax, %rax");       /* LINE:mov */
    sink += total;
    return total;
}

__attribute__((noinline)) void tick(int i)
{
    PROBE_SITE(at_tick, "nop");                 /* LINE:tick */
    sink += i;
}

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int wait_for_go(void)
{
    char line[64];
    printf("ready %d\n", (int)getpid());
    return fgets(line, sizeof line, stdin) != NULL;
}

/* Stay alive until told: the bench checks our code bytes after the tracer
 * ended (no 0xCC left behind). */
static int wait_for_exit(void)
{
    char line[64];
    return fgets(line, sizeof line, stdin) != NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && argv[1][0] == 'o') {
        hot(1, 2);
        tick(7);
        return 0;
    }
    if (argc >= 3 && (argv[1][0] == 'l' || argv[1][0] == 'f')) {
        long n = atol(argv[2]);
        int flood = argv[1][0] == 'f';
        if (!wait_for_go())
            return 1;
        long t0 = now_ns();
        for (long i = 0; i < n; i++) {
            if (flood)
                tick((int)i);
            else
                hot((int)i, (int)(i ^ 1));
        }
        long t1 = now_ns();
        printf("elapsed_ns %ld %ld\n", n, t1 - t0);
        return !wait_for_exit();
    }
    fprintf(stderr, "usage: %s loop N | flood N | once\n", argv[0]);
    return 2;
}
