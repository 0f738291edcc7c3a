"""Event bytes + the probe's plan → typed values per slot. Pure; no BCC.

The slot layout (plan/build.py): status byte at +0, u32 length at +4, u64
address at +8, data from +16. The value trees live in render/values.py.
"""
from __future__ import annotations

import functools
import struct

from gs_cgen.abi import abi
from gs_cgen.dwarf.types import strip, type_size
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan import arith
from gs_cgen.plan.model import (BacktraceCapture, CompositeCapture, ConditionCapture, DeepCapture,
                                DumpCapture, EntryCapture, KnownBytesCapture, MemoryCapture,
                                NoCapture, ProbePlan, ScalarCapture, StringCapture, ValueSlot,
                                VariableArrayCapture)
from gs_cgen.render import values
from gs_cgen.render.cpp import decode_cpp
from gs_cgen.render.rust import decode_rust
from gs_cgen.render.status import ValueStatus, status_of


@dataclass(frozen=True)
class Dump:
    """The bytes of a memory dump placeholder ({:x.N}, {:s.N})."""

    data: bytes
    truncated: bool


@dataclass(frozen=True)
class Backtrace:
    """What a `bt` probe copied: the registers (DWARF register number ->
    value) and the stack from `stack_base` (sp); the unwinder makes frames
    of them when the event renders (gs_cgen/unwind)."""

    registers: dict[int, int]
    stack_base: int
    stack: bytes
    capture: BacktraceCapture
    # (stack slot, return address) of each call whose return a uretprobe
    # redirected (gs_abi.h gs_pending_returns), innermost first.
    pending_returns: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Event:
    probe_id: int
    pid: int
    tid: int
    host_pid: int
    host_tid: int
    timestamp_ns: int
    executed: int                 # bitmap of rendered lines that ran
    values: tuple                 # per slot: a values.Value or a Dump
    key_pid: int = 0              # the PID in the tracer's /proc view

    def ran(self, bit: int) -> bool:
        return bool(self.executed >> bit & 1)


def event_header(raw: bytes) -> dict[str, int]:
    return abi().structs["gs_event_hdr"].unpack_fast(raw)


def decode(raw: bytes, probe: ProbePlan) -> Event:
    hdr = event_header(raw)
    executed = 0
    for word in range(probe.bitmap_words):
        value = struct.unpack_from("<Q", raw, probe.bitmap_offset + 8 * word)[0]
        executed |= value << (64 * word)
    masks = probe.slot_line_masks
    # Slots of lines that did not run hold stale scratch bytes: never decode them.
    decoded = tuple(decode_slot(raw, slot) if executed & mask else None
                    for slot, mask in zip(probe.slots, masks))
    return Event(hdr["probe_id"], hdr["pid"], hdr["tid"], hdr["host_pid"], hdr["host_tid"],
                 hdr["timestamp_ns"], executed, decoded, hdr["key_pid"])


