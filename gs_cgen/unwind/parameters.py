"""`bt full`: each frame's parameters, where the copy recovers them.

A parameter's DWARF location at the frame's PC (lookup_pc: inside the call
in a caller) is evaluated over what the unwind knows of that frame: all
registers in the probed frame; in a caller only those CFI restores (the
callee-saved ones and rsp); memory only inside the stack copy. Anything
else (a caller-saved register in a caller, an entry value, memory outside
the copy, a composite) is not recovered, and renders `<OPTIMIZED_OUT>`:
never a value that could be wrong."""
from __future__ import annotations

import dataclasses
import struct

from gs_cgen.dwarf.model import AtRegisterOffset, ImplicitValue, InRegister, VariableKind
from gs_cgen.dwarf.types import type_size
from gs_cgen.errors import GsError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.unwind.model import StackCopy

_REGISTER_BYTES = 8


@dataclass(frozen=True)
class ParameterValue:
    name: str
    ctype: object                   # dwarf.types.CType
    data: bytes | None              # the object's bytes; None: not recovered


def with_parameters(backtrace, stack: StackCopy):
    """`backtrace` (backtrace.py) with each frame's parameters filled in."""
    frames = tuple(dataclasses.replace(f, parameters=frame_parameters(f, stack))
                   for f in backtrace.frames)
    return dataclasses.replace(backtrace, frames=frames)


def frame_parameters(frame, stack: StackCopy) -> tuple[ParameterValue, ...]:
    found, physical = frame.module_at, frame.physical
    if found is None or physical is None or frame.die_offset is None:
        return ()
    try:
        variables = found.module.frame_variables_at(physical.lookup_pc - found.bias,
                                                    frame.die_offset)
    except GsError:
        return ()
    return tuple(ParameterValue(v.name, v.type, _bytes(v, physical.registers, stack))
                 for v in variables if v.kind is VariableKind.PARAMETER)


def _bytes(variable, registers: dict[int, int], stack: StackCopy) -> bytes | None:
    try:
        size = type_size(variable.type)
    except (GsError, TypeError, ValueError, KeyError):
        return None
    if not size:
        return None
    match variable.location:
        case InRegister(dwarf_register=number, offset=offset) if size <= _REGISTER_BYTES:
            if number not in registers:
                return None
            value = (registers[number] + offset) & ((1 << 64) - 1)
            return struct.pack("<Q", value)[:size]
        case AtRegisterOffset(dwarf_register=number, offset=offset):
            if number not in registers:
                return None
            return stack.read(registers[number] + offset, size)
        case ImplicitValue(value=value) if size <= _REGISTER_BYTES:
            return (value & ((1 << 64) - 1)).to_bytes(8, "little")[:size]
    return None
