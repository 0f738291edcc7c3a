"""The plan: everything the emitter needs to write C and the renderer needs
to decode events, for every probe of one script on one target.

Produced by plan/build.py from the AST and DWARF facts; consumed by emit/
(C text), runtime/ (attach points, maps to fill) and render/ (decoding).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.dwarf.types import CType
from gs_cgen.script.ast import FormatKind
from gs_cgen.source import SourceSpan


def module_cookie(path: str, build_id: str | None) -> int:
    """A stable 63-bit id for a module, shared by generated C (constants) and
    runtime (map keys). Build-id first so the same file under two paths in a
    container and on the host gets one cookie."""
    digest = hashlib.blake2b((build_id or path).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class ProbeSite:
    """Where one trace block's uprobe goes."""

    probe_id: int
    pattern_text: str
    module_path: str
    address: int              # module virtual address (DWARF PC)
    file_offset: int          # what the uprobe is attached at
    function: str | None
    source_file: str | None
    source_line: int | None


# ------------------------------------------------------------ value sources

@dataclass(frozen=True)
class RegisterSource:
    """value = pt_regs register + offset (DW_OP_regN / bregN+stack_value)."""

    register: str             # struct pt_regs field: "di", "bp", ...
    offset: int = 0


@dataclass(frozen=True)
class StackMemorySource:
    """value is in memory at register + offset (a frame slot)."""

    register: str
    offset: int


@dataclass(frozen=True)
class GlobalMemorySource:
    """value is in memory at link-time `address` + the module's run-time
    offset for `section`, looked up in proc_module_offsets."""

    module_cookie: int
    section: str              # "text" | "rodata" | "data" | "bss"
    address: int


@dataclass(frozen=True)
class ConstantSource:
    value: int


class SpecialKind(Enum):
    PID = "pid"
    TID = "tid"
    HOST_PID = "host_pid"
    INPUT_PID = "input_pid"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True)
class SpecialSource:
    """A `$name` special variable; pid/tid/timestamp come from the event header."""

    kind: SpecialKind


@dataclass(frozen=True)
class UnavailableSource:
    """Nothing to read: renders as `<OPTIMIZED_OUT>` or an error."""

    reason: str
    optimized_out: bool = True


ValueSource = (RegisterSource | StackMemorySource | GlobalMemorySource
               | ConstantSource | SpecialSource | UnavailableSource)


@dataclass(frozen=True)
class ValueSlot:
    """One value in the event body: a status byte at `offset`, then `size`
    data bytes at `data_offset` (both from the start of the event)."""

    index: int
    offset: int
    data_offset: int
    size: int
    source: ValueSource
    ctype: CType | None       # None for special variables (u64)
    expr_text: str
    span: SourceSpan

    @property
    def reads_memory(self) -> bool:
        return isinstance(self.source, (StackMemorySource, GlobalMemorySource))


# ---------------------------------------------------------- render recipe

@dataclass(frozen=True)
class SlotRef:
    """A placeholder of a format string bound to a value slot."""

    slot: int
    kind: FormatKind


@dataclass(frozen=True)
class FormatLine:
    """`print "fmt", args;`: literal text and slot references."""

    pieces: tuple[str | SlotRef, ...]


@dataclass(frozen=True)
class ExprLine:
    """`print expr;`: `expr = VALUE`."""

    text: str
    slot: int


RenderLine = FormatLine | ExprLine


@dataclass(frozen=True)
class ProbePlan:
    site: ProbeSite
    slots: tuple[ValueSlot, ...]
    lines: tuple[RenderLine, ...]
    event_size: int


@dataclass(frozen=True)
class PidNamespace:
    """How the probe derives the PID used as map key and as `$pid`.
    `use_ns_helper` when the tracer is not in the initial PID namespace."""

    use_ns_helper: bool
    dev: int = 0
    ino: int = 0


class EventTransport(Enum):
    RINGBUF = "ringbuf"
    PERF = "perf"


@dataclass(frozen=True)
class ModuleRef:
    """A module whose globals a probe reads: runtime fills its offsets."""

    path: str
    cookie: int
    segments: tuple[LoadSegment, ...]


@dataclass(frozen=True)
class Plan:
    probes: tuple[ProbePlan, ...]
    modules: tuple[ModuleRef, ...]
    pid_namespace: PidNamespace
    transport: EventTransport
    input_pid: int | None
    script_name: str
