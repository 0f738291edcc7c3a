"""The probe's expression IR: 64-bit scalar computations and the places
(objects in memory or registers) that script expressions denote.

Every node is a frozen dataclass. The emitter turns scalars into C with
failure propagation: a Load or ModuleAddress that fails sets the value's
status and the failing address, never a plausible number.
"""
from __future__ import annotations

from collections.abc import Iterator

from gs_cgen.dwarf.types import CType
from gs_cgen.lazydataclass import dataclass


# ------------------------------------------------------------------ scalars

@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class RegisterValue:
    """A struct pt_regs field ("di", "bp", ...)."""

    register: str


@dataclass(frozen=True)
class HeaderField:
    """A field of the event header: pid, tid, host_pid, timestamp_ns."""

    field: str


@dataclass(frozen=True)
class ModuleAddress:
    """Link-time `address` + the module's run-time offset for `section`;
    fails with OffsetsUnavailable when the map has no entry."""

    cookie: int
    section: str
    address: int


@dataclass(frozen=True)
class ThreadLocalBase:
    """The start of the module's TLS block for the thread running the
    probe: thread pointer - the module's static TLS offset, or the block
    the thread's DTV points at (gs_abi.h proc_module_tls_value); fails with
    TlsUnavailable when the tracer has not read the module's TLS offset in
    this process, TlsNotAllocated when the thread has no such block."""

    cookie: int


@dataclass(frozen=True)
class Load:
    """`size` bytes at `address`, zero- or sign-extended to 64 bits."""

    address: "Scalar"
    size: int
    signed: bool


@dataclass(frozen=True)
class BinaryOp:
    """C operator on 64-bit operands; `signed` picks signed /, %, >>, and
    ordered comparisons."""

    op: str
    left: "Scalar"
    right: "Scalar"
    signed: bool


@dataclass(frozen=True)
class UnaryOp:
    op: str                   # "-", "~", "!"
    operand: "Scalar"


@dataclass(frozen=True)
class Convert:
    """C conversion of a 64-bit value to an integer of `size` bytes."""

    operand: "Scalar"
    size: int
    signed: bool


@dataclass(frozen=True)
class Logical:
    """Short-circuit `&&` / `||`: `right` is evaluated only when needed."""

    op: str
    left: "Scalar"
    right: "Scalar"


@dataclass(frozen=True)
class BitField:
    """Extract `bit_size` bits at `bit_offset` (LSB first) of `storage`."""

    storage: "Scalar"
    bit_offset: int
    bit_size: int
    signed: bool


@dataclass(frozen=True)
class BytesEqual:
    """True when target memory at `address` equals `expected`.
    mode "prefix": the first len(expected) bytes (strncmp/starts_with/memcmp
    with hex), or with `length` (computed at run time) the first `length`
    of them: negative counts as 0, above `clamp` (when set) as `clamp`,
    above len(expected) the comparison fails (LENGTH_OVER_LIMIT); "cstring":
    a NUL-terminated string equal to `expected` (strict NUL:
    len(expected)+1 bytes, last one NUL)."""

    address: "Scalar"
    expected: bytes
    mode: str
    length: "Scalar | None" = None
    clamp: int | None = None


@dataclass(frozen=True)
class MemoryEqual:
    """memcmp of two target buffers over `length` bytes: negative counts
    as 0, above `cap` the comparison fails (LENGTH_OVER_LIMIT)."""

    left: "Scalar"
    right: "Scalar"
    length: "Scalar"
    cap: int


Scalar = (Const | RegisterValue | HeaderField | ModuleAddress | ThreadLocalBase | Load | BinaryOp
          | UnaryOp | Convert | Logical | BitField | BytesEqual | MemoryEqual)


# ------------------------------------------------------------------- places

@dataclass(frozen=True)
class MemoryPlace:
    """An object of `ctype` stored in target memory at `address`."""

    address: Scalar
    ctype: CType


@dataclass(frozen=True)
class ValuePlace:
    """A value without an address (register, constant, computed result)."""

    value: Scalar
    ctype: CType


@dataclass(frozen=True)
class BitFieldPlace:
    """A bitfield member: an integer, but not addressable."""

    value: Scalar
    ctype: CType


@dataclass(frozen=True)
class StringPlace:
    """A script string literal (only meaningful in comparisons/builtins)."""

    value: bytes


