/* Stand-ins for the kernel and BCC declarations generated C uses, so that
 * `gcc -E` + pycparser can parse golden programs (pycparser's fake-libc
 * approach). Layout-free: only names and signatures matter here. */
#ifndef BCC_FAKE_H
#define BCC_FAKE_H
typedef unsigned char __u8; typedef signed char __s8;
typedef unsigned short __u16; typedef short __s16;
typedef unsigned int __u32; typedef int __s32;
typedef unsigned long long __u64; typedef long long __s64;
typedef __u8 u8; typedef __u32 u32; typedef __u64 u64;
struct pt_regs { unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8,
                 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss; };
struct bpf_pidns_info { __u32 pid; __u32 tgid; };
long bpf_probe_read_user(void *dst, __u32 size, const void *src);
long bpf_probe_read_user_str(void *dst, __u32 size, const void *src);
__u64 bpf_get_current_pid_tgid(void);
__u64 bpf_ktime_get_ns(void);
long bpf_get_ns_current_pid_tgid(__u64 dev, __u64 ino, struct bpf_pidns_info *info, __u32 size);
long bpf_get_stack(void *ctx, void *buf, __u32 size, __u64 flags);
__u64 bpf_get_current_task(void);
long bpf_probe_read_kernel(void *dst, __u32 size, const void *src);
#define BPF_F_USER_STACK 256
#define BPF_FUNC_probe_read_user 112
#define BPF_FUNC_probe_read_user_str 114
#define BPF_FUNC_copy_from_user 148
void *__builtin_memcpy(void *dst, const void *src, unsigned long n);
void *__builtin_memset(void *dst, int c, unsigned long n);
#define __always_inline inline
#define __builtin_offsetof(type, member) offsetof(type, member)
#define BPF_RINGBUF_OUTPUT(name, pages) struct { long (*ringbuf_output)(void *, __u64, __u64); \
    void *(*ringbuf_reserve)(__u64); void (*ringbuf_submit)(void *, __u64); } name
#define BPF_PERF_OUTPUT(name) struct { long (*perf_submit)(void *, void *, __u64); } name
#define BPF_PERCPU_ARRAY(name, leaf, n) struct { leaf *(*lookup)(void *); } name
#define BPF_TABLE(kind, key, leaf, name, n) struct { leaf *(*lookup)(void *); \
    long (*update)(void *, void *); long (*delete)(void *); } name
#define BPF_HASH(name, key, leaf, n) struct { leaf *(*lookup)(void *); long (*insert)(void *, void *); } name
#define BPF_ARRAY(name, leaf, n) struct { leaf *(*lookup)(void *); } name
#define BPF_PERCPU_HASH(name, key, leaf, n) struct { leaf *(*lookup)(void *); \
    long (*insert)(void *, void *); } name
#define BPF_F_TABLE(type, key, leaf, name, n, flags) struct { leaf *(*lookup)(void *); \
    long (*insert)(void *, void *); } name
#define BPF_F_NO_PREALLOC 1
struct task_struct;
struct task_struct *bpf_get_current_task_btf(void);
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1
#define BPF_TASK_STORAGE(name, leaf) struct { \
    leaf *(*task_storage_get)(void *, void *, int); } name
__u64 __sync_fetch_and_add(__u64 *target, __u64 value);
#endif
