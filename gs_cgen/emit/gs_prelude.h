/* gs_prelude.h — fixed helpers for gs-cgen's generated probes. Hand-written;
 * no map access here (BCC rewrites map calls only in the main file).
 *
 * Value slot layout (plan/build.py): status byte at +0, u32 length at +4,
 * u64 address at +8, data from +16. */
#ifndef GS_PRELUDE_H
#define GS_PRELUDE_H

/* Our own handles on the read helpers (same helper ids): BCC's rewriter
 * does extra work for every use of its named bpf_probe_read_user*, which
 * doubled compile time (1.28 s -> 0.71 s for a two-value probe).
 * A sleepable probe (GS_SLEEPABLE, set by the loader) reads memory with
 * bpf_copy_from_user, which faults a page in as the target's own access
 * would; bpf_probe_read_user fails on any page not mapped in yet. Both
 * zero the destination when they fail. */
#if GS_SLEEPABLE
static long (*gs_read_user_helper)(void *dst, __u32 size, const void *src) =
    (void *)BPF_FUNC_copy_from_user;
#else
static long (*gs_read_user_helper)(void *dst, __u32 size, const void *src) =
    (void *)BPF_FUNC_probe_read_user;
#endif
static long (*gs_read_user_str_helper)(void *dst, __u32 size, const void *src) =
    (void *)BPF_FUNC_probe_read_user_str;

/* A C string of at most `cap` bytes: bytes read including the NUL, or < 0.
 * bpf_probe_read_user_str never faults, even in a sleepable probe, and
 * there is no faulting string helper BCC can call; so when it fails, fault
 * in the pages the string may span, one at a time (one byte each, with
 * bpf_copy_from_user), retrying after each. A page that cannot be faulted
 * in ends it: the string is unreadable there. */
static __always_inline long gs_read_user_str(void *dst, __u32 cap, __u64 addr)
{
    long n = gs_read_user_str_helper(dst, cap, (const void *)addr);
#if GS_SLEEPABLE
    __u64 page = addr & ~(__u64)(GS_PAGE_SIZE - 1);
    for (int i = 0; i < GS_STRING_PAGES && n < 0; i++) {
        __u64 touch = i == 0 ? addr : page + (__u64)i * GS_PAGE_SIZE;
        __u8 byte;
        if (touch - addr >= cap || gs_read_user_helper(&byte, 1, (const void *)touch))
            break;
        n = gs_read_user_str_helper(dst, cap, (const void *)addr);
    }
#endif
    return n;
}

/* hist(): bpftrace's power-of-2 buckets (gs_abi.h gs_agg_hist): 0 for a
 * negative value (when the value's type is signed), 1 for 0, 2 + k for
 * [2^k, 2^(k+1)); k by a bounded binary search (no loop for the verifier). */
static __always_inline __u32 gs_hist_bucket(__u64 value, int is_signed)
{
    if (is_signed && (__s64)value < 0)
        return 0;
    if (value == 0)
        return 1;
    __u32 k = 0;
    if (value >> 32) { value >>= 32; k += 32; }
    if (value >> 16) { value >>= 16; k += 16; }
    if (value >> 8) { value >>= 8; k += 8; }
    if (value >> 4) { value >>= 4; k += 4; }
    if (value >> 2) { value >>= 2; k += 2; }
    if (value >> 1) { k += 1; }
    return 2 + k;
}

#define GS_STATUS(ev, slot) ((ev)[(slot)])
#define GS_LENGTH(ev, slot) (*(__u32 *)((ev) + (slot) + 4))
#define GS_ADDRESS(ev, slot) (*(__u64 *)((ev) + (slot) + 8))

/* Mark rendered line `bit` as executed in the event's bitmap. */
#define GS_MARK(ev, bitmap, bit) \
    (((__u64 *)((ev) + (bitmap)))[(bit) / 64] |= (1ULL << ((bit) % 64)))

/* A value computed in the probe. Little endian: the low `size` bytes of a
 * u64 are the narrow value. */
#define GS_STORE(ev, slot, data, size, value)          \
    do {                                                \
        __u64 gs_v_ = (__u64)(value);                   \
        GS_STATUS(ev, slot) = GS_STATUS_OK;             \
        __builtin_memcpy((ev) + (data), &gs_v_, size);  \
    } while (0)

