/* gs_prelude.h — fixed helpers for gs-cgen's generated probes. Hand-written;
 * no map access here (BCC rewrites map calls only in the main file). */
#ifndef GS_PRELUDE_H
#define GS_PRELUDE_H

/* Status byte of the value whose slot starts at `slot`. */
#define GS_STATUS(ev, slot) ((ev)[(slot)])

/* A value computed in the probe (register, constant, special). Little
 * endian: copying the low `size` bytes of a u64 gives the narrow value. */
#define GS_STORE(ev, slot, data, size, value)          \
    do {                                                \
        __u64 gs_v_ = (__u64)(value);                   \
        GS_STATUS(ev, slot) = GS_STATUS_OK;             \
        __builtin_memcpy((ev) + (data), &gs_v_, size);  \
    } while (0)

/* Mark a value as unavailable; its data stays zero, so a failed value can
 * never be mistaken for a number. */
#define GS_FAIL(ev, slot, data, size, status)           \
    do {                                                \
        GS_STATUS(ev, slot) = (status);                 \
        __builtin_memset((ev) + (data), 0, size);       \
    } while (0)

/* Read `size` bytes of target memory at `addr` into the slot. The address
 * is kept beside the status so a failure can name it. bpf_probe_read_user
 * zeroes the destination when it fails. */
static __always_inline void gs_read_user(__u8 *ev, __u32 slot, __u32 data,
                                         __u32 size, __u64 addr)
{
    *(__u64 *)(ev + slot + 8) = addr;
    if (addr == 0) {
        GS_STATUS(ev, slot) = GS_STATUS_NULL_DEREF;
        return;
    }
    long err = bpf_probe_read_user(ev + data, size, (const void *)addr);
    GS_STATUS(ev, slot) = err ? GS_STATUS_READ_ERROR : GS_STATUS_OK;
}

#endif /* GS_PRELUDE_H */
