/* Fidelity corpus: a shared library with globals in every section and
 * __thread variables of its own (dynamic TLS model: the block's offset is
 * the dynamic loader's choice, read from its link_map).
 * fidelity-globals: lib_data lib_bss lib_tls_count lib_tls_point lib_static_tls
 */
#include "fidlib.h"

int lib_data = 7;
int lib_bss;
const char lib_rodata_text[] = "library read-only";
__thread int lib_tls_count = 11;
__thread struct lib_point lib_tls_point = {100, -200};
static __thread short lib_static_tls = 3;
static volatile long lib_sink;

__attribute__((noinline)) int lib_step(int n)
{
    int before = lib_tls_count;
    lib_tls_count += n;
    lib_static_tls++;
    lib_bss += before;
    const char *text = lib_rodata_text;
    struct lib_point *tls_ptr = &lib_tls_point;
    lib_sink += text[n] + tls_ptr->x;
    return lib_tls_count + lib_static_tls;
}

__attribute__((noinline)) int lib_touch(struct lib_point *p, int round)
{
    int *data_ptr = &lib_data;
    int *bss_ptr = &lib_bss;
    struct lib_point local = *p;
    local.x += round;
    lib_tls_point.y += local.x;
    *data_ptr += 1;
    return local.x + local.y + *bss_ptr;
}
