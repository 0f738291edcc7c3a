"""C's integer rules at plan time: literal types, bit-field promotion,
constant folding, and the undefined operations gs-cgen turns into error
values (docs/reference.md "Arithmetic"). Each case here was a wrong number the live
differential (tests/live/test_arith_differential_live.py) found against gcc."""
from __future__ import annotations

import pytest

from gs_cgen.plan import arith, ir
from tests.unit.plan.test_build import plan


def capture(expr: str):
    """The capture of `print EXPR;` at the fake server's `handle` (fd int,
    size long, req->flags `unsigned int : 3`)."""
    return plan(f"trace handle {{ print {expr}; }}").probes[0].slots[0].capture


@pytest.mark.parametrize("text, ctype", [
    ("2147483647", arith.INT), ("2147483648", arith.LONG),
    ("0x7fffffff", arith.INT), ("0x80000000", arith.UINT), ("0xffffffff", arith.UINT),
    ("0o37777777777", arith.UINT), ("0b1" + "0" * 31, arith.UINT),
    ("0x100000000", arith.LONG), ("9223372036854775807", arith.LONG),
    ("0x8000000000000000", arith.ULONG), ("9223372036854775808", arith.ULONG),
])
def test_a_literal_has_the_type_c_gives_its_spelling(text, ctype):
    # Was: every literal typed as a decimal one, so `-1 == 0xFFFFFFFF` was
    # false (gcc: true, both sides unsigned int).
    assert capture(text).ctype == ctype


def test_hex_literal_makes_the_comparison_unsigned():
    compare = capture("fd == 0xffffffff").value
    assert compare.op == "==" and not compare.signed
    assert isinstance(compare.left, ir.Convert) and not compare.left.signed   # fd as unsigned
    assert compare.right == ir.Const(0xffffffff)


def test_a_bitfield_narrower_than_int_promotes_to_int():
    # Was: `unsigned int flags : 3` computed as unsigned int, so
    # req.flags - 8 printed 4294967295 where gcc prints -1.
    assert capture("req.flags - 8").ctype == arith.INT
    assert arith.operand_type(ir.BitField(ir.Const(0), 0, 31, False), arith.UINT) == arith.INT
    assert arith.operand_type(ir.BitField(ir.Const(0), 0, 32, False), arith.UINT) == arith.UINT


@pytest.mark.parametrize("expr, value", [
    ("1 + 2 * 3", 7), ("-7 / 2", -3), ("-7 % 2", -1), ("7 / -2", -3),
    ("2147483647 + 1", -2**31),              # signed overflow wraps
    ("-2147483648 / -1", 2**31),             # long: no overflow
    ("0x80000000 + 0x80000000", 0), ("0xffffffff * 0xffffffff", 1),
    ("9223372036854775807 + 1", 2**63),      # long wraps to LONG_MIN (u64 form)
    ("0xffffffffffffffff >> 63", 1), ("-1 >> 31", -1), ("1 << 31", -2**31),
    ("-1 < 0xffffffff", 0), ("-1 < 4294967295", 1), ("!0", 1), ("~0", -1),
    ("0 && 1", 0), ("1 || 0", 1), ("2 && 3", 1),
])
def test_constant_expressions_are_folded_with_c_semantics(expr, value):
    assert capture(expr).value == ir.Const(value)


@pytest.mark.parametrize("expr", ["1 / 0", "fd % 0", "fd / (3 - 3)", "size / 0x0"])
def test_division_by_a_constant_zero_is_an_error_value(expr):
    assert capture(expr).value == ir.Fail("GS_STATUS_DIV_BY_ZERO", "division by zero")


@pytest.mark.parametrize("expr", ["1 << 32", "fd >> 32", "size << 64", "fd << -1",
                                  "fd << 0xffffffff", "1 << (40 - 8)"])
def test_a_constant_shift_count_outside_the_width_is_an_error_value(expr):
    # Was: the count masked to 6 bits, then the result narrowed: 1 << 32
    # printed 0, a plausible wrong number.
    assert capture(expr).value == ir.Fail("GS_STATUS_SHIFT_RANGE", "shift count out of range")


def test_a_run_time_shift_count_is_checked_against_the_promoted_width():
    shift = capture("size << fd").value
    assert isinstance(shift, ir.BinaryOp) and shift.op == "<<"
    assert isinstance(shift.right, ir.Below) and shift.right.limit == 64
    shift = capture("fd >> size").value.operand              # narrowed back to int
    assert shift.right.limit == 32 and shift.right.status == "GS_STATUS_SHIFT_RANGE"
    assert capture("fd << 31").value.operand.right == ir.Const(31)   # in range: no check


def test_short_circuit_keeps_a_constant_error_unevaluated():
    assert capture("0 && 1 / 0").value == ir.Const(0)
    assert capture("1 || 1 << 99").value == ir.Const(1)
