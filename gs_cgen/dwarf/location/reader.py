"""DW_AT_location (an expression or a location list) -> VariableLocation at
one PC: the list entry that covers the PC is chosen here, its expression is
evaluated by dwarf/location/expression.py. Every outcome is a VariableLocation;
DWARF that cannot be decoded or evaluated is an UnsupportedLocation with
the reason, never an exception (DESIGN.md "Reads never lie").
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Callable

from elftools.dwarf.locationlists import BaseAddressEntry, LocationEntry

from gs_cgen.dwarf.location.loclists import RawLocationLists
from gs_cgen.dwarf.location.expression import (CONSTANT_OPS, DECODE_ERRORS, BaseType, ExpressionContext,
                                      FrameBase, breg_operands, decode_ops, numbered,
                                      register_operand, translate_ops)
from gs_cgen.dwarf.model import (AtRegisterOffset, ImplicitBytes, InRegister, ImplicitValue, LocationForm, LocationOrigin,
                                 OptimizedOut, UnsupportedLocation, VariableLocation, register_name)

NOT_AT_PC = "not available at this PC"

__all__ = ["FrameBase", "LocationReader", "NOT_AT_PC", "frame_base_from_ops", "frame_base_label",
           "origin_of", "translate_ops"]


class LocationReader:
    """Selects location-list entries and parses expressions for one module."""

    def __init__(self, dwarfinfo, cu_base: Callable, section_read: Callable | None = None) -> None:
        """`section_read(section, offset, size)`: bytes of a DWARF section,
        for decoding location lists without pyelftools (dwarf/location/loclists.py)."""
        self._dwarfinfo = dwarfinfo
        self._section_read = section_read
        lists = dwarfinfo.location_lists()
        self._lists = RawLocationLists(dwarfinfo, lists, section_read) \
            if lists is not None and section_read is not None else lists
        self._cu_base = cu_base
        # Decoded lists by section offset: `info --lines` asks for the same
        # variables at hundreds of PCs.
        self._decoded: dict[int, list] = {}

    def locate(self, die, pc: int, frame_base: FrameBase, cfa: FrameBase | None = None,
               entry_pc: int | None = None) -> tuple[VariableLocation, LocationOrigin]:
        """The variable's location at `pc`, and how DWARF described it.
        `cfa` gives the CFA at `pc` (DW_OP_call_frame_cfa); `entry_pc` is
        the entry of the function holding `pc` (see _select_entry)."""
        attrs = die.attributes
        if "DW_AT_const_value" in attrs:
            return _const_value(attrs["DW_AT_const_value"].value), LocationOrigin(LocationForm.CONSTANT)
        attr = attrs.get("DW_AT_location")
        if attr is None:
            return OptimizedOut("optimized out"), LocationOrigin(LocationForm.NONE)
        expr, from_list, covering = self._entry_at(attr, die, pc, entry_pc)
        if isinstance(expr, UnsupportedLocation):
            return expr, LocationOrigin(LocationForm.EXPRESSION, from_list=from_list)
        if expr is None:
            return OptimizedOut(NOT_AT_PC), LocationOrigin(LocationForm.NONE, from_list=from_list)
        ops = self.parse_ops(expr, die.cu)
        if isinstance(ops, UnsupportedLocation):
            return ops, LocationOrigin(LocationForm.EXPRESSION, from_list=from_list, list_range=covering)
        location = translate_ops(ops, ExpressionContext(frame_base, cfa, self._base_types(die.cu),
                                                        self._debug_addr(die.cu)))
        origin = dataclasses.replace(origin_of(ops), from_list=from_list, list_range=covering)
        return location, origin

    def expression_at(self, attr, die, pc: int) -> list[int] | None | UnsupportedLocation:
        """The expression bytes that hold at `pc` (the attribute itself when
        it is an exprloc), None if no list entry covers `pc`, or why the
        list cannot be read."""
        return self._entry_at(attr, die, pc)[0]

    def _base_types(self, cu):
        def base_type(offset: int) -> BaseType | None:
            try:
                die = cu.get_DIE_from_refaddr(cu.cu_offset + offset)
            except DECODE_ERRORS + (struct.error, ValueError, IndexError):
                return None
            if die.tag != "DW_TAG_base_type" or "DW_AT_byte_size" not in die.attributes:
                return None
            encoding = die.attributes.get("DW_AT_encoding")
            code = encoding.value if encoding is not None else 0
            return BaseType(die.attributes["DW_AT_byte_size"].value, code in _SIGNED_ENCODINGS,
                            code in _FLOAT_ENCODINGS)
        return base_type

    def _debug_addr(self, cu):
        def address(index: int) -> int | None:
            try:
                return self._dwarfinfo.get_addr(cu, index)
            except DECODE_ERRORS + (struct.error, ValueError, IndexError, AttributeError):
                return None
        return address

    def _entry_at(self, attr, die, pc: int, entry_pc: int | None = None):
        """-> (expression, None or UnsupportedLocation; is a location list;
        [low, high) of the covering list entry or None)."""
        if attr.form == "DW_FORM_exprloc" or attr.form.startswith("DW_FORM_block"):
            return list(attr.value), False, None
        if not isinstance(attr.value, int):
            return UnsupportedLocation(f"DW_AT_location in form {attr.form}"), False, None
        try:
            offset = attr.value
            if attr.form == "DW_FORM_loclistx":
                # by its index: pyelftools 0.32 and 0.33 also resolve `value`
                # to the list's offset, through the section's stream
                offset = self._loclistx_offset(die.cu, attr.raw_value)
            entries = self._decoded.get(offset)
            if entries is None:
                entries = self._decoded[offset] = \
                    self._lists.get_location_list_at_offset(offset, die)
        except DECODE_ERRORS + (struct.error,) as exc:
            return UnsupportedLocation(f"undecodable location list ({exc})"), True, None
        expr, covering = _select_entry(entries, self._cu_base(die.cu), pc, entry_pc)
        return expr, True, covering

    def _loclistx_offset(self, cu, index: int) -> int:
        # DWARF 5 section 7.29: offsets table follows DW_AT_loclists_base.
        base = cu.get_top_DIE().attributes["DW_AT_loclists_base"].value
        section = self._dwarfinfo.debug_loclists_sec
        if self._section_read is not None:
            slot = self._section_read(section, base + 4 * index, 4)
        else:
            section.stream.seek(base + 4 * index)
            slot = section.stream.read(4)
        return base + struct.unpack("<I", slot)[0]

    def parse_ops(self, expr: list[int], cu) -> list | UnsupportedLocation:
        """The operations of expression bytes, or why they cannot be decoded."""
        return decode_ops(expr, cu.structs)


# DW_ATE_signed, DW_ATE_signed_char; DW_ATE_float, complex_float, decimal_float.
_SIGNED_ENCODINGS = (0x05, 0x06)
_FLOAT_ENCODINGS = (0x04, 0x03, 0x0f)


def _select_entry(entries, base: int, pc: int, entry_pc: int | None = None):
    """-> (expression, (low, high)) of the first entry covering `pc`, else
    (the DW_LLE_default_location expression or None, None).

    An empty entry [pc, pc) at the function's entry PC covers it: with
    location views, GCC describes the value a variable has at the very
    first instruction (view 0) by such an entry ahead of the one that
    starts there at a later view; gdb applies it at the entry PC
    (dwarf2_find_location_expression), so the value printed there is the
    one the program has before any code ran."""
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
            if lo <= pc < hi or (lo == hi == pc and pc == entry_pc):
                return entry.loc_expr, (lo, hi)
    return default, None


def origin_of(ops) -> LocationOrigin:
    """The form of a parsed expression, as `gs-cgen info` names it."""
    names = [op.op_name for op in ops]
    if not names:
        return LocationOrigin(LocationForm.NONE)
    first = ops[0]
    if names == ["DW_OP_fbreg"]:
        return LocationOrigin(LocationForm.FRAME_OFFSET, frame_offset=first.args[0])
    if len(names) == 1 and register_operand(first) is not None:
        return LocationOrigin(LocationForm.REGISTER)
    if len(names) == 1 and breg_operands(first) is not None:
        return LocationOrigin(LocationForm.REGISTER_OFFSET)
    if names == ["DW_OP_addr"]:
        return LocationOrigin(LocationForm.STATIC)
    if names == ["DW_OP_implicit_value"]:
        return LocationOrigin(LocationForm.CONSTANT)
    if len(names) == 2 and names[1] == "DW_OP_stack_value":
        if breg_operands(first) is not None:
            return LocationOrigin(LocationForm.REGISTER)
        if numbered(names[0], "DW_OP_lit") is not None or names[0] in CONSTANT_OPS:
            return LocationOrigin(LocationForm.CONSTANT)
    return LocationOrigin(LocationForm.EXPRESSION)


def _const_value(value) -> VariableLocation:
    if isinstance(value, int):
        return ImplicitValue(value)
    data = bytes(value)
    if len(data) > 8:
        return ImplicitBytes(data)
    return ImplicitValue(int.from_bytes(data, "little"))


def frame_base_from_ops(ops, cfa: Callable[[], "tuple[int, int] | VariableLocation"]):
    """Evaluate DW_AT_frame_base (DWARF 5 section 3.3.5) to (reg, offset):
    the base is the address of a memory location description, or the value
    of a register location."""
    def no_frame_base():
        return UnsupportedLocation("DW_OP_fbreg inside a frame base")
    location = translate_ops(ops, ExpressionContext(no_frame_base, cfa))
    if isinstance(location, AtRegisterOffset):
        return location.dwarf_register, location.offset
    if isinstance(location, InRegister) and location.offset == 0:
        return location.dwarf_register, 0        # fbreg N = [reg + N]
    if isinstance(location, (OptimizedOut, UnsupportedLocation)):
        return location if "frame base" in location.reason else \
            UnsupportedLocation(f"frame base: {location.reason}")
    return UnsupportedLocation(f"frame base expression {' '.join(op.op_name for op in ops)}")


def frame_base_label(ops) -> str | None:
    """What DW_AT_frame_base is relative to, for people: "CFA" or a register."""
    if len(ops) != 1:
        return None
    if ops[0].op_name == "DW_OP_call_frame_cfa":
        return "CFA"
    if breg_operands(ops[0]) is not None:
        reg, offset = breg_operands(ops[0])
        return f"{register_name(reg)}{offset:+d}" if offset else register_name(reg)
    if register_operand(ops[0]) is not None:
        return register_name(register_operand(ops[0]))
    return None
