"""The expression evaluator on real expression bytes (decoded by
pyelftools, as in a module): every input ends in a VariableLocation, and
the ones it cannot evaluate name the operation."""
from __future__ import annotations

import pytest
from elftools.dwarf.structs import DWARFStructs

from gs_cgen.dwarf.location.callsites import translate_value
from gs_cgen.dwarf.location.expression import (BaseType, ExpressionContext, decode_ops, shape,
                                      translate_ops)
from gs_cgen.dwarf.model import (AtRegisterOffset, Composite, ComputedAddress, ComputedValue,
                                 EntryValue, ImplicitBytes, ImplicitPointer, ImplicitValue,
                                 InRegister, OptimizedOut, Piece, StaticAddress,
                                 UnsupportedLocation, ValueExpression, describe_location)

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


INT32, UINT16, DOUBLE = 0x2a, 0x30, 0x38
BASE_TYPES = {INT32: BaseType(4, True, False), UINT16: BaseType(2, False, False),
              DOUBLE: BaseType(8, True, True)}
CONTEXT = ExpressionContext(lambda: CFA_RSP_8, cfa=lambda: CFA_RSP_8, base_type=BASE_TYPES.get)


def _compile(hex_bytes: str):
    ops = decode_ops(bytes.fromhex(hex_bytes), STRUCTS)
    return ops if isinstance(ops, UnsupportedLocation) else translate_ops(ops, CONTEXT)


def _value(tree):
    return ComputedValue(ValueExpression(tree))


REG5 = ("reg", 5, 0)


@pytest.mark.parametrize("expr, expected", [
    # memory reads, arithmetic on run-time values, comparisons
    ("7578" "06", ComputedAddress(ValueExpression(("deref", ("reg", 5, -8), 8)))),
    ("7500" "9404" "9f", _value(("deref", REG5, 4))),
    ("7500" "7400" "22" "9f", _value(("+", REG5, ("reg", 4, 0)))),
    ("7500" "38" "24" "9f", _value(("<<", REG5, ("const", 8)))),
    ("7500" "3a" "2d" "9f", _value(("<s", REG5, ("const", 10)))),         # lt
    ("7500" "3a" "1b" "9f", _value(("/s", REG5, ("const", 10)))),         # div
    ("7500" "3a" "1d" "9f", _value(("%u", REG5, ("const", 10)))),         # mod
    ("7500" "1f" "9f", _value(("neg", REG5))),
    # constants fold: 10 / -3 truncates toward zero as C and gdb do
    ("3a" "33" "1f" "1b" "9f", ImplicitValue(-3)),
    ("3a" "33" "2d" "9f", ImplicitValue(0)),                              # 10 < 3
    ("31" "28" "0100" "30" "32" "9f", ImplicitValue(2)),                  # lit1 bra +1 (over lit0)
    # typed operations (DWARF 5 section 2.5.1.6)
    ("a5" "05" "2a" "9f", _value(("convert", REG5, 4, True))),            # regval_type int32
    ("7500" "a6" "04" "2a" "9f", _value(("convert", ("deref", REG5, 4), 4, True))),
    ("7500" "a6" "02" "30" "9f", _value(("deref", REG5, 2))),             # uint16: zero-extended
    ("7500" "a8" "30" "a8" "00" "9f", _value(("convert", REG5, 2, False))),  # convert to uint16, generic
    ("a4" "2a" "04" "feffffff" "9f", ImplicitValue(-2)),                  # const_type int32 -2
    # entry values of any register computation
    ("a3" "01" "55" "23" "08" "9f", _value(("+", ("entry", 5), ("const", 8)))),
    ("a3" "03" "a5" "05" "2a" "9f", _value(("convert", ("entry", 5), 4, True))),
    ("a3" "02" "7508" "9f", _value(("+", ("entry", 5), ("const", 8)))),
    # the CFA anywhere
    ("9c" "9f", InRegister(7, 8)),
    ("9c" "23" "10", AtRegisterOffset(7, 24)),
    # implicit values of any size, implicit pointers
    ("9e" "10" + "01" * 16, ImplicitBytes(b"\x01" * 16)),
    ("a0" "2a000000" "08", ImplicitPointer(42, 8)),
    # pieces: registers, memory, values, gaps
    ("50" "9304" "55" "9304", Composite((Piece(32, InRegister(0)), Piece(32, InRegister(5))))),
    ("9304" "50" "9304", Composite((Piece(32, OptimizedOut("optimized out")),
                                    Piece(32, InRegister(0))))),
    ("53" "9308" "9168" "9308", Composite((Piece(64, InRegister(3)),
                                           Piece(64, AtRegisterOffset(7, 8 - 24))))),
    ("3a" "9f" "9304" "50" "9d" "1003", Composite((Piece(32, ImplicitValue(10)),
                                                   Piece(16, InRegister(0), 3)))),
    ("9304" "9304", OptimizedOut("optimized out")),
])
def test_compiled_shapes(expr, expected):
    assert _compile(expr) == expected


@pytest.mark.parametrize("expr, words", [
    # The -O2 float parameter after its register was reused (issue #7.6):
    # DW_OP_entry_value(DW_OP_regval_type xmm0 <type>) DW_OP_stack_value.
    ("a303a5112a9f", ["entry value", "SIMD register xmm0", "not in pt_regs"]),
    ("f303f5112a9f", ["entry value", "SIMD register xmm0"]),
    ("a5" "11" "38" "9f", ["SIMD register xmm0"]),
    ("a4" "38" "08" "0000000000000840" "9f", ["DW_OP_const_type", "floating-point constant"]),
    ("a5" "05" "7f" "9f", ["DW_OP_regval_type", "no base type at DIE offset 0x7f"]),
    ("a3" "03" "7500" "06" "9f", ["DW_OP_entry_value", "read through memory"]),
    ("22", ["DW_OP_plus", "malformed expression"]),
    ("5554", ["DW_OP_reg4", "after a register"]),
    ("e0", ["DW_OP_GNU_push_tls_address", "thread-local storage"]),
    ("a303a5112ea935", ["no decoder for DW_OP_reinterpret (0xa9)"]),
    ("e5", ["no decoder for operation (0xe5)"]),
    ("0310", ["undecodable DWARF expression 0310"]),      # a truncated DW_OP_addr
    ("3a" "30" "1b" "9f", ["DW_OP_div", "division by zero"]),
    ("2f" "fdff", ["DW_OP_skip", "more than 1000 steps"]),  # skip -3: itself, forever
    ("7500" "28" "0100" "30" "9f", ["DW_OP_bra", "control flow on a run-time value"]),
])
def test_unsupported_shapes_say_why(expr, words):
    location = _compile(expr)
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
