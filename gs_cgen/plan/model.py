"""The plan: everything the emitter needs to write C and the renderer needs
to decode events, for every probe of one script on one target.

Produced by plan/build.py from the AST and DWARF facts; consumed by emit/
(C text), runtime/ (attach points, maps to fill) and render/ (decoding).
"""
from __future__ import annotations

from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING

from gs_cgen.digest import blake2b
from gs_cgen.dwarf.model import LoadSegment, TlsSegment
from gs_cgen.dwarf.types import CType
from gs_cgen.lazydataclass import dataclass
from gs_cgen.script.ast import FormatKind
from gs_cgen.source import SourceSpan

if TYPE_CHECKING:       # the IR is imported where plans are built, not for `info`
    from gs_cgen.plan.ir import Scalar


def module_cookie(path: str, build_id: str | None) -> int:
    """A stable 63-bit id for a module, shared by generated C (constants) and
    runtime (map keys). Build-id first so the same file under two paths in a
    container and on the host gets one cookie."""
    digest = blake2b((build_id or path).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class ProbeSite:
    """Where one trace block's uprobe goes."""

    probe_id: int
    pattern_text: str
    module_path: str          # the target's view of the module (ModuleFile.display_path)
    address: int              # module virtual address (DWARF PC)
    file_offset: int          # what the uprobe is attached at
    function: str | None
    source_file: str | None
    source_line: int | None
    module_cookie: int = 0
    function_note: str | None = None   # "IFUNC, chosen by this process"
    no_variables: str | None = None    # why no DWARF variables are visible here (assembly)
    open_path: str = ""       # where the uprobe is attached; '' = module_path
    # The DIE of the function copy whose frame the probe sees, as gdb's
    # `break FUNC` (FunctionSite.frame_die); None: the innermost frame.
    frame_die: int | None = None
    # How the kernel runs the probed instruction: "emulated" or
    # "single-stepped" (elf/uprobe_insn.py); '' when not known.
    handling: str = ""
    # A function probe: the function's first instruction, when the
    # post-prologue `address` is past it (plan/sites.py place_probe).
    function_entry: int | None = None
    # Why the probe is not where gdb's `break` would stop, if it is not.
    placement_note: str | None = None
    # A return probe (`FUNC:return`): a uretprobe at the function's entry
    # `address`, run when the call returns; its paired entry probe is
    # ProbePlan.entry.
    at_return: bool = False
    # The trace block's (a refusal of its program names it).
    span: SourceSpan | None = None

    @property
    def attach_path(self) -> str:
        return self.open_path or self.module_path

    @property
    def function_text(self) -> str:
        """The function as --dry-run and `info` show it: its DWARF name
        and how it was chosen, e.g. `__strlen_avx2 (IFUNC, chosen by this
        process; assembly, no DWARF variables)`."""
        notes = [n for n in (self.function_note,
                             "assembly, no DWARF variables" if self.no_variables else None) if n]
        return (self.function or "?") + (f" ({'; '.join(notes)})" if notes else "")


# ------------------------------------------------------------- GNU IFUNCs
# Which implementation an IFUNC runs is read out of a process (runtime/);
# the plan says where to look and gets back an address.

@dataclass(frozen=True)
class GotSlot:
    """A GOT entry (link-time address `vaddr` in the module at `module_path`,
    the path the tracer opens it by) that holds a function's run-time
    address once ld.so has relocated it."""

    module_path: str
    segments: tuple[LoadSegment, ...]
    vaddr: int
    # True: filled with this very resolver's result (R_X86_64_IRELATIVE);
    # False: bound to the symbol's name, which may be another version.
    exact: bool


@dataclass(frozen=True)
class IfuncLookup:
    """Where to read which implementation of IFUNC `name` a process runs:
    `slots` in order. A value read counts when it is code of the defining
    module and, from a slot that is not `exact`, one of `implementations`
    (when those are known)."""

    name: str
    module_path: str
    segments: tuple[LoadSegment, ...]
    slots: tuple[GotSlot, ...]
    implementations: tuple[int, ...]


@dataclass(frozen=True)
class IfuncChoice:
    address: int          # the implementation, as a link-time address of the module
    chosen_by: str        # "this process", "gs-cgen's own process (...)"


# ----------------------------------------------------------- value captures
# What the probe stores in a value slot. Slot layout (plan/build.py):
# status byte, u32 length at +4, u64 failing/base address at +8, data at +16.

@dataclass(frozen=True)
class ScalarCapture:
    """A 64-bit value computed in the probe (register, arithmetic, pointer)."""

    value: Scalar
    ctype: CType
    raw: bool = False         # `raw(x)`: the DWARF layout, no std printer (gdb's print/r)


@dataclass(frozen=True)
class MemoryCapture:
    """`size` bytes of an object in target memory (size < type size when capped)."""

    address: Scalar
    ctype: CType
    size: int
    raw: bool = False         # `raw(x)`: the DWARF layout, no std printer (gdb's print/r)


@dataclass(frozen=True)
class StringCapture:
    """A C string read through `pointer` with bpf_probe_read_user_str."""

    pointer: Scalar
    ctype: CType
    cap: int


@dataclass(frozen=True)
class DumpCapture:
    """A memory dump ({:x.N}/{:s.N}): `length` bytes (clamped to `cap`)."""

    address: Scalar
    length: Scalar
    cap: int
    ctype: CType | None = None        # the dumped argument's type, for JSON


@dataclass(frozen=True)
class VariableArrayCapture:
    """A C99 variable-length array printed whole: `length` bytes computed in
    the probe from the array's DWARF bound (clamped to `cap`, as a dump), then
    shown as that many elements of `ctype`."""

    address: Scalar
    length: Scalar
    cap: int
    ctype: CType


class Walk(Enum):
    NONE = "none"
    CHAIN = "chain"
    TREE = "tree"


TREE_STACK = 64                  # a tree walk's depth bound (a red-black tree of 2^32 nodes)


@dataclass(frozen=True)
class FollowRead:
    """One pointer chase of a DeepCapture (plan/follows.py). For every
    element of its source (the root object when `source` is None, else
    each element that follow `source` read), a pointer and a length found
    at byte offsets of that element choose the bytes to read into a
    sub-slot of this follow: slot header layout (status, u32 requested
    length, u64 address), then `cap` data bytes."""

    source: int | None
    source_elements: int          # elements per rep of the source (root: 1)
    element_size: int             # the source's element stride (root: 0)
    pointer_offset: int           # in the source element
    pointer_add: int              # bytes added to the pointer (RcInner's value)
    length_offset: int | None     # u64 element count in the source element
    scale: int                    # bytes per counted element
    fixed: int                    # bytes to read when length_offset is None
    cap: int                      # data bytes per rep (a multiple of 8)
    offset: int                   # rep 0's header, from the slot's data start
    reps: int                     # source reps * source_elements
    length_add: int = 0           # added to the count (hashbrown's bucket_mask + 1)
    # Read the bytes that end at the pointer (hashbrown's buckets lie below
    # its control bytes), the last `cap` of them when there are more.
    backwards: bool = False
    # length_offset holds a pointer one past the data (std::vector's
    # _M_finish): the bytes read are end - pointer + length_add.
    length_end: bool = False
    # A walk over linked nodes, `links` of them per source element, each
    # `fixed` bytes in a sub-slot of its own (the first sub-slot a walk did
    # not reach is GS_STATUS_UNAVAILABLE: nothing after it is read or
    # decoded): CHAIN follows the pointer at
    # `next_offset` of each node until null or, with `end_offset`, the
    # source element's address + end_offset (std::list's header); TREE
    # reads a binary tree from its root in pre-order, left child at
    # `next_offset`, right at `right_offset` (render/ puts the nodes in
    # key order), keeping its stack in `scratch` bytes after the sub-slots.
    walk: Walk = Walk.NONE
    links: int = 1
    next_offset: int = 0
    right_offset: int = 0
    end_offset: int | None = None
    scratch: int = 0
    tag: int = 0                  # which std::variant alternative holds it (render/ only)

    @property
    def stride(self) -> int:
        return 16 + self.cap

    @property
    def size(self) -> int:
        """Bytes of the slot it takes: its sub-slots and its scratch."""
        return self.reps * self.stride + self.scratch


@dataclass(frozen=True)
class DeepCapture:
    """An object whose value lives partly behind its pointers (a Rust
    String, Vec, Box, Rc...): `root_size` bytes of the object at
    `address`, then each follow in order (a follow reads from the bytes
    of earlier ones). Read in the probe: the target's memory changes
    after it returns."""

    address: Scalar
    ctype: CType
    root_size: int
    follows: tuple[FollowRead, ...]
    size: int
    from_value: bool = False      # `address` is the root's value itself (a Box in a register)
    max_elements: int = 200       # of each collection shown (--max-elements)

    @property
    def follows_offset(self) -> int:
        """Where the follows' sub-slots start in the slot's data."""
        return (self.root_size + 7) & ~7


@dataclass(frozen=True)
class NoCapture:
    """Nothing to read: renders `<OPTIMIZED_OUT>` or `<error: reason>`."""

    ctype: CType | None
    reason: str
    optimized_out: bool


@dataclass(frozen=True)
class CompositePiece:
    """`size` bytes at byte `offset` of a composite: read from target memory
    at `address`, or the low bytes of `value` computed in the probe."""

    offset: int
    size: int
    address: Scalar | None = None
    value: Scalar | None = None


@dataclass(frozen=True)
class CompositeCapture:
    """An object split over registers, memory and constants (DW_OP_piece),
    assembled in the slot piece by piece."""

    pieces: tuple[CompositePiece, ...]
    ctype: CType
    size: int
    gaps: tuple[tuple[int, int], ...] = ()     # [start, end) bytes optimized out
    raw: bool = False         # `raw(x)`: the DWARF layout, no std printer (gdb's print/r)


@dataclass(frozen=True)
class KnownBytesCapture:
    """An object whose bytes are known at plan time: nothing to read."""

    data: bytes
    ctype: CType
    raw: bool = False         # `raw(x)`: the DWARF layout, no std printer (gdb's print/r)


@dataclass(frozen=True)
class ConditionCapture:
    """The error slot of an `if` condition (status and failing address only)."""

    condition: Scalar


@dataclass(frozen=True)
class BacktraceShow:
    """What a `bt` shows of each frame (script/ast.py Backtrace's modes)."""

    raw: bool = False           # addresses instead of functions and lines
    inlined: bool = True        # inlined calls as their own frames
    parameters: bool = False    # each frame's parameters (`full`)


@dataclass(frozen=True)
class PendingReturnsLayout:
    """How a `bt` probe walks the kernel's list of the thread's armed
    uretprobes (gs_abi.h gs_pending_returns): offsets of task_struct.utask,
    uprobe_task.return_instances and return_instance's stack,
    orig_ret_vaddr and next, from the running kernel's BTF (runtime/btf.py);
    None, with `unknown_reason`, when not read: then a frame whose return
    the kernel redirected ends the backtrace."""

    utask: int | None = None
    return_instances: int | None = None
    stack: int | None = None
    orig_ret_vaddr: int | None = None
    next: int | None = None
    unknown_reason: str = "the kernel's uprobe_task layout was not read"

    @property
    def known(self) -> bool:
        return None not in (self.utask, self.return_instances, self.stack,
                            self.orig_ret_vaddr, self.next)


@dataclass(frozen=True)
class BacktraceCapture:
    """`bt`: the registers and up to `stack_bytes` of the user stack from
    sp (gs_abi.h gs_backtrace_regs), unwound in Python to at most
    `max_frames` frames (--backtrace-depth); `frame_die`: the probe's
    frame (ProbeSite.frame_die), for the innermost frame's inline rule."""

    max_frames: int
    stack_bytes: int
    show: BacktraceShow = BacktraceShow()
    frame_die: int | None = None
    # The probe's own module and address (an entry probe's): its frames are
    # named even when the process has exited before its maps were read,
    # with the bias regs->ip - probe_address, as the probe itself does.
    probe_module: "ModuleFile | None" = None
    probe_address: int = 0
    pending_returns: PendingReturnsLayout = PendingReturnsLayout()


@dataclass(frozen=True)
class EntryCapture:
    """`$entry(expr)` printed whole in a return block: the value slot the
    paired entry probe filled (`original` says how, for decoding) is
    copied, header and data, from the call's entry record at
    `record_offset` (plan/retprobe.py)."""

    original: "Capture"
    record_offset: int

    @property
    def ctype(self) -> CType | None:
        return getattr(self.original, "ctype", None)


Capture = (ScalarCapture | MemoryCapture | DeepCapture | StringCapture | DumpCapture
           | VariableArrayCapture
           | NoCapture | CompositeCapture | KnownBytesCapture | ConditionCapture | BacktraceCapture
           | EntryCapture)


def capture_scalars(capture: Capture) -> tuple[Scalar, ...]:
    """The scalar expressions a capture evaluates."""
    match capture:
        case ScalarCapture(value=v) | ConditionCapture(condition=v):
            return (v,)
        case MemoryCapture(address=a) | DeepCapture(address=a):
            return (a,)
        case DumpCapture(address=a, length=n) | VariableArrayCapture(address=a, length=n):
            return (a, n)
        case StringCapture(pointer=p):
            return (p,)
        case CompositeCapture(pieces=pieces):
            return tuple(x for piece in pieces for x in (piece.address, piece.value)
                         if x is not None)
    return ()


@dataclass(frozen=True)
class ValueSlot:
    """One value in the event body: header at `offset`, `size` data bytes at
    `data_offset` (both from the start of the event)."""

    index: int
    offset: int
    data_offset: int
    size: int
    capture: Capture
    expr_text: str
    span: SourceSpan
    # why the probe may find the value unavailable (GS_STATUS_UNAVAILABLE):
    # the reason of the first operand that cannot be computed at this PC
    unavailable_reason: str | None = None

    @property
    def ctype(self) -> CType | None:
        return getattr(self.capture, "ctype", None)


# ---------------------------------------------------------- render recipe

@dataclass(frozen=True)
class SlotRef:
    """A placeholder of a format string bound to a value slot."""

    slot: int
    kind: FormatKind


@dataclass(frozen=True)
class ScriptString:
    """A script string variable printed with `print name;`: known when the
    script is compiled, rendered as a quoted string like a C string."""

    value: bytes


@dataclass(frozen=True)
class DumpRef:
    """A memory-dump placeholder: `style` is "x" or "s"."""

    slot: int
    style: str


@dataclass(frozen=True)
class FormatLine:
    """`print "fmt", args;`: literal text and slot references."""

    pieces: tuple[str | SlotRef | DumpRef | ScriptString, ...]
    bit: int


@dataclass(frozen=True)
class ExprLine:
    """`print expr;`: `expr = VALUE`."""

    text: str
    slot: int
    bit: int


@dataclass(frozen=True)
class ExprErrorLine:
    """`ExprError: <expr> (<reason> at 0xADDR)` when a condition failed;
    `optimized_out`: the operands of the condition that are optimized out
    at this PC (known at plan time), named in the reason."""

    text: str
    slot: int
    bit: int
    optimized_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class BacktraceLine:
    """`bt`: a status line, then one line per frame."""

    slot: int
    bit: int


RenderLine = FormatLine | ExprLine | ExprErrorLine | BacktraceLine


# ------------------------------------------------------------ probe steps

@dataclass(frozen=True)
class PrintStep:
    """Fill `slots` and mark line `bit` as printed."""

    bit: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class IfStep:
    """`if`: on a failed condition, record `error_slot`/`error_bit` and run
    `otherwise` only when it is an `else if` chain (soft abort)."""

    error_slot: int
    error_bit: int
    then: tuple["Step", ...]
    otherwise: tuple["Step", ...]
    else_is_chain: bool


class AggregationKeyKind(Enum):
    SCALAR = "scalar"     # integer, enum, bool, pointer: 8 bytes
    STRING = "string"     # a C string, read with bpf_probe_read_user_str


@dataclass(frozen=True)
class AggregationKey:
    """One `by` value of an aggregation's key, at byte `offset` of the key
    (after its gs_agg_key_head), `size` bytes; `ctype` renders it. `label`
    names it in --metrics: its `as LABEL`, else its text made a label name."""

    text: str
    kind: AggregationKeyKind
    ctype: CType | None
    type_text: str
    offset: int
    size: int
    label: str = ""


@dataclass(frozen=True)
class AggregationPlan:
    """One aggregation of the script, shared by every probe that names it:
    its map `index`, what it keeps (`kind`: "count", "sum" or "hist"),
    its key layout and, for sum/hist, the value's type."""

    index: int
    name: str
    kind: str
    keys: tuple[AggregationKey, ...]
    key_size: int
    value_type: str | None = None
    value_signed: bool = False
    span: SourceSpan | None = None


@dataclass(frozen=True)
class AggregateStep:
    """Update `aggregation` with this probe's `keys` (a value, or a C
    string's address, per AggregationPlan key) and `value`."""

    aggregation: AggregationPlan
    keys: tuple["Scalar", ...]
    value: "Scalar | None"
    text: str


Step = PrintStep | IfStep | AggregateStep


def aggregate_steps(steps) -> list[AggregateStep]:
    """Every aggregation update of `steps`, inside `if`s too, in order."""
    found: list[AggregateStep] = []
    for step in steps:
        if isinstance(step, AggregateStep):
            found.append(step)
        elif isinstance(step, IfStep):
            found.extend(aggregate_steps(step.then + step.otherwise))
    return found


def aggregate_scalars(step: AggregateStep) -> tuple["Scalar", ...]:
    return step.keys + ((step.value,) if step.value is not None else ())


@dataclass(frozen=True)
class ProbePlan:
    site: ProbeSite
    slots: tuple[ValueSlot, ...]
    lines: tuple[RenderLine, ...]
    steps: tuple[Step, ...]
    bitmap_offset: int
    bitmap_words: int
    event_size: int
    # A return probe's paired entry probe: at the function's first
    # instruction, it fills an event-shaped entry record (timestamp, key,
    # $entry values) that the return probe finds by thread and frame
    # (plan/retprobe.py)...
    entry: "ProbePlan | None" = None
    # ... and when the values of `$entry(expr)` are read further in (after
    # an -O0 prologue), the probe there that fills them into the record.
    entry_capture: "ProbePlan | None" = None
    # Said once at compile time, on stderr: e.g. `print $locals;` bounded
    # to fit the event (plan/variables.py).
    notes: tuple[str, ...] = ()

    def scalar_nodes(self):
        """Every IR node any capture of this probe evaluates."""
        from gs_cgen.plan.ir import walk  # noqa: PLC0415
        aggregated = (v for step in aggregate_steps(self.steps) for v in aggregate_scalars(step))
        return walk([*(v for slot in self.slots for v in capture_scalars(slot.capture)),
                     *aggregated])

    @cached_property
    def slot_line_masks(self) -> tuple[int, ...]:
        """Per slot, the executed-lines bits of the lines that use it."""
        masks = [0] * len(self.slots)
        for line in self.lines:
            used = [p.slot for p in line.pieces if hasattr(p, "slot")] \
                if isinstance(line, FormatLine) else [line.slot]
            for index in used:
                masks[index] |= 1 << line.bit
        return tuple(masks)


@dataclass(frozen=True)
class PidNamespace:
    """How the probe derives PIDs. Map keys use the tracer's view of /proc:
    `use_ns_helper` (with the tracer's pidns `dev`/`ino`) when the tracer is
    not in the initial PID namespace. `$pid`/`$tid` use the target's view:
    `target_dev`/`target_ino` when -p named a process in another namespace."""

    use_ns_helper: bool
    dev: int = 0
    ino: int = 0
    target_dev: int = 0
    target_ino: int = 0


@dataclass(frozen=True)
class ThreadPointer:
    """Where a probe finds the thread pointer of the thread it runs in (the
    x86-64 FS base, which TLS variant II addresses are relative to): the
    kernel's `task_struct.thread.fsbase`, `fsbase_offset` bytes into the
    current task_struct, from the running kernel's BTF (runtime/btf.py).
    None, with `unknown_reason`, when that could not be read: thread-local
    values are then unavailable with that reason."""

    fsbase_offset: int | None
    unknown_reason: str = ""


THREAD_POINTER_NOT_READ = ThreadPointer(None, "the kernel's task_struct layout was not read")



class EventTransport(Enum):
    RINGBUF = "ringbuf"
    PERF = "perf"


@dataclass(frozen=True)
class ModuleFile:
    """One module file under its two names (DESIGN.md "Module files across
    namespaces"). `display_path` is the target's own view of it, as
    /proc/PID/maps says (messages, --dry-run, info, backtraces);
    `open_path` is where the tracer reads it and attaches uprobes (the kernel
    resolves either to the same inode): the path itself, /proc/PID/root/PATH
    or /proc/PID/map_files/START-END. `dev` and `inode` identify it in maps
    lines (0 when unknown: matches none). `root` stands for the target's `/`
    when it is not the tracer's ('' when it is): separate debug files are
    looked for under it."""

    display_path: str
    open_path: str
    dev: int = 0
    inode: int = 0
    root: str = ""


@dataclass(frozen=True)
class ModuleRef:
    """A module whose globals a probe reads: runtime fills its offsets for
    every process that maps `file` (by device and inode)."""

    file: ModuleFile
    cookie: int
    segments: tuple[LoadSegment, ...]
    # A module whose thread-local variables a probe reads: its PT_TLS and
    # PT_DYNAMIC address (how runtime/tls.py finds it in ld.so's link_map).
    tls: TlsSegment | None = None
    dynamic_vaddr: int | None = None

    @property
    def path(self) -> str:
        return self.file.display_path


@dataclass(frozen=True)
class Plan:
    probes: tuple[ProbePlan, ...]
    modules: tuple[ModuleRef, ...]
    pid_namespace: PidNamespace
    transport: EventTransport
    input_pid: int | None
    script_name: str
    watch_exec: bool = False      # -t: notify the tracer of every exec
    task_fsbase_offset: int | None = None   # set when a probe reads TLS (ThreadPointer)
    aggregations: tuple[AggregationPlan, ...] = ()
    # Sites whose code is the same may run one BPF program, each telling
    # itself apart by its attach cookie (its probe id): emit/program.py.
    shared_programs: bool = False
