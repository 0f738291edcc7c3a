"""Expression shapes -> VariableLocation, on hand-built operation lists."""
from __future__ import annotations

from collections import namedtuple

import pytest

from gs_cgen.dwarf.location.reader import frame_base_from_ops, translate_ops
from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, ImplicitValue, InRegister, InSimdRegister,
                                 UnsupportedLocation)

Op = namedtuple("Op", "op_name args")
CFA_RSP_8 = (7, 8)


def _no_frame_base():
    raise AssertionError("frame base must not be computed for this expression")


@pytest.mark.parametrize("ops, expected", [
    ([Op("DW_OP_reg5", [])], InRegister(5)),
    ([Op("DW_OP_regx", [14])], InRegister(14)),
    ([Op("DW_OP_breg6", [-20])], AtRegisterOffset(6, -20)),
    ([Op("DW_OP_bregx", [3, 8])], AtRegisterOffset(3, 8)),
    ([Op("DW_OP_breg7", [16]), Op("DW_OP_stack_value", [])], InRegister(7, 16)),
    ([Op("DW_OP_addr", [0x4010])], AtAddress(0x4010)),
    ([Op("DW_OP_lit7", []), Op("DW_OP_stack_value", [])], ImplicitValue(7)),
    ([Op("DW_OP_consts", [-3]), Op("DW_OP_stack_value", [])], ImplicitValue(-3)),
    ([Op("DW_OP_implicit_value", [[1, 2, 0, 0]])], ImplicitValue(0x0201)),
])
def test_supported_shapes(ops, expected):
    assert translate_ops(ops, _no_frame_base) == expected


def test_fbreg_adds_to_frame_base():
    assert translate_ops([Op("DW_OP_fbreg", [-40])], lambda: CFA_RSP_8) == AtRegisterOffset(7, -32)


def test_fbreg_passes_frame_base_problem_through():
    problem = UnsupportedLocation("CFA at 0x10 is a DWARF expression")
    assert translate_ops([Op("DW_OP_fbreg", [-8])], lambda: problem) is problem


@pytest.mark.parametrize("ops, culprit", [
    ([Op("DW_OP_entry_value", [[0x55]]), Op("DW_OP_stack_value", [])], "DW_OP_entry_value"),
    ([Op("DW_OP_reg0", []), Op("DW_OP_reg1", []), Op("DW_OP_piece", [4])], "DW_OP_reg1"),
    ([Op("DW_OP_breg6", [-8]), Op("DW_OP_deref_size", [16])], "DW_OP_deref_size"),
    ([Op("DW_OP_regval_type", [17, 0]), Op("DW_OP_stack_value", [])], "SIMD register xmm0"),
    ([Op("DW_OP_GNU_push_tls_address", [])], "DW_OP_GNU_push_tls_address"),
])
def test_unsupported_shapes_name_the_operation(ops, culprit):
    location = translate_ops(ops, _no_frame_base)
    assert isinstance(location, UnsupportedLocation)
    assert culprit in location.reason


def test_a_simd_register_is_left_to_the_resolver():
    """dwarf/location/resolve.py decides: its entry value from a call site, or unsupported."""
    assert translate_ops([Op("DW_OP_reg17", [])], _no_frame_base) == InSimdRegister(17)


@pytest.mark.parametrize("ops, expected", [
    ([Op("DW_OP_call_frame_cfa", [])], CFA_RSP_8),
    ([Op("DW_OP_breg7", [8])], (7, 8)),
    ([Op("DW_OP_reg6", [])], (6, 0)),
])
def test_frame_base_shapes(ops, expected):
    assert frame_base_from_ops(ops, lambda: CFA_RSP_8) == expected


def test_empty_entry_at_the_function_entry_is_applied_as_gdb_does():
    """GCC -O3 with location views: `i` is 0 at the function's first
    instruction (view 0) and 2 from a later view of the same address;
    gdb (dwarf2_find_location_expression) takes the empty entry at the
    function's entry PC, and only there."""
    from elftools.dwarf.locationlists import LocationEntry

    from gs_cgen.dwarf.location.reader import _select_entry
    entries = [LocationEntry(0, 0, 0x13a0, 0x13a0, [0x30, 0x9f], True),     # lit0 stack_value
               LocationEntry(0, 0, 0x13a0, 0x13e3, [0x32, 0x9f], True)]     # lit2 stack_value
    assert _select_entry(entries, 0, 0x13a0, entry_pc=0x13a0) == ([0x30, 0x9f], (0x13a0, 0x13a0))
    assert _select_entry(entries, 0, 0x13a0, entry_pc=0x1390) == ([0x32, 0x9f], (0x13a0, 0x13e3))
    assert _select_entry(entries, 0, 0x13b0, entry_pc=0x13a0) == ([0x32, 0x9f], (0x13a0, 0x13e3))