/* Record why a value could not be produced; its data is never rendered. */
static __always_inline void gs_fail_value(__u8 *ev, __u32 slot, __u8 status, __u64 address)
{
    GS_STATUS(ev, slot) = status ? status : GS_STATUS_READ_ERROR;
    GS_ADDRESS(ev, slot) = address;
}

/* Read `size` bytes at `addr` into the slot; bpf_probe_read_user zeroes
 * the destination when it fails, so a failed value is never a number. */
static __always_inline void gs_read_user(__u8 *ev, __u32 slot, __u32 data,
                                         __u32 size, __u64 addr)
{
    GS_ADDRESS(ev, slot) = addr;
    if (addr == 0) {
        GS_STATUS(ev, slot) = GS_STATUS_NULL_DEREF;
        return;
    }
    long err = gs_read_user_helper(ev + data, size, (const void *)addr);
    GS_STATUS(ev, slot) = err ? GS_STATUS_READ_ERROR : GS_STATUS_OK;
}

/* A C string through a pointer: length = bytes read including the NUL. */
static __always_inline void gs_read_str(__u8 *ev, __u32 slot, __u32 data,
                                        __u32 cap, __u64 addr)
{
    GS_ADDRESS(ev, slot) = addr;
    GS_LENGTH(ev, slot) = 0;
    if (addr == 0) {
        GS_STATUS(ev, slot) = GS_STATUS_NULL_DEREF;
        return;
    }
    long n = gs_read_user_str(ev + data, cap, addr);
    if (n < 0) {
        GS_STATUS(ev, slot) = GS_STATUS_READ_ERROR;
        return;
    }
    GS_LENGTH(ev, slot) = n;
    GS_STATUS(ev, slot) = GS_STATUS_OK;
}

/* A memory dump of `requested` bytes, at most `cap`; the length field keeps
 * the request so the renderer can say it was truncated. */
static __always_inline void gs_read_dump(__u8 *ev, __u32 slot, __u32 data, __u32 cap,
                                         __u64 addr, __s64 requested)
{
    GS_ADDRESS(ev, slot) = addr;
    if (requested < 0)
        requested = 0;
    if (requested > 0x7fffffff)
        requested = 0x7fffffff;
    GS_LENGTH(ev, slot) = requested;
    __u32 n = requested > cap ? cap : requested;
    if (n == 0) {
        GS_STATUS(ev, slot) = GS_STATUS_OK;
        return;
    }
    if (addr == 0) {
        GS_STATUS(ev, slot) = GS_STATUS_NULL_DEREF;
        return;
    }
    long err = gs_read_user_helper(ev + data, n, (const void *)addr);
    GS_STATUS(ev, slot) = err ? GS_STATUS_READ_ERROR : GS_STATUS_OK;
}

/* The thread's armed uretprobes, innermost first (gs_abi.h
 * gs_pending_returns), through the kernel's task_struct.utask->
 * return_instances list at the offsets its BTF gives; utask_at 0: unknown. */
static __always_inline void gs_copy_pending_returns(struct gs_pending_returns *pending,
                                                    __u32 utask_at, __u32 list_at,
                                                    __u32 stack_at, __u32 orig_at,
                                                    __u32 next_at)
{
    __u64 task = bpf_get_current_task();
    __u64 utask = 0, ri = 0;
    pending->count = 0;
    if (utask_at == 0 || bpf_probe_read_kernel(&utask, 8, (void *)(task + utask_at)) || !utask)
        return;
    if (bpf_probe_read_kernel(&ri, 8, (void *)(utask + list_at)))
        return;
    for (__u32 i = 0; i < GS_BT_RETURNS && ri; i++) {
        if (bpf_probe_read_kernel(&pending->slot[i], 8, (void *)(ri + stack_at)) ||
            bpf_probe_read_kernel(&pending->address[i], 8, (void *)(ri + orig_at)))
            return;
        pending->count = i + 1;
        if (bpf_probe_read_kernel(&ri, 8, (void *)(ri + next_at)))
            return;
    }
}

/* `bt`: registers and up to `window` bytes of the user stack from sp
 * (gs_abi.h struct gs_backtrace_regs says the layout). Chunks until one
 * cannot be read; the stack mapping ends on a page boundary, so what is
 * left of the failing chunk's page is read in one more, shorter read. */
