/* gs_abi.h — every struct and constant shared by gs-cgen's generated BPF C
 * and its Python side. Python reads this file with pycparser (gs_cgen/abi.py)
 * and derives layouts from it; never restate an offset elsewhere.
 * Only fixed-width kernel types (__u8 ... __u64) are used so both the BPF
 * compiler and pycparser see the same layout. */
#ifndef GS_ABI_H
#define GS_ABI_H

/* Value status codes: one byte before every value in an event. */
enum gs_value_status {
    GS_STATUS_OK = 0,
    GS_STATUS_NULL_DEREF = 1,
    GS_STATUS_READ_ERROR = 2,
    GS_STATUS_ACCESS_ERROR = 3,
    GS_STATUS_TRUNCATED = 4,
    GS_STATUS_OFFSETS_UNAVAILABLE = 5,
    GS_STATUS_ZERO_LENGTH = 6,
    GS_STATUS_OPTIMIZED_OUT = 7,
    GS_STATUS_DIV_BY_ZERO = 8,
    GS_STATUS_UNAVAILABLE = 9,
    GS_STATUS_TLS_UNAVAILABLE = 10,     /* no proc_module_tls entry (yet) */
    GS_STATUS_TLS_NOT_ALLOCATED = 11,   /* the thread has no such TLS block (yet) */
    GS_STATUS_LENGTH_OVER_LIMIT = 12,   /* a builtin's run-time length beyond the bytes it
                                           can compare; address field: limit << 32 | length */
    GS_STATUS_SHIFT_RANGE = 13,         /* shift count negative or >= the promoted width */
};

/* Event kinds (gs_event_hdr.kind). */
enum gs_event_kind {
    GS_EVENT_TRACE = 1,
    GS_EVENT_OFFSETS_MISS = 2,  /* a probe found no load offsets for key_pid */
    GS_EVENT_EXEC = 3,          /* key_pid exec'd a new program (-t mode) */
};

/* Event sizes (gs_cgen/plan/limits.py says why):
 * GS_MAX_EVENT_SIZE: the largest event over the ring buffer, an eighth of
 * its GS_RINGBUF_PAGES pages (8 MiB). An event larger than the scratch, and
 * every event of a sleepable probe, is built in its own ring reservation.
 * GS_SCRATCH_SIZE: the per-CPU scratch other events are built in, as large
 * as the kernel allows a per-CPU map value (PCPU_MIN_UNIT_SIZE); it holds
 * an event of up to GS_MAX_SCRATCH_EVENT bytes and the probe's work area
 * (GS_WORK_SIZE, for string and memory comparisons) after it: the limit
 * over perf event arrays, whose events are always built there.
 * GS_PAGE_SIZE: x86_64 pages, the unit in which a sleepable probe faults a
 * string in; GS_STRING_PAGES: the pages it faults in for one string (a
 * string of up to 8 KiB spans at most 3). */
enum gs_limits {
    GS_MAX_EVENT_SIZE = 1048576,
    GS_WORK_SIZE = 512,
    GS_SCRATCH_SIZE = 32768,
    GS_MAX_SCRATCH_EVENT = 32256,
    GS_COMPARE_CAP = 64,
    GS_MAX_FRAMES = 32,
    GS_RINGBUF_PAGES = 2048,
    GS_PERF_PAGES = 512,
    GS_MAX_TRACKED_MODULES = 4096,
    GS_PAGE_SIZE = 4096,
    GS_STRING_PAGES = 3,
};

/* `bt`: the value's data is a gs_backtrace_regs, a gs_pending_returns,
 * then the user stack from sp upward (the value's length field: how many stack bytes, its address
 * field: sp). The probe copies the stack in GS_BT_CHUNK-byte reads until
 * the window is full or a read fails at the top of the stack mapping, then
 * what is left of that last page; Python unwinds the copy with DWARF CFI
 * (gs_cgen/unwind). The registers: those an x86-64 unwind starts from
 * (rip, rsp, the callee-saved ones a caller's frame can still hold), then
 * the others, which only the probed frame's `bt full` parameters use. */
