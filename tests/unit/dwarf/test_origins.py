"""How DWARF described each variable (VisibleVariable.origin) and the
`gs-cgen info` wording built from it (CONTRACT.md: "register, frame offset,
location list, optimized out")."""
from __future__ import annotations

import re
from collections import namedtuple

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.location.reader import frame_base_label, origin_of
from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, ImplicitValue, InRegister,
                                 LocationForm, LocationOrigin, OptimizedOut, UnsupportedLocation,
                                 VariableKind, VisibleVariable, describe_variable)
from gs_cgen.dwarf.types import IntType

from .test_variables import _RANGE, _by_name, _scope

Op = namedtuple("Op", "op_name args")
INT = IntType("int", 4, True)


def _var(location, origin=None):
    return VisibleVariable("x", INT, location, VariableKind.LOCAL, origin=origin)


@pytest.mark.parametrize("location, origin, text", [
    (AtRegisterOffset(6, -20), LocationOrigin(LocationForm.FRAME_OFFSET, -36, "CFA"),
     "frame offset -36 (CFA) → [rbp-20]"),
    (AtRegisterOffset(6, -20), LocationOrigin(LocationForm.FRAME_OFFSET, -20, "rbp"),
     "frame offset -20 (rbp) → [rbp-20]"),
    (InRegister(5), LocationOrigin(LocationForm.REGISTER, from_list=True, list_range=(0x1140, 0x1150)),
     "location list [0x1140,0x1150) → register rdi"),
    (AtRegisterOffset(7, 8), LocationOrigin(LocationForm.FRAME_OFFSET, -8, "CFA", True, (0x10, 0x20)),
     "location list [0x10,0x20) → frame offset -8 (CFA) → [rsp+8]"),
    (InRegister(5), LocationOrigin(LocationForm.REGISTER), "register rdi"),
    (AtRegisterOffset(3, 8), LocationOrigin(LocationForm.REGISTER_OFFSET), "memory [rbx+8]"),
    (AtAddress(0x4010), LocationOrigin(LocationForm.STATIC), "static 0x4010"),
    (ImplicitValue(3), LocationOrigin(LocationForm.CONSTANT), "constant 3"),
    (OptimizedOut("optimized out"), LocationOrigin(LocationForm.NONE), "optimized out"),
    (OptimizedOut("not available at this PC"), LocationOrigin(LocationForm.NONE, from_list=True),
     "optimized out (no location-list entry covers this PC)"),
    (InRegister(0), LocationOrigin(LocationForm.REGISTER, from_list=True),
     "location list (default entry) → register rax"),
    (UnsupportedLocation("DW_OP_piece in location expression"),
     LocationOrigin(LocationForm.EXPRESSION, from_list=True, list_range=(0x1, 0x2)),
     "location list [0x1,0x2) → unsupported: DW_OP_piece in location expression"),
])
def test_describe_variable(location, origin, text):
    assert describe_variable(_var(location, origin)) == text


def test_without_origin_it_is_describe_location():
    # Fakes and older callers build VisibleVariable without an origin.
    assert describe_variable(_var(AtRegisterOffset(6, -20))) == "memory [rbp-20]"


@pytest.mark.parametrize("ops, form", [
    ([Op("DW_OP_reg5", [])], LocationForm.REGISTER),
    ([Op("DW_OP_breg7", [16]), Op("DW_OP_stack_value", [])], LocationForm.REGISTER),
    ([Op("DW_OP_breg6", [-20])], LocationForm.REGISTER_OFFSET),
    ([Op("DW_OP_addr", [0x4010])], LocationForm.STATIC),
    ([Op("DW_OP_lit7", []), Op("DW_OP_stack_value", [])], LocationForm.CONSTANT),
    ([Op("DW_OP_implicit_value", [[1]])], LocationForm.CONSTANT),
    ([Op("DW_OP_reg0", []), Op("DW_OP_piece", [4])], LocationForm.EXPRESSION),
    ([], LocationForm.NONE),
])
def test_origin_of_expression_shapes(ops, form):
    assert origin_of(ops) == LocationOrigin(form)


def test_fbreg_origin_keeps_the_dwarf_offset():
    assert origin_of([Op("DW_OP_fbreg", [-36])]) == LocationOrigin(LocationForm.FRAME_OFFSET, -36)
    assert frame_base_label([Op("DW_OP_call_frame_cfa", [])]) == "CFA"
    assert frame_base_label([Op("DW_OP_breg6", [16])]) == "rbp+16"
    assert frame_base_label([Op("DW_OP_reg6", [])]) == "rbp"


@pytest.mark.parametrize("function", ("scale", "sum_array", "main"))
def test_frame_offsets_at_O0_name_the_dwarf_offset(binaries, gdb_text, function):
    module = open_module(binaries["O0"])
    (site,) = module.find_functions(function)
    found = _by_name(module.variables_at(site.probe_address))
    checked = 0
    for name, text in _scope(gdb_text, binaries["O0"], function).items():
        fbreg = re.search(r"DW_OP_fbreg (-?\d+)", text)
        if fbreg:
            n = int(fbreg.group(1))
            assert found[name].origin == LocationOrigin(LocationForm.FRAME_OFFSET, n, "CFA"), name
            assert describe_variable(found[name]) == f"frame offset {n:+d} (CFA) → [rbp{16 + n:+d}]"
            checked += 1
    assert checked


@pytest.mark.parametrize("function", ("scale", "sum_array", "main"))
def test_location_list_ranges_match_gdb(binaries, gdb_text, function):
    module = open_module(binaries["O2"])
    checked = 0
    for name, text in _scope(gdb_text, binaries["O2"], function).items():
        for start, end, *_ in _RANGE.findall(text):
            low, high = int(start, 16), int(end, 16)
            if low == high:
                continue
            variable = _by_name(module.variables_at(low))[name]
            assert variable.origin.from_list and variable.origin.list_range == (low, high), (name, start)
            assert describe_variable(variable).startswith(f"location list [{start},{end}) → ")
            checked += 1
    assert checked


def test_gap_and_constant_at_O2(binaries):
    module = open_module(binaries["O2"])
    (site,) = module.find_functions("scale")
    found = _by_name(module.variables_at(site.probe_address))
    assert describe_variable(found["result"]) == "optimized out (no location-list entry covers this PC)"
    assert found["factor"].origin == LocationOrigin(LocationForm.CONSTANT)
    assert describe_variable(found["factor"]) == "constant 3"
