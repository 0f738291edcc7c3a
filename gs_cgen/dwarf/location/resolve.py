"""What a location expression leaves open until the module is at hand:
entry values (is the register still intact? else what did the caller
pass?), static addresses (did the linker keep the object?) and implicit
pointers (where is the object pointed to?). dwarf/module.py applies this to
every variable before the planner sees it."""
from __future__ import annotations

from typing import Callable

from gs_cgen.dwarf.location.callsites import (call_site_parameter_values, call_site_values,
                                              caller_frame_base)
from gs_cgen.elf.code import registers_written
from gs_cgen.dwarf.location.expression import is_simd, simd_location
from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, CallSiteValue, Composite,
                                 ComputedAddress, ComputedValue, EntryValue, ImplicitPointer,
                                 InRegister, InSimdRegister, OptimizedOut, Piece, StaticAddress,
                                 SyntheticPointer, UnsupportedLocation, ValueExpression,
                                 VariableLocation, register_name)
from gs_cgen.lazydataclass import dataclass

_MAX_POINTER_DEPTH = 4          # implicit pointers to implicit pointers


@dataclass
class ResolveContext:
    """What resolving needs of the module, for the function holding the PC."""

    elf: object                                   # ElfImage: segment_of
    pc: int
    ranges: list                                  # the function's address ranges, entry first
    cu_offset: int                                # the function's CU (CU-relative references)
    call_sites: Callable[[], list]                # () -> the DIEs of the calls to the function,
                                                  # in every CU (dwarf/location/callsites.py calls_to)
    cfa: Callable                                 # () -> (reg, offset) | VariableLocation
    saved_registers: Callable[[], dict]           # () -> {reg: N}: saved at CFA + N (CFI)
    locate_die: Callable[[int], VariableLocation]  # DIE offset -> its location at the PC
    # return PC of a call -> the caller's frame base (reg, offset) at its call
    # instruction: its CFA rule (DW_OP_call_frame_cfa) or its frame base
    # register (DW_OP_regN); None when neither
    caller_frame_base: Callable[[int], tuple | None] = lambda return_pc: None