struct gs_backtrace_regs {
    __u64 ip;
    __u64 sp;
    __u64 bp;
    __u64 bx;
    __u64 r12;
    __u64 r13;
    __u64 r14;
    __u64 r15;
    __u64 ax;
    __u64 dx;
    __u64 cx;
    __u64 si;
    __u64 di;
    __u64 r8;
    __u64 r9;
    __u64 r10;
    __u64 r11;
};

enum gs_backtrace_limits {
    GS_BT_CHUNK = 512,
    GS_BT_RETURNS = 16,
};

/* The calls of the thread with a uretprobe armed (anyone's, ours too): the
 * kernel has replaced each one's return address on the stack, at `slot`,
 * by its trampoline's, and keeps the real one, `address`, in the task's
 * uprobe_task.return_instances list, innermost first. The probe copies
 * the first GS_BT_RETURNS of them for the unwinder. */
struct gs_pending_returns {
    __u64 count;
    __u64 slot[GS_BT_RETURNS];
    __u64 address[GS_BT_RETURNS];
};

/* Header at offset 0 of every event. pid/tid: the target's PID-namespace
 * view ($pid/$tid); host_pid/host_tid: the initial namespace; key_pid: the
 * view in which the tracer read /proc, used for every map key. */
struct gs_event_hdr {
    __u64 timestamp_ns;
    __u32 probe_id;
    __u32 kind;
    __u32 pid;
    __u32 tid;
    __u32 host_pid;
    __u32 host_tid;
    __u32 size;
    __u32 key_pid;
};

/* Key of proc_module_offsets: one loaded module of one process. */
struct proc_module_key {
    __u32 pid;
    __u32 pad;
    __u64 module_cookie;
};

/* Load offsets (run-time address - link-time address) by section class. */
struct proc_module_offsets_value {
    __u64 text;
    __u64 rodata;
    __u64 data;
    __u64 bss;
};

/* Where a module's thread-local storage block is in one process (value
 * of proc_module_tls, same key as proc_module_offsets), from the dynamic
 * loader's struct link_map (runtime/tls.py). x86-64 TLS variant II:
 * block_offset > 0: the block is in the static TLS area, at thread pointer
 * (task_struct.thread.fsbase) - block_offset (glibc's l_tls_offset);
 * block_offset == 0: it is reached through the thread's DTV, at
 * dtv[modid].pointer.val (a module dlopen()ed after start-up). */
struct proc_module_tls_value {
    __s64 block_offset;
    __u64 modid;
};

/* Per probe (array index = probe_id), per CPU: trace events written to the
 * ring and events the ring refused. With what the tracer read, these give
 * an exact account: read + lost = sent + failed. */
struct gs_event_counts {
    __u64 sent;
    __u64 failed;
};

/* Per-CPU scratch in which a non-sleepable probe assembles its event
 * (a sleepable one builds it in reserved ring space instead). */
struct gs_scratch {
    __u8 bytes[GS_SCRATCH_SIZE];
};

/* Where a probe with several `if`s, or with a condition that compares
 * target bytes, notes its decision (emit/probe.py), the one value of map
 * GS_MAP_DECISIONS, looked up once per hit, before the conditions:
 * `lines`, the bitmap of lines to render (the first bitmap-words of the
 * probe's event bitmap), and for its k-th condition (script order, nested
 * ones too) failed_status[k] / failed_address[k], that condition's
 * ExprError when its bit is marked; `work`, the work area in which its
 * conditions compare target bytes (GS_WORK_SIZE, as the one after an
 * event). The event is taken only once the decision says it is sent, and
 * gets the bitmap and the failed conditions' slots copied in. The
 * verifier does not track map memory, so the paths through each `if`
 * meet again after it (in locals, N `if`s were 2^N paths). Per CPU in a
 * non-sleepable build (private as the event scratch is); per thread
 * (task storage) in a sleepable one, which may sleep mid-decision while
 * another thread's run of the program uses the same CPU. A probe with
 * more lines or conditions than these notes its decision in its event. */