@dataclass(frozen=True)
class KnownBytesPlace:
    """An object whose bytes are known at plan time (a DWARF constant wider
    than 8 bytes)."""

    data: bytes
    ctype: CType


@dataclass(frozen=True)
class CompositePart:
    """`size` bytes at byte `offset` of a composite object, held by `place`
    (a MemoryPlace or a ValuePlace whose low bytes they are); None when this
    part is optimized out."""

    offset: int
    size: int
    place: "MemoryPlace | ValuePlace | None"


@dataclass(frozen=True)
class CompositePlace:
    """An object split over registers, memory and constants (DW_OP_piece)."""

    parts: tuple[CompositePart, ...]
    ctype: CType


@dataclass(frozen=True)
class SyntheticPointerPlace:
    """A pointer without a value (DW_OP_implicit_pointer): only what it
    points to, `target`, can be read."""

    target: "Place"
    ctype: CType


@dataclass(frozen=True)
class UnavailablePlace:
    ctype: CType | None
    reason: str
    optimized_out: bool


Place = (MemoryPlace | ValuePlace | BitFieldPlace | StringPlace | KnownBytesPlace | CompositePlace
         | SyntheticPointerPlace | UnavailablePlace)


def scalar_children(node: Scalar) -> tuple[Scalar, ...]:
    match node:
        case BytesEqual(address=a, length=n) if n is not None:
            return (a, n)
        case Load(address=a) | BytesEqual(address=a):
            return (a,)
        case BinaryOp(left=l, right=r) | Logical(left=l, right=r):
            return (l, r)
        case UnaryOp(operand=o) | Convert(operand=o):
            return (o,)
        case BitField(storage=s):
            return (s,)
        case NonNull(pointer=p) | Below(value=p):
            return (p,)
        case CallSiteSelect(return_address=ra, cases=cases):
            return (ra, ir_register_ip(), *(value for _, value in cases))
        case MemoryEqual(left=l, right=r, length=n):
            return (l, r, n)
    return ()


def walk(roots) -> "Iterator[Scalar]":
    """Every node of the given scalar trees, each root and its descendants."""
    pending = list(roots)
    while pending:
        node = pending.pop()
        yield node
        pending.extend(scalar_children(node))


def ir_register_ip() -> RegisterValue:
    """regs->ip: the probed instruction when a uprobe handler runs."""
    return RegisterValue("ip")


def can_fail(node: Scalar) -> bool:
    """Whether evaluating `node` may read memory or miss module offsets."""
    if isinstance(node, (Load, ModuleAddress, ThreadLocalBase, BytesEqual, MemoryEqual, NonNull,
                         Below, Fail, CallSiteSelect, EntryRecordValue)):
        return True
    if isinstance(node, BinaryOp) and node.op in ("/", "%"):
        return True
    return any(can_fail(child) for child in scalar_children(node))


@dataclass(frozen=True)
class NonNull:
    """`pointer`, failing with NullDeref when it is 0 (before a dereference)."""

    pointer: "Scalar"


@dataclass(frozen=True)
class Below:
    """`value`, failing with `status` unless it is below `limit` as an
    unsigned 64-bit number (a shift count: C leaves counts outside
    [0, width) undefined)."""

    value: "Scalar"
    limit: int
    status: str               # a GS_STATUS_* name from gs_abi.h


@dataclass(frozen=True)
class Fail:
    """A value that cannot be computed (optimized out, unsupported
    location): evaluating it fails with `status` and `reason`."""

    status: str               # a GS_STATUS_* name from gs_abi.h
    reason: str
    operand: str = ""         # the source text of the value, for a condition's ExprError


@dataclass(frozen=True)
class CallSiteSelect:
    """A parameter's entry value chosen by where the probed function will
    return: the return address (read at `return_address`) minus the
    module's load bias (regs->ip - `probe_address`) names the call site."""

    return_address: "Scalar"
    probe_address: int
    cases: tuple[tuple[int, "Scalar"], ...]


@dataclass(frozen=True)
class EntryRecordValue:
    """In a return probe: 8 bytes at `data_offset` of the call's entry
    record (plan/retprobe.py); with `status_offset`, a value slot that
    fails with the status and address the entry probe recorded there."""

    data_offset: int
    status_offset: int | None = None


Scalar = Scalar | NonNull | Below | Fail | CallSiteSelect | EntryRecordValue
