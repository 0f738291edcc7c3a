"""The expression evaluator on real expression bytes (decoded by
pyelftools, as in a module): every input ends in a VariableLocation, and
the ones it cannot evaluate name the operation."""
from __future__ import annotations

import pytest
from elftools.dwarf.structs import DWARFStructs

from gs_cgen.dwarf.callsites import translate_value
from gs_cgen.dwarf.expression import decode_ops, shape, translate_ops
from gs_cgen.dwarf.model import (AtRegisterOffset, EntryValue, ImplicitValue, InRegister,
                                 OptimizedOut, StaticAddress, UnsupportedLocation,
                                 describe_location)

STRUCTS = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8, dwarf_version=5)
CFA_RSP_8 = (7, 8)


def _locate(hex_bytes: str):
    ops = decode_ops(bytes.fromhex(hex_bytes), STRUCTS)
    if isinstance(ops, UnsupportedLocation):
        return ops
    return translate_ops(ops, lambda: CFA_RSP_8)


@pytest.mark.parametrize("expr, expected", [
    ("a301559f", EntryValue(5)),                          # entry_value(reg5) stack_value
    ("f301559f", EntryValue(5)),                          # the DWARF 4 GNU spelling
    ("9168" "9f", InRegister(7, 8 - 24)),                 # fbreg -24 stack_value: &local
    ("031040000000000000" "9f", StaticAddress(0x4010)),   # addr stack_value: &static
    ("404824" "9f", ImplicitValue(16 << 24)),             # lit16 lit24 shl stack_value
    ("7678" "2304", AtRegisterOffset(6, -4)),             # breg6 -8 plus_uconst 4
    ("7600" "38" "1c", AtRegisterOffset(6, -8)),          # breg6 0 lit8 minus
    ("7700" "12" "13" "9f", InRegister(7, 0)),            # breg7 0 dup drop stack_value
    ("0effffffffffffffff" "9f", ImplicitValue(-1)),       # const8u max stack_value
    ("", OptimizedOut("optimized out")),
    ("50f0", OptimizedOut("not initialized at this PC (DW_OP_GNU_uninit)")),  # reg0 GNU_uninit
])
def test_evaluated_shapes(expr, expected):
    assert _locate(expr) == expected


@pytest.mark.parametrize("expr, words", [
    # The -O2 float parameter after its register was reused (issue #7.6):
    # DW_OP_entry_value(DW_OP_regval_type xmm0 <type>) DW_OP_stack_value.
    ("a303a5112a9f", ["entry value", "SIMD register xmm0", "not in pt_regs"]),
    ("f303f5112a9f", ["entry value", "SIMD register xmm0"]),
    ("a5052a9f", ["DW_OP_regval_type", "typed register value"]),
    ("a301552308" "9f", ["DW_OP_entry_value", "computation on an entry value"]),
    # A typed constant is not its type offset (DW_OP_const_type <die> 8 <bytes>)
    ("a42a08" "0000000000000840" "9f", ["DW_OP_const_type", "typed constant"]),
    ("7578" "06", ["DW_OP_deref", "a read through memory", "DW_OP_breg5 DW_OP_deref"]),
    ("7500" "7400" "22" "9f", ["DW_OP_plus", "sum of two register"]),
    ("22", ["DW_OP_plus", "malformed expression"]),
    ("5554", ["DW_OP_reg5", "inside a longer expression"]),
    ("50930455" "9304", ["DW_OP_piece", "a value in 2 pieces"]),
    ("a0" "2a000000" "00", ["DW_OP_implicit_pointer", "no address"]),
    ("e0", ["DW_OP_GNU_push_tls_address", "thread-local storage"]),
    ("a303a5112ea935", ["no decoder for DW_OP_reinterpret (0xa9)"]),
    ("e5", ["no decoder for operation (0xe5)"]),
    ("0310", ["undecodable DWARF expression 0310"]),      # a truncated DW_OP_addr
    ("2f0000", ["DW_OP_skip", "control flow"]),
])
def test_unsupported_shapes_say_why(expr, words):
    location = _locate(expr)
    assert isinstance(location, UnsupportedLocation), location
    for word in words:
        assert word in location.reason, location.reason
    assert describe_location(location).startswith("unsupported: ")


def test_shape_names_nested_entry_values():
    ops = decode_ops(bytes.fromhex("a303a5112a9f"), STRUCTS)
    assert shape(ops) == "DW_OP_entry_value(DW_OP_regval_type) DW_OP_stack_value"


def test_call_values_do_not_read_a_typed_constant_as_a_number():
    ops = decode_ops(bytes.fromhex("a42a08" "0000000000000840" "9f"), STRUCTS)
    assert translate_value(ops, frozenset()) is None
    ops = decode_ops(bytes.fromhex("3a9f"), STRUCTS)                  # lit10 stack_value
    assert translate_value(ops, frozenset()).tree == ("const", 10)
