"""DW_AT_location (an expression or a location list) -> VariableLocation at
one PC.

Only the expression shapes a BPF probe can read directly are translated
(DWARF 5 section 2.6.1): a register, register + offset in memory, a static
address, or a constant. Everything else becomes UnsupportedLocation naming
the first operation we could not express, so the planner can say why.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Callable

from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.locationlists import BaseAddressEntry, LocationEntry

from gs_cgen.dwarf.model import (EntryValue, AtAddress, AtRegisterOffset, ImplicitValue, InRegister,
                                 LocationForm, LocationOrigin, OptimizedOut, UnsupportedLocation,
                                 VariableLocation, register_name)

NOT_AT_PC = "not available at this PC"
_FIRST_SIMD_REGISTER = 17       # xmm0 in the x86_64 psABI DWARF numbering
_LAST_SIMD_REGISTER = 32

# `frame_base()` returns (register, offset) such that fbreg N = [reg + offset + N],
# or a VariableLocation explaining why there is none.
FrameBase = Callable[[], "tuple[int, int] | VariableLocation"]


class LocationReader:
    """Selects location-list entries and parses expressions for one module."""

    def __init__(self, dwarfinfo, cu_base: Callable) -> None:
        self._dwarfinfo = dwarfinfo
        self._lists = dwarfinfo.location_lists()
        self._cu_base = cu_base

    def locate(self, die, pc: int, frame_base: FrameBase) -> tuple[VariableLocation, LocationOrigin]:
        """The variable's location at `pc`, and how DWARF described it."""
        attrs = die.attributes
        if "DW_AT_const_value" in attrs:
            return _const_value(attrs["DW_AT_const_value"].value), LocationOrigin(LocationForm.CONSTANT)
        attr = attrs.get("DW_AT_location")
        if attr is None:
            return OptimizedOut("optimized out"), LocationOrigin(LocationForm.NONE)
        expr, from_list, covering = self._entry_at(attr, die, pc)
        if expr is None:
            return OptimizedOut(NOT_AT_PC), LocationOrigin(LocationForm.NONE, from_list=from_list)
        ops = self.parse_ops(expr, die.cu) if expr else []
        location = translate_ops(ops, frame_base) if ops else OptimizedOut("optimized out")
        origin = dataclasses.replace(origin_of(ops), from_list=from_list, list_range=covering)
        return location, origin

    def expression_at(self, attr, die, pc: int) -> list[int] | None:
        """The expression bytes that hold at `pc` (the attribute itself when
        it is an exprloc), or None if no list entry covers `pc`."""
        return self._entry_at(attr, die, pc)[0]

    def _entry_at(self, attr, die, pc: int):
        """-> (expression or None, is a location list, [low, high) of the
        covering list entry or None)."""
        if attr.form == "DW_FORM_exprloc" or attr.form.startswith("DW_FORM_block"):
            return list(attr.value), False, None
        offset = attr.value
        if attr.form == "DW_FORM_loclistx":
            offset = self._loclistx_offset(die.cu, attr.value)
        entries = self._lists.get_location_list_at_offset(offset, die)
        expr, covering = _select_entry(entries, self._cu_base(die.cu), pc)
        return expr, True, covering

    def _loclistx_offset(self, cu, index: int) -> int:
        # DWARF 5 section 7.29: offsets table follows DW_AT_loclists_base.
        base = cu.get_top_DIE().attributes["DW_AT_loclists_base"].value
        stream = self._dwarfinfo.debug_loclists_sec.stream
        stream.seek(base + 4 * index)
        return base + struct.unpack("<I", stream.read(4))[0]

    def parse_ops(self, expr: list[int], cu):
        return DWARFExprParser(cu.structs).parse_expr(expr)


def _select_entry(entries, base: int, pc: int):
    """-> (expression, (low, high)) of the entry covering `pc`, else
    (the DW_LLE_default_location expression or None, None)."""
    default = None
    for entry in entries:
        if isinstance(entry, BaseAddressEntry):
            base = entry.base_address
        elif isinstance(entry, LocationEntry):
            if entry.begin_offset == -1:          # DW_LLE_default_location
                default = entry.loc_expr
                continue
            lo, hi = entry.begin_offset, entry.end_offset
            if not entry.is_absolute:
                lo, hi = lo + base, hi + base
            if lo <= pc < hi:
                return entry.loc_expr, (lo, hi)
    return default, None


def _entry_value(op) -> VariableLocation:
    (inner,) = op.args[:1] or [[]]
    names = [getattr(o, "op_name", "?") for o in inner]
    if len(names) == 1 and names[0].startswith("DW_OP_reg") and names[0] != "DW_OP_regx":
        return EntryValue(int(names[0][len("DW_OP_reg"):]))
    names = " ".join(names)
    return UnsupportedLocation(f"DW_OP_entry_value({names}) with DW_OP_stack_value")


def origin_of(ops) -> LocationOrigin:
    """The form of a parsed expression, as `gs-cgen info` names it."""
    names = [op.op_name for op in ops]
    if not names:
        return LocationOrigin(LocationForm.NONE)
    first = names[0]
    if names == ["DW_OP_fbreg"]:
        return LocationOrigin(LocationForm.FRAME_OFFSET, frame_offset=ops[0].args[0])
    if len(names) == 1 and first.startswith("DW_OP_reg"):
        return LocationOrigin(LocationForm.REGISTER)
    if len(names) == 1 and first.startswith("DW_OP_breg"):
        return LocationOrigin(LocationForm.REGISTER_OFFSET)
    if names == ["DW_OP_addr"]:
        return LocationOrigin(LocationForm.STATIC)
    if names == ["DW_OP_implicit_value"]:
        return LocationOrigin(LocationForm.CONSTANT)
    if len(names) == 2 and names[1] == "DW_OP_stack_value":
        if first.startswith("DW_OP_breg"):
            return LocationOrigin(LocationForm.REGISTER)
        if first.startswith(("DW_OP_lit", "DW_OP_const")):
            return LocationOrigin(LocationForm.CONSTANT)
    return LocationOrigin(LocationForm.EXPRESSION)