class LocationResolver:
    """Resolves the locations of one function's variables at one PC."""

    def __init__(self, context: ResolveContext) -> None:
        self.context = context
        self._written: frozenset | None = None

    @property
    def written(self):
        if self._written is None:
            self._written = registers_written(self.context.elf, self.context.ranges)
        return self._written

    def resolve(self, location: VariableLocation, depth: int = 0) -> VariableLocation:
        match location:
            case EntryValue(register) if is_simd(register):
                return self._simd_entry(register, "entry value")
            case EntryValue(register):
                return self._value(("entry", register))
            case InSimdRegister(register):
                return self._simd_register(register)
            case ComputedValue(expression):
                return self._value(expression.tree)
            case ComputedAddress(expression):
                return self._address(expression.tree)
            case AtAddress(address) | StaticAddress(address) \
                    if self.context.elf.segment_of(address) is None:
                return _discarded(address)
            case Composite(pieces):
                return Composite(tuple(Piece(p.bit_size, self.resolve(p.location, depth), p.bit_offset)
                                       for p in pieces))
            case ImplicitPointer(die, offset):
                if depth >= _MAX_POINTER_DEPTH:
                    return UnsupportedLocation("implicit pointers nested too deep")
                target = self.resolve(self.context.locate_die(die), depth + 1)
                if isinstance(target, (OptimizedOut, UnsupportedLocation)):
                    return target
                return SyntheticPointer(target, offset)
        return location

    def _simd_register(self, register: int) -> VariableLocation:
        """No probe reads a SIMD register; but at the function's first
        instruction, or anywhere in a function that never writes it, it
        still holds what the caller passed, and the caller's call site may
        say what that was (a float or double constant, mostly)."""
        at_entry = self.context.pc == self.context.ranges[0][0]
        if at_entry or register_name(register) not in self.written:
            return self._simd_entry(register, "value")
        return simd_location(register)

    def _simd_entry(self, register: int, what: str) -> VariableLocation:
        location = self._value(("entry", register))
        return location if isinstance(location, CallSiteValue) else simd_location(register, what)

    # ------------------------------------------------------------ trees
    def _value(self, tree: tuple) -> VariableLocation:
        tree, problem, lost = self._prepared(tree)
        if problem is not None:
            return problem
        if not lost:
            return _simple_value(tree)
        return self._from_call_sites(tree, lost)

    def _address(self, tree: tuple) -> VariableLocation:
        tree, problem, lost = self._prepared(tree)
        if problem is not None:
            return problem
        if lost:
            return OptimizedOut(f"address from the entry value of {_inputs_text(lost)}")
        if tree[0] == "reg":
            return AtRegisterOffset(tree[1], tree[2])
        return ComputedAddress(ValueExpression(tree))

    def _prepared(self, tree: tuple):
        """(tree with intact entry registers replaced, why it cannot be
        read or None, the entry inputs still to find at call sites)."""
        problem = self._statics(tree)
        tree = self._intact_entries(tree)
        return tree, problem, _entry_registers(tree)

    def _intact_entries(self, tree: tuple) -> tuple:
        """Entry values of registers the function never writes are the
        registers themselves; rsp's is CFA - 8 wherever the CFA is known
        (the call pushed the return address just below the CFA)."""
        if tree[0] == "entry" and tree[1] <= 16 and register_name(tree[1]) not in self.written:
            return ("reg", tree[1], 0)
        if tree[0] == "entry" and tree[1] == _RSP and isinstance(cfa := self.context.cfa(), tuple):
            return ("reg", cfa[0], cfa[1] - 8)
        if tree[0] in ("const", "reg", "static", "entry", "param"):
            return tree
        return (tree[0], *(self._intact_entries(t) if isinstance(t, tuple) else t
                           for t in tree[1:]))

    def _saved(self) -> dict[int, tuple] | None:
        """Where the function saved its caller's registers at the PC, as
        trees ([CFA + N]); None without call frame information."""
        cfa = self.context.cfa()
        if not isinstance(cfa, tuple):
            return None
        return {register: ("deref", ("reg", cfa[0], cfa[1] + offset), 8)
                for register, offset in self.context.saved_registers().items()}

    def _caller_frame_base(self, return_pc: int) -> tuple | None:
        """The frame base of the caller that returns to `return_pc`, at
        the callee's PC (a DW_OP_fbreg in its DW_AT_call_value)."""
        return caller_frame_base(self.context.caller_frame_base(return_pc), self.context.cfa(),
                                 self.written, self._saved())

    def _statics(self, tree: tuple) -> VariableLocation | None:
        for address in _static_addresses(tree):
            if self.context.elf.segment_of(address) is None:
                return _discarded(address)
        return None

    def _from_call_sites(self, tree: tuple, lost: set[tuple]) -> VariableLocation:
        """The caller's DW_AT_call_value for each lost entry input (an
        overwritten register, a DW_OP_GNU_parameter_ref), chosen at run
        time by the return address."""
        ctx = self.context
        call_sites = ctx.call_sites()
        per_site: dict[int, dict[tuple, tuple]] = {}
        for node in sorted(lost):
            if node[0] == "entry":
                found = call_site_values(call_sites, node[1], self.written, self._saved(),
                                         self._caller_frame_base)
            else:
                found = call_site_parameter_values(call_sites, ctx.cu_offset + node[1],
                                                   self.written, self._saved(),
                                                   self._caller_frame_base)
            for return_pc, value in found:
                per_site.setdefault(return_pc, {})[node] = value.tree
        cases = tuple((pc, ValueExpression(_substitute(tree, values)))
                      for pc, values in sorted(per_site.items()) if set(values) == lost)
        cfa = ctx.cfa()
        if cases and isinstance(cfa, tuple):
            return CallSiteValue(AtRegisterOffset(cfa[0], cfa[1] - 8), cases)
        return OptimizedOut(f"entry value of {_inputs_text(lost)}, and no call site says how "
                            "it was computed")


_RSP = 7                    # DWARF register number (x86-64 psABI)


def _inputs_text(lost: set[tuple]) -> str:
    registers = [register_name(n[1]) for n in sorted(lost) if n[0] == "entry"]
    text = ", ".join(registers)
    if registers:
        text += ", which this function overwrites"
    if any(n[0] == "param" for n in lost):
        text = (text + " and " if text else "") + "a parameter the compiler removed"
    return text


def _simple_value(tree: tuple) -> VariableLocation:
    if tree[0] == "reg":
        return InRegister(tree[1], tree[2])
    if tree[0] == "static":
        return StaticAddress(tree[1])
    return ComputedValue(ValueExpression(tree))


def _discarded(address: int) -> OptimizedOut:
    # ld leaves DW_OP_addr 0 (or a stale address) for discarded sections.
    return OptimizedOut(f"static address 0x{address:x} is outside the module's loaded "
                        "segments (discarded by the linker)")


def _entry_registers(tree: tuple) -> set[tuple]:
    """The entry inputs of a tree: ("entry", reg) and ("param", die) nodes."""
    if tree[0] in ("entry", "param"):
        return {tree}
    return {n for t in tree[1:] if isinstance(t, tuple) for n in _entry_registers(t)}


def _static_addresses(tree: tuple) -> list[int]:
    if tree[0] == "static":
        return [tree[1]]
    return [a for t in tree[1:] if isinstance(t, tuple) for a in _static_addresses(t)]


def _substitute(tree: tuple, values: dict[tuple, tuple]) -> tuple:
    if tree in values:
        return values[tree]
    if tree[0] in ("const", "reg", "static", "entry", "param"):
        return tree
    return (tree[0], *(_substitute(t, values) if isinstance(t, tuple) else t for t in tree[1:]))


__all__ = ["LocationResolver", "ResolveContext"]