enum gs_decision_limits {
    GS_DECISION_WORDS = 8,
    GS_DECISION_CONDITIONS = 128,
};

struct gs_decision {
    __u64 lines[GS_DECISION_WORDS];
    __u64 failed_address[GS_DECISION_CONDITIONS];
    __u8 failed_status[GS_DECISION_CONDITIONS];
    __u8 work[GS_WORK_SIZE];
};

/* Return probes (FUNC:return, gs_cgen/plan/retprobe.py): the entry probe
 * stores each call's entry record (shaped like an event: a header whose
 * timestamp is the entry time, the call's CFA, return address and entry pc,
 * then the $entry values) under the thread and the call's CFA, which is the
 * stack pointer the call returns with; the return probe looks it up by
 * (tid, sp), checks the return address, then deletes it. The records of one
 * return probe live in an LRU hash of GS_MAX_PENDING_CALLS (fewer, down to
 * GS_MIN_PENDING_CALLS, so that the preallocated records fit in
 * GS_PENDING_CALLS_BYTES): calls a longjmp
 * or a dead thread never returned from are overwritten by the next call in
 * the same frame or evicted, never paired with another call. */
enum gs_return_limits {
    GS_MAX_PENDING_CALLS = 8192,
    GS_PENDING_CALLS_BYTES = 16777216,  /* fewer calls when records are large */
    GS_MIN_PENDING_CALLS = 256,
};

struct gs_return_key {
    __u32 tid;                /* host thread id */
    __u32 pad;
    __u64 cfa;                /* the call's canonical frame address */
};

/* Aggregations (count/sum/hist): one per-CPU hash map per aggregation
 * (GS_MAP_AGG_PREFIX + its index), at most GS_AGG_MAX_KEYS keys each, as
 * bpftrace's default map size. A key is a gs_agg_key_head, then each `by`
 * value at an 8-byte-aligned offset (plan/aggregations.py lays it out):
 * an integer, enum, bool or pointer as 8 bytes, a C string as
 * GS_AGG_STRING_CAP bytes read with bpf_probe_read_user_str. A key whose
 * read failed has `status` (a gs_value_status) set and every value byte
 * zero: one <error> key per reason. Values: a __u64 count or sum, or a
 * gs_agg_hist (bpftrace's hist(): bucket 0 counts negative values, 1 the
 * zeros, 2 + k the values in [2^k, 2^(k+1)); and the values' sum, mod 2^64,
 * which a Prometheus histogram's _sum needs). An error key's value counts
 * its hits in its first word, for every kind. */
enum gs_agg_limits {
    GS_AGG_MAX_KEYS = 4096,
    GS_AGG_STRING_CAP = 64,
    GS_AGG_HIST_BUCKETS = 66,
    GS_AGG_MAX_KEY_SIZE = 264,
};

struct gs_agg_key_head {
    __u8 status;
    __u8 pad[7];
};

struct gs_agg_hist {
    __u64 buckets[GS_AGG_HIST_BUCKETS];
    __u64 sum;
};

/* Map names, as the generated C declares them and Python opens them. */
#define GS_MAP_EVENTS gs_events
#define GS_MAP_SCRATCH gs_scratch_buf
#define GS_MAP_COUNTS gs_event_counts
#define GS_MAP_OFFSETS proc_module_offsets
#define GS_MAP_PID_ALIASES pid_aliases
#define GS_MAP_OFFSETS_WANTED gs_offsets_wanted
#define GS_MAP_TLS proc_module_tls
/* Per aggregation (array index = its index), per CPU: hits whose new key
 * did not fit (the map was full), reported as dropped. */
#define GS_MAP_AGG_DROPPED gs_agg_dropped
/* All zeros: where a new hist key's first value is copied from (66 words
 * do not fit on the 512-byte BPF stack beside the key). */
#define GS_MAP_AGG_ZERO gs_agg_zero
#define GS_MAP_AGG_PREFIX gs_agg
/* struct gs_decision: per CPU, or per thread in a sleepable build. */
#define GS_MAP_DECISIONS gs_decisions

#endif /* GS_ABI_H */