def decode_slot(raw: bytes, slot: ValueSlot):
    capture = slot.capture
    if isinstance(capture, EntryCapture):      # copied from the entry probe's own slot
        capture = capture.original
    status = status_of(raw[slot.offset])
    length = struct.unpack_from("<I", raw, slot.offset + 4)[0]
    address = struct.unpack_from("<Q", raw, slot.offset + 8)[0]
    data = raw[slot.data_offset:slot.data_offset + slot.size]
    if isinstance(capture, NoCapture):
        gone = ValueStatus.OPTIMIZED_OUT if capture.optimized_out else ValueStatus.UNAVAILABLE
        return values.error_value(gone, None, capture.reason, capture.ctype)
    if isinstance(capture, KnownBytesCapture):
        if capture.raw:
            return values.decode_raw(capture.ctype, capture.data)
        return values.decode_object(capture.ctype, capture.data)
    if status is not ValueStatus.OK:
        detail = slot.unavailable_reason if status is ValueStatus.UNAVAILABLE else None
        return values.error_value(status, address, detail, slot.ctype)
    match capture:
        case ScalarCapture(ctype=ctype, raw=True) if not arith.is_integer(ctype):
            return values.decode_raw(ctype, data[:min(type_size(ctype), 8)])
        case ScalarCapture(ctype=ctype):
            return scalar_value(ctype, int.from_bytes(data[:8], "little"))
        case MemoryCapture(ctype=ctype, size=size, raw=True):
            return values.decode_raw(ctype, data[:size])
        case MemoryCapture(ctype=ctype, size=size):
            return memory_value(ctype, data, size, address)
        case DeepCapture(ctype=ctype) if getattr(strip(ctype), "language", None) == "c++":
            return decode_cpp(ctype, data, address, capture)
        case DeepCapture(ctype=ctype):
            return decode_rust(ctype, data, address, capture)
        case CompositeCapture(ctype=ctype, size=size, gaps=gaps, raw=True):
            return values.decode_raw(ctype, data[:size], gaps)
        case CompositeCapture(ctype=ctype, size=size, gaps=gaps):
            return values.decode_object(ctype, data[:size], size < type_size(ctype), gaps=gaps)
        case StringCapture(ctype=ctype, cap=cap):
            # length counts the NUL; cap + 2 means the string went on past cap
            text = data[:max(min(length - 1, cap), 0)]
            return values.decode_cstring(ctype, address, text, length >= cap + 2)
        case DumpCapture(cap=cap):
            return Dump(data[:min(length, cap)], length > cap)
        case VariableArrayCapture(ctype=ctype, cap=cap):
            # as many elements as the probe found it has (at most cap bytes)
            return values.decode_object(ctype, data[:min(length, cap)], length > cap,
                                        address=address)
        case ConditionCapture():
            return None
        case BacktraceCapture():
            return decode_backtrace(capture, address, length, data)
    raise TypeError(capture)


def scalar_value(ctype, number: int):
    """The value of a ScalarCapture whose 64-bit register held `number`."""
    if arith.is_integer(ctype) or ctype is None:
        return values.decode_integer(ctype, number)
    size = min(type_size(ctype), 8)
    return values.decode_object(ctype, number.to_bytes(8, "little")[:size])


def memory_value(ctype, data: bytes, size: int, address: int):
    """The value of a MemoryCapture that copied `size` bytes (`data`) from
    `address`; fewer than the type's size when the copy was capped."""
    return values.decode_object(ctype, data[:size], size < type_size(ctype), address=address)


# gs_backtrace_regs fields -> DWARF register numbers (x86-64 psABI 3.6.2).
_BACKTRACE_REGISTERS = {"ip": 16, "sp": 7, "bp": 6, "bx": 3, "r12": 12, "r13": 13, "r14": 14,
                        "r15": 15, "ax": 0, "dx": 1, "cx": 2, "si": 4, "di": 5, "r8": 8,
                        "r9": 9, "r10": 10, "r11": 11}


def decode_backtrace(capture: BacktraceCapture, sp: int, length: int, data: bytes) -> Backtrace:
    reader, numbers, size = _backtrace_reader()
    registers = dict(zip(numbers, reader.unpack_from(data)))
    pending, pending_size = _pending_returns(data, size)
    start = size + pending_size
    stack = data[start:start + min(length, capture.stack_bytes)]
    return Backtrace(registers, sp, bytes(stack), capture, pending)


def _pending_returns(data: bytes, at: int) -> tuple[tuple[tuple[int, int], ...], int]:
    """The gs_pending_returns at `at` of `data`, and its size."""
    layout = abi().structs["gs_pending_returns"]
    count = min(layout.unpack(data, at)["count"], layout.field("slot").count)
    slots, addresses = (struct.unpack_from(f"<{count}Q", data, at + layout.field(name).offset)
                        for name in ("slot", "address"))
    return tuple(zip(slots, addresses)), layout.size


@functools.cache
def _backtrace_reader() -> tuple[struct.Struct, tuple[int, ...], int]:
    """(compiled reader of gs_backtrace_regs, each field's DWARF register
    number, the struct's size): every `bt` event decodes one."""
    layout = abi().structs["gs_backtrace_regs"]
    reader, names = layout.reader
    return reader, tuple(_BACKTRACE_REGISTERS[name] for name in names), layout.size
