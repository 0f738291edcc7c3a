/* Throughput target for scripts/throughput/harness.py: `flat_out T N`: T threads
 * call f(a, b) N times each, flat out. TP_CPU=n pins the process to CPU n. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
volatile long sink;
static long calls_per_thread;
static long counts[64];
__attribute__((noinline)) int f(int a, long b) { __asm__ volatile("nop"); return a + (int)b; }
static void *run(void *arg) {
    int id = (int)(long)arg;
    for (long i = 0; i < calls_per_thread; i++) sink += f(id, i);
    counts[id] = calls_per_thread;
    return NULL;
}
int main(int argc, char **argv) {
    if (getenv("TP_CPU")) { cpu_set_t set; CPU_ZERO(&set); CPU_SET(atoi(getenv("TP_CPU")), &set); sched_setaffinity(0, sizeof set, &set); }
    int threads = atoi(argv[1]);
    calls_per_thread = atol(argv[2]);
    if (argc > 3) usleep(atoi(argv[3]) * 1000);
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, run, (void *)i);
    long total = 0;
    for (int i = 0; i < threads; i++) { pthread_join(t[i], NULL); total += counts[i]; }
    fprintf(stderr, "calls %ld\n", total);
    return 0;
}