static __always_inline void gs_copy_stack(struct pt_regs *ctx, __u8 *ev, __u32 slot,
                                          __u32 data, __u32 window)
{
    struct gs_backtrace_regs *regs = (struct gs_backtrace_regs *)(ev + data);
    regs->ip = ctx->ip;
    regs->sp = ctx->sp;
    regs->bp = ctx->bp;
    regs->bx = ctx->bx;
    regs->r12 = ctx->r12;
    regs->r13 = ctx->r13;
    regs->r14 = ctx->r14;
    regs->r15 = ctx->r15;
    regs->ax = ctx->ax;
    regs->dx = ctx->dx;
    regs->cx = ctx->cx;
    regs->si = ctx->si;
    regs->di = ctx->di;
    regs->r8 = ctx->r8;
    regs->r9 = ctx->r9;
    regs->r10 = ctx->r10;
    regs->r11 = ctx->r11;
    __u8 *stack = ev + data + sizeof(struct gs_backtrace_regs) +
                  sizeof(struct gs_pending_returns);
    __u64 sp = ctx->sp;
    __u32 copied = 0;
    for (__u32 i = 0; i < window / GS_BT_CHUNK; i++) {
        if (gs_read_user_helper(stack + copied, GS_BT_CHUNK, (const void *)(sp + copied)))
            break;
        copied += GS_BT_CHUNK;
    }
    __u32 rest = (__u32)(0 - (sp + copied)) & (GS_PAGE_SIZE - 1);
    if (copied + GS_BT_CHUNK <= window && rest > 0 && rest < GS_BT_CHUNK) {
        rest &= GS_BT_CHUNK - 1;
        if (gs_read_user_helper(stack + copied, rest, (const void *)(sp + copied)) == 0)
            copied += rest;
    }
    GS_ADDRESS(ev, slot) = sp;
    GS_LENGTH(ev, slot) = copied;
    GS_STATUS(ev, slot) = GS_STATUS_OK;
}

/* `size` bytes at `addr`, sign- or zero-extended to 64 bits. */
/* One part of a composite value, read into place. */
static __always_inline int gs_read_part(__u8 *dst, __u32 size, __u64 addr,
                                        __u8 *status, __u64 *failed_at)
{
    *failed_at = addr;
    if (addr == 0) {
        *status = GS_STATUS_NULL_DEREF;
        return 1;
    }
    if (gs_read_user_helper(dst, size, (const void *)addr)) {
        *status = GS_STATUS_READ_ERROR;
        return 1;
    }
    return 0;
}

static __always_inline int gs_load(__u64 *out, __u64 addr, __u32 size, int is_signed,
                                   __u8 *status, __u64 *failed_at)
{
    *out = 0;
    *failed_at = addr;
    if (addr == 0) {
        *status = GS_STATUS_NULL_DEREF;
        return 1;
    }
    if (gs_read_user_helper(out, size, (const void *)addr)) {
        *status = GS_STATUS_READ_ERROR;
        return 1;
    }
    if (is_signed && size == 1)
        *out = (__u64)(__s64)(__s8)*out;
    else if (is_signed && size == 2)
        *out = (__u64)(__s64)(__s16)*out;
    else if (is_signed && size == 4)
        *out = (__u64)(__s64)(__s32)*out;
    return 0;
}

#ifdef GS_TASK_FSBASE_OFFSET
/* Where a module's TLS block starts for the thread running the probe
 * (x86-64 TLS variant II, as glibc lays it out). The thread pointer is the
 * FS base the kernel keeps in task_struct.thread.fsbase (saved there by
 * arch_prctl(ARCH_SET_FS) and clone(CLONE_SETTLS), which is how glibc
 * sets it); it is read by offset because generated C may not depend on
 * the kernel headers' struct layouts. A block in the static TLS area is
 * at tp - block_offset; any other one is dtv[modid].pointer.val: the
 * thread's DTV is at tcb + 8 (tcbhead_t.dtv), 16-byte entries (dtv_t),
 * its length in dtv[-1]; an unallocated entry is 0 or -1
 * (TLS_DTV_UNALLOCATED). tests/unit/runtime/test_tls_reader.py checks
 * these glibc offsets against ld.so's DWARF. */