def translate_ops(ops, frame_base: FrameBase) -> VariableLocation:
    """Map a parsed expression (list of DWARFExprOp) to a location."""
    names = [op.op_name for op in ops]
    if len(ops) == 1:
        return _single(ops[0], frame_base)
    if len(ops) == 2 and names[1] == "DW_OP_stack_value":
        if names[0] == "DW_OP_entry_value":
            return _entry_value(ops[0])
        return _stack_value(ops[0])
    # Name the first operation a probe cannot perform (DW_OP_piece,
    # DW_OP_entry_value, DW_OP_plus, DW_OP_deref, ...).
    culprit = next((n for n in names if not _is_simple(n) and n != "DW_OP_stack_value"), names[-1])
    return UnsupportedLocation(f"{culprit} in location expression {' '.join(names)}")


def _is_simple(name: str) -> bool:
    return name.startswith(("DW_OP_reg", "DW_OP_breg", "DW_OP_fbreg", "DW_OP_addr", "DW_OP_lit",
                            "DW_OP_const"))


def _single(op, frame_base: FrameBase) -> VariableLocation:
    name = op.op_name
    if name.startswith("DW_OP_reg"):
        reg = op.args[0] if name == "DW_OP_regx" else int(name[len("DW_OP_reg"):])
        return _register(reg)
    if name.startswith("DW_OP_breg"):
        reg, offset = _breg(op)
        return _memory(reg, offset)
    if name == "DW_OP_fbreg":
        base = frame_base()
        if not isinstance(base, tuple):
            return base
        return _memory(base[0], base[1] + op.args[0])
    if name == "DW_OP_addr":
        return AtAddress(op.args[0])
    if name == "DW_OP_implicit_value":
        data = bytes(op.args[0])
        if len(data) > 8:
            return UnsupportedLocation(f"DW_OP_implicit_value of {len(data)} bytes")
        return ImplicitValue(int.from_bytes(data, "little"))
    return UnsupportedLocation(f"{name} in location expression")


def _stack_value(op) -> VariableLocation:
    name = op.op_name
    if name.startswith("DW_OP_breg"):
        reg, offset = _breg(op)
        if _FIRST_SIMD_REGISTER <= reg <= _LAST_SIMD_REGISTER:
            return _simd(reg)
        return InRegister(reg, offset)
    if name.startswith("DW_OP_lit"):
        return ImplicitValue(int(name[len("DW_OP_lit"):]))
    if name.startswith("DW_OP_const"):
        return ImplicitValue(op.args[0])
    return UnsupportedLocation(f"{name} with DW_OP_stack_value")


def _breg(op) -> tuple[int, int]:
    if op.op_name == "DW_OP_bregx":
        return op.args[0], op.args[1]
    return int(op.op_name[len("DW_OP_breg"):]), op.args[0]


def _register(reg: int) -> VariableLocation:
    if _FIRST_SIMD_REGISTER <= reg <= _LAST_SIMD_REGISTER:
        return _simd(reg)
    return InRegister(reg)


def _memory(reg: int, offset: int) -> VariableLocation:
    if _FIRST_SIMD_REGISTER <= reg <= _LAST_SIMD_REGISTER:
        return _simd(reg)
    return AtRegisterOffset(reg, offset)


def _simd(reg: int) -> VariableLocation:
    # struct pt_regs has no SIMD registers, so a uprobe cannot read them.
    return UnsupportedLocation(f"value in SIMD register xmm{reg - _FIRST_SIMD_REGISTER} (not in pt_regs)")


def _const_value(value) -> VariableLocation:
    if isinstance(value, int):
        return ImplicitValue(value)
    data = bytes(value)
    if len(data) > 8:
        return UnsupportedLocation(f"DW_AT_const_value of {len(data)} bytes")
    return ImplicitValue(int.from_bytes(data, "little"))


def frame_base_from_ops(ops, cfa: Callable[[], "tuple[int, int] | VariableLocation"]):
    """Evaluate DW_AT_frame_base (DWARF 5 section 3.3.5) to (reg, offset)."""
    if len(ops) != 1:
        names = " ".join(op.op_name for op in ops)
        return UnsupportedLocation(f"frame base expression {names}")
    op = ops[0]
    if op.op_name == "DW_OP_call_frame_cfa":
        return cfa()
    if op.op_name.startswith("DW_OP_breg"):
        return _breg(op)
    if op.op_name.startswith("DW_OP_reg"):
        # The frame base is the register's value: fbreg N = [reg + N].
        reg = op.args[0] if op.op_name == "DW_OP_regx" else int(op.op_name[len("DW_OP_reg"):])
        return reg, 0
    return UnsupportedLocation(f"frame base expression {op.op_name}")


def frame_base_label(ops) -> str | None:
    """What DW_AT_frame_base is relative to, for people: "CFA" or a register."""
    if len(ops) != 1:
        return None
    name = ops[0].op_name
    if name == "DW_OP_call_frame_cfa":
        return "CFA"
    if name.startswith("DW_OP_breg"):
        reg, offset = _breg(ops[0])
        return f"{register_name(reg)}{offset:+d}" if offset else register_name(reg)
    if name.startswith("DW_OP_reg"):
        return register_name(ops[0].args[0] if name == "DW_OP_regx" else int(name[len("DW_OP_reg"):]))
    return None
