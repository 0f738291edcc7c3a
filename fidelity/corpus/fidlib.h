/* The corpus's shared library (fidlib.c), used by tls.c. */
struct lib_point { int x; int y; };

extern int lib_data;
extern int lib_bss;
extern const char lib_rodata_text[];
extern __thread int lib_tls_count;
extern __thread struct lib_point lib_tls_point;

int lib_step(int n);
int lib_touch(struct lib_point *p, int round);