static __always_inline int gs_tls_block(__u64 *out, struct proc_module_tls_value *tls,
                                        __u8 *status, __u64 *failed_at)
{
    __u64 tp = 0, dtv = 0, length = 0, block = 0;
    *out = 0;
    *failed_at = 0;
    if (!tls) {
        *status = GS_STATUS_TLS_UNAVAILABLE;
        return 1;
    }
    void *task = (void *)bpf_get_current_task();
    if (bpf_probe_read_kernel(&tp, sizeof(tp), (__u8 *)task + GS_TASK_FSBASE_OFFSET) || !tp) {
        *status = GS_STATUS_TLS_NOT_ALLOCATED;      /* no thread pointer yet */
        return 1;
    }
    if (tls->block_offset > 0) {
        *out = tp - (__u64)tls->block_offset;
        return 0;
    }
    if (gs_load(&dtv, tp + 8, 8, 0, status, failed_at) ||
        gs_load(&length, dtv - 16, 8, 0, status, failed_at))
        return 1;
    if (tls->modid == 0 || tls->modid > length) {
        *status = GS_STATUS_TLS_NOT_ALLOCATED;
        *failed_at = 0;
        return 1;
    }
    if (gs_load(&block, dtv + 16 * tls->modid, 8, 0, status, failed_at))
        return 1;
    if (block == 0 || block == (__u64)-1) {
        *status = GS_STATUS_TLS_NOT_ALLOCATED;
        *failed_at = 0;
        return 1;
    }
    *out = block;
    return 0;
}
#endif

/* Signed division without the BPF sdiv instruction (older -mcpu targets);
 * truncates toward zero as C does. The divisor is known non-zero. The
 * magnitudes are negated as unsigned numbers: -LLONG_MIN is undefined in
 * C, and LLONG_MIN / -1 must wrap to LLONG_MIN (README "Arithmetic"). */
static __always_inline __u64 gs_sdiv(__u64 a, __u64 b)
{
    int a_negative = (__s64)a < 0, b_negative = (__s64)b < 0;
    __u64 q = (a_negative ? -a : a) / (b_negative ? -b : b);
    return a_negative != b_negative ? -q : q;
}

static __always_inline __u64 gs_smod(__u64 a, __u64 b)
{
    return a - gs_sdiv(a, b) * b;
}

/* The byte count of a comparison whose length the script computes
 * (memcmp, strncmp): negative is 0, as GhostScope clamps it; above `clamp`
 * (>= 0: strncmp's literal length) it is `clamp`; above `limit`, the bytes
 * the probe can compare, it fails (-1, status LENGTH_OVER_LIMIT, address
 * field limit << 32 | length): "equal" is never said of bytes not compared. */
static __always_inline long gs_compare_length(__s64 n, __s64 clamp, __u32 limit,
                                              __u8 *status, __u64 *failed_at)
{
    if (n < 0)
        n = 0;
    if (clamp >= 0 && n > clamp)
        n = clamp;
    if (n > limit) {
        *status = GS_STATUS_LENGTH_OVER_LIMIT;
        *failed_at = ((__u64)limit << 32) | (n > 0xffffffffLL ? 0xffffffffULL : (__u64)n);
        return -1;
    }
    return n;
}

/* memcmp of two target buffers over n <= GS_COMPARE_CAP bytes (checked
 * by gs_compare_length): 1 equal, 0 different, -1 read failure
 * (status/address set). */
static __always_inline long gs_memory_equal(__u8 *work, __u64 a, __u64 b, __s64 n,
                                            __u8 *status, __u64 *failed_at)
{
    if (n <= 0)
        return 1;
    __u32 len = n > GS_COMPARE_CAP ? GS_COMPARE_CAP : (__u32)n;
    if (gs_read_user_helper(work, len, (const void *)a)) {
        *status = a ? GS_STATUS_READ_ERROR : GS_STATUS_NULL_DEREF;
        *failed_at = a;
        return -1;
    }
    if (gs_read_user_helper(work + GS_COMPARE_CAP, len, (const void *)b)) {
        *status = b ? GS_STATUS_READ_ERROR : GS_STATUS_NULL_DEREF;
        *failed_at = b;
        return -1;
    }
    __u8 diff = 0;
    /* Every index is a constant the verifier sees in bounds, whatever it
     * knows of len (clang may otherwise count the loop down from len). */
    for (int i = 0; i < GS_COMPARE_CAP; i++)
        diff |= i < len ? work[i] ^ work[GS_COMPARE_CAP + i] : 0;
    return diff == 0;
}

#endif /* GS_PRELUDE_H */
