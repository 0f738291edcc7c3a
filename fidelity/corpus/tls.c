/* Fidelity corpus: __thread variables in the executable and in a shared
 * library (libfidlib.so, fidlib.c), and pointers into the library's
 * .data, .bss, .rodata and TLS block.
 * fidelity-globals: t_counter t_name t_point t_private lib_tls_count lib_tls_point lib_data lib_bss
 */
#include "fidlib.h"

__thread int t_counter = 5;
__thread char t_name[12] = "main-tls";
__thread struct lib_point t_point = {-4, 9};
static __thread long t_private;
volatile long g_sink;

__attribute__((noinline)) int exe_tls_step(int delta)
{
    int *counter_ptr = &t_counter;
    long *private_ptr = &t_private;
    t_counter += delta;
    t_private += t_counter * 2;
    struct lib_point copy = t_point;
    g_sink += *counter_ptr + *private_ptr + copy.x + t_name[0];
    return t_counter;
}

__attribute__((noinline)) long cross_module(int n)
{
    int *lib_data_ptr = &lib_data;
    int *lib_tls_ptr = &lib_tls_count;
    const char *lib_text = lib_rodata_text;
    int (*lib_function)(int) = lib_step;
    long got = lib_function(n) + *lib_data_ptr + *lib_tls_ptr + lib_text[0];
    g_sink += got;
    return got;
}

int main(void)
{
    long total = 0;
    for (int round = 0; round < 2; round++) {
        total += exe_tls_step(round + 1);
        total += cross_module(round + 2);
        total += lib_touch(&t_point, round);
    }
    g_sink = total;
    return 0;
}
