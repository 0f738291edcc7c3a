/* A tiny service for `make demo`: computes a running total on a timer. */
#include <stdio.h>
#include <stdbool.h>
#include <unistd.h>

int request_count = 0;          /* .bss */
long total_bytes = 1000;        /* .data */
static unsigned int seed = 7;   /* file-scope static */
bool verbose = true;

int add(int a, int b)
{
    int total = a + b;
    request_count++;
    return total;
}

long handle_request(int id, long size)
{
    long cost = size * 2;
    int checksum = add(id, (int)(size % 100));
    total_bytes += size;
    seed = seed * 1103515245u + 12345u;
    return cost + checksum;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int id = 1;; id++) {
        long result = handle_request(id, 100 + id * 10);
        if (verbose && id % 50 == 0)
            printf("request %d -> %ld\n", id, result);
        usleep(200 * 1000);
    }
    return 0;
}
