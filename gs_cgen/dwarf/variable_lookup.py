"""Parameters and locals at one PC, each located there: the scope rules
are dwarf/scopes.py's, and what a location leaves open until the ELF
file is at hand (entry values, discarded objects, TLS offsets) is decided
here with dwarf/location/resolve.py.

A part of the module facade (dwarf/module.py): `module` is the
ModuleDebugInfo it answers for."""
from __future__ import annotations

import dataclasses

from gs_cgen.dwarf.location.callsites import calls_to
from gs_cgen.dwarf.location.expression import decode_ops, register_operand
from gs_cgen.dwarf.model import (ArrayBound, FrameScope, OptimizedOut, ThreadLocal,
                                 VariableLocation, VisibleVariable)
from gs_cgen.dwarf.location.resolve import LocationResolver, ResolveContext
from gs_cgen.dwarf.scopes import array_bound, frame_scope, locate_die, variable_at
from gs_cgen.errors import DebugInfoError

_DW_OP_CALL_FRAME_CFA = 0x9C       # a function's DW_AT_frame_base: its CFA


class VariableLookup:
    def __init__(self, module) -> None:
        self._module = module

    def frame_at(self, pc: int, frame_die: int | None = None) -> FrameScope:
        """ModuleDebugInfo.frame_at."""
        hit = self.function_hit(pc)
        die = self._module._dwarf.die_at(hit[1].die_offset)
        frame = frame_scope(self._module._scope_context, die, pc, frame_die)
        return dataclasses.replace(frame, variables=tuple(self._resolved(hit, pc, frame.variables)),
                                   outer=tuple(self._resolved(hit, pc, frame.outer)))

    def frame_variables_at(self, pc: int, frame_die: int) -> list[VisibleVariable]:
        """ModuleDebugInfo.frame_variables_at."""
        hit = self.function_hit(pc)
        die = self._module._dwarf.die_at(hit[1].die_offset)
        frame = frame_scope(self._module._scope_context, die, pc, frame_die, exact=True)
        return list(self._resolved(hit, pc, frame.variables))

    def variable_at(self, die_offset: int, pc: int) -> VisibleVariable | None:
        """ModuleDebugInfo.variable_at."""
        hit = self.function_hit(pc)
        dwarf = self._module._dwarf
        function = dwarf.die_at(hit[1].die_offset)
        found = variable_at(self._module._scope_context, function, dwarf.die_at(die_offset), pc)
        return None if found is None else self._resolved(hit, pc, [found])[0]

    def function_hit(self, pc: int):
        """(CU, FunctionEntry) of the out-of-line function covering `pc`."""
        module = self._module
        module.require_debug_info()
        hit = module._dwarf.function_at(pc)
        if hit is None:
            split = module._functions.split_dwarf_note(pc)
            raise DebugInfoError(f"no function with debug info covers address 0x{pc:x}"
                                 + (f": {split}" if split else ""))
        return hit

    def array_bound(self, bound_die: int, pc: int) -> ArrayBound | None:
        """ModuleDebugInfo.array_bound."""
        hit = self.function_hit(pc)
        dwarf = self._module._dwarf
        function = dwarf.die_at(hit[1].die_offset)
        bound = array_bound(self._module._scope_context, function, dwarf.die_at(bound_die), pc)
        if bound is None:
            return None
        location = self._location_resolver(hit, pc).resolve(bound.location)
        if location is not bound.location:
            bound = dataclasses.replace(bound, location=location)
        return bound

    def _resolved(self, hit, pc: int, found) -> list[VisibleVariable]:
        """What scopes.py cannot decide alone, decided with the ELF file
        (dwarf/location/resolve.py)."""
        resolver = self._location_resolver(hit, pc)
        out = []
        for variable in found:
            location = resolver.resolve(variable.location)
            if isinstance(location, ThreadLocal):
                location = self._thread_local(location)
            out.append(variable if location is variable.location
                       else dataclasses.replace(variable, location=location))
        return out

    def _location_resolver(self, hit, pc: int) -> LocationResolver:
        module = self._module
        function = hit[1]
        die = module._dwarf.die_at(function.die_offset)
        return LocationResolver(ResolveContext(
            elf=module._elf, pc=pc, ranges=function.ranges, cu_offset=die.cu.cu_offset,
            call_sites=lambda: calls_to(module._dwarf, die), cfa=lambda: module._cfa_at(pc),
            saved_registers=lambda: module._frames.saved_registers_at(pc),
            locate_die=lambda offset: locate_die(module._scope_context, die,
                                                 module._dwarf.die_at(offset), pc),
            caller_frame_base=self._caller_frame_base))

    def _caller_frame_base(self, return_pc: int) -> tuple | None:
        """The frame base of the function whose call returns to
        `return_pc`, at its call instruction (return_pc - 1: a call that
        ends its function returns past it), as (register, offset): its
        CFA rule where DW_AT_frame_base is DW_OP_call_frame_cfa (gcc); the
        register itself where it is DW_OP_regN (clang: rsp, or rbp at -O0
        and where it keeps a frame pointer). Else None (a location list)."""
        module = self._module
        hit = module._dwarf.function_at(return_pc - 1)
        if hit is None:
            return None
        die = module._dwarf.die_at(hit[1].die_offset)
        base = die.attributes.get("DW_AT_frame_base")
        if base is None or not isinstance(base.value, list):
            return None
        if base.value == [_DW_OP_CALL_FRAME_CFA]:
            rule = module._cfa_at(return_pc - 1)
            return rule if isinstance(rule, tuple) else None
        ops = decode_ops(base.value, die.cu.structs)
        register = register_operand(ops[0]) if isinstance(ops, list) and len(ops) == 1 else None
        return None if register is None else (register, 0)

    def _thread_local(self, location: ThreadLocal) -> VariableLocation:
        # ld leaves the offset of a discarded object too: it must be in PT_TLS.
        tls = self._module.tls_segment
        if tls is None or location.offset >= tls.memsz:
            size = "none" if tls is None else f"0x{tls.memsz:x} bytes"
            return OptimizedOut(f"TLS offset 0x{location.offset:x} is outside the module's TLS "
                                f"block ({size}; discarded by the linker)")
        return location
