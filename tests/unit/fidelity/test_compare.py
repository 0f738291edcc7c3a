"""The fidelity harness's canonical values and verdicts (fidelity/compare.py):
exact, and never calling two different values equal."""
from __future__ import annotations

import struct
from fractions import Fraction

from fidelity import compare
from fidelity.compare import (BOTH_UNAVAILABLE, MATCH, MISMATCH, TRACER_ONLY, TRACER_UNAVAILABLE,
                              from_gdb, from_tracer, verdict, x87_from_bits, x87_from_text)


def ok(value):
    return {"expr": "v", "type": "t", "value": value, "status": "ok"}


def unavailable(reason="unsupported: DW_OP_piece"):
    return {"expr": "v", "type": "t", "value": None, "status": "unavailable",
            "error": f"<error: {reason}>", "reason": reason}


def bits(number: float, size: int) -> str:
    return struct.pack("<f" if size == 4 else "<d", number)[::-1].hex()


def x87_bits(sign: int, exponent: int, significand: int) -> str:
    return f"{(sign << 79) | (exponent << 64) | significand:x}"


POINT = {"k": "struct", "fields": [["x", {"k": "int", "v": 3}], ["y", {"k": "int", "v": -4}]]}


def test_scalars_compare_exactly():
    assert verdict(from_gdb({"k": "int", "v": 7}), from_tracer(ok(7), {"k": "int"})) == (MATCH, [])
    assert verdict(from_gdb({"k": "int", "v": 7}), from_tracer(ok(8), {"k": "int"}))[0] == MISMATCH
    # a bool is not the integer 1
    assert verdict(from_gdb({"k": "int", "v": 1}), from_tracer(ok(True), {"k": "int"}))[0] == MISMATCH


def test_floats_compare_by_their_bits_nan_sign_included():
    shape = {"k": "float", "bits": bits(0.1, 8), "size": 8}
    assert verdict(from_gdb(shape), from_tracer(ok(0.1), shape))[0] == MATCH
    assert verdict(from_gdb(shape), from_tracer(ok(0.1000000000000001), shape))[0] == MISMATCH
    single = {"k": "float", "bits": bits(1 / 3, 4), "size": 4}
    as_float = struct.unpack("<f", struct.pack("<f", 1 / 3))[0]
    assert verdict(from_gdb(single), from_tracer(ok(as_float), single))[0] == MATCH
    negative_nan = {"k": "float", "bits": "fff8000000000000", "size": 8}
    assert from_gdb(negative_nan) == "f:-nan"
    assert verdict(from_gdb(negative_nan), from_tracer(ok("-nan"), negative_nan))[0] == MATCH
    assert verdict(from_gdb(negative_nan), from_tracer(ok("nan"), negative_nan))[0] == MISMATCH


def test_long_double_is_x87_exact():
    three_and_a_quarter = x87_bits(0, 0x4000, 0xD000000000000000)
    assert x87_from_bits(int(three_and_a_quarter, 16)) == x87_from_text("3.25")
    # gdb's 21 significant digits of 1/3 round back to the same 64-bit significand
    third = Fraction(1, 3)
    significand = round(third * 2 ** 65)                # exponent -2: [2**63, 2**64)
    assert x87_from_bits(int(x87_bits(0, 16383 - 2, significand), 16)) == \
        x87_from_text("0.333333333333333333342")
    # the double nearest 1/3 is a different long double: never a match
    assert x87_from_text(repr(1 / 3)) != x87_from_text("0.333333333333333333342")
    assert x87_from_bits(int(x87_bits(1, 0x7FFF, 1 << 63), 16)) == "x87:-inf"


def test_enums_pointers_and_strings():
    assert from_tracer(ok("color::BLUE"), {"k": "enum"}) == from_gdb(
        {"k": "enum", "v": 6, "name": "BLUE"})
    assert from_tracer(ok("color::<9>"), {"k": "enum"}) == from_gdb(
        {"k": "enum", "v": 9, "name": None})
    assert from_tracer(ok({"address": 4096, "type": "int*"}), {"k": "ptr"}) == "p:0x1000"
    text = {"k": "cstr", "ptr": 1, "hex": b"Alice".hex(), "end": "nul"}
    assert from_tracer(ok("Alice"), text) == from_gdb(text) == "str:Alice"
    null = {"k": "cstr", "null": True}
    assert from_tracer({"status": "null_deref", "value": None}, null) == from_gdb(null)
    # a string longer than both tools read is compared on its first characters
    long = {"k": "cstr", "ptr": 1, "hex": (b"x" * 300).hex(), "end": "cap"}
    assert from_tracer({"status": "truncated", "value": "x" * 255}, long) == from_gdb(long)


def test_an_unreadable_string_is_unavailable_not_a_value():
    unreadable = {"k": "cstr", "ptr": 16, "unreadable": True}
    assert from_gdb(unreadable) is None
    failed = {"status": "read_error", "value": None, "error": "<error: read failed at 0x10>"}
    assert verdict(from_gdb(unreadable), from_tracer(failed, unreadable))[0] == BOTH_UNAVAILABLE
    text = {"k": "cstr", "ptr": 16, "hex": b"ro".hex(), "end": "nul"}
    assert verdict(from_gdb(text), from_tracer(failed, text))[0] == TRACER_UNAVAILABLE


def test_struct_leaves_decide_the_verdict():
    gdb = from_gdb(POINT)
    assert verdict(gdb, from_tracer(ok({"x": 3, "y": -4}), POINT)) == (MATCH, [])
    assert verdict(gdb, from_tracer(ok({"x": 3, "y": 4}), POINT)) == (MISMATCH, [".y"])
    assert verdict(gdb, from_tracer(ok({"x": 3, "y": None}), POINT)) == (TRACER_UNAVAILABLE, [".y"])
    assert verdict(gdb, from_tracer(unavailable(), POINT))[0] == TRACER_UNAVAILABLE
    partly = {"k": "struct", "fields": [["x", {"k": "optout"}], ["y", {"k": "int", "v": -4}]]}
    assert verdict(from_gdb(partly), from_tracer(ok({"x": 3, "y": -4}), partly)) == \
        (TRACER_ONLY, [".x"])
    assert verdict(from_gdb(partly), from_tracer(ok({"x": None, "y": -4}), partly))[0] == MATCH


def test_optimized_out_in_gdb():
    gone = {"k": "optout"}
    assert verdict(from_gdb(gone), from_tracer(unavailable(), gone))[0] == BOTH_UNAVAILABLE
    assert verdict(from_gdb(gone), from_tracer(ok(0), gone))[0] == TRACER_ONLY


def test_a_synthetic_pointer_is_compared_by_its_pointee():
    synthetic = {"k": "synthetic", "pointee": {"k": "int", "v": 21}}
    gdb = from_gdb(synthetic)
    assert verdict(gdb, from_tracer(ok({"address": 0, "type": "int*"}), synthetic))[0] == MISMATCH
    assert verdict(gdb, from_tracer(unavailable(), synthetic))[0] == TRACER_UNAVAILABLE
    # what measure.py makes of `<error: synthetic pointer ...>` and `*p`
    assert verdict(gdb, {"synthetic pointer": 21}) == (MATCH, [])
    assert verdict(gdb, {"synthetic pointer": 22}) == (MISMATCH, ["*"])
    assert verdict(gdb, {"synthetic pointer": None}) == (TRACER_UNAVAILABLE, ["*"])


def test_arrays_and_shape_mismatches():
    shape = {"k": "array", "items": [{"k": "int", "v": 1}, {"k": "int", "v": 2}]}
    assert verdict(from_gdb(shape), from_tracer(ok([1, 2]), shape))[0] == MATCH
    assert verdict(from_gdb(shape), from_tracer(ok([1]), shape)) == (TRACER_UNAVAILABLE, ["[1]"])
    assert verdict(from_gdb(shape), from_tracer(ok(12), shape))[0] == MISMATCH


def test_reason_groups_drop_addresses_and_names():
    from fidelity.measure import reason_group
    assert reason_group("no variable 'ev' at main (0x1521)") == \
        reason_group("no variable 'x' at main (0x99)")
    assert reason_group("unsupported: DW_OP_shl, arithmetic, in [DW_OP_breg2 DW_OP_shl]") == \
        "unsupported: DW_OP_shl, arithmetic"
    assert compare.gdb_reads(None) is False


def test_gdb_uninitialized_is_no_value():
    """DW_OP_GNU_uninit: gdb prints `[uninitialized] 5`, bits it does not vouch for."""
    uninit = {"k": "uninit", "shown": {"k": "int", "v": 5}}
    assert from_gdb(uninit) is None
    assert verdict(from_gdb(uninit), from_tracer(unavailable("not initialized"), uninit))[0] == \
        BOTH_UNAVAILABLE
    assert verdict(from_gdb(uninit), from_tracer(ok(5), uninit))[0] == TRACER_ONLY


SOME_11 = {"k": "variant", "name": "Some",
           "payload": {"k": "struct", "fields": [["__0", {"k": "int", "v": 11}]]}}
NONE = {"k": "variant", "name": "None", "payload": {"k": "struct", "fields": []}}


def test_rust_enums_compare_by_variant_and_members():
    assert from_gdb(SOME_11) == {"variant": "Some", "fields": {"__0": 11}}
    same = from_tracer(ok({"variant": "Some", "fields": {"__0": 11}}), SOME_11)
    assert verdict(from_gdb(SOME_11), same) == (MATCH, [])
    other = from_tracer(ok({"variant": "None", "fields": []}), SOME_11)
    assert verdict(from_gdb(SOME_11), other)[0] == MISMATCH
    # a variant without members is still a value gdb reads: its name
    none = from_tracer(ok({"variant": "None", "fields": []}), NONE)
    assert verdict(from_gdb(NONE), none) == (MATCH, [])
    assert verdict(from_gdb(NONE), None)[0] == TRACER_UNAVAILABLE


def test_a_member_of_another_shape_is_a_mismatch_not_a_missing_value():
    # gs-cgen's semantic form (a tuple as an array) where gdb has the layout
    semantic = from_tracer(ok({"variant": "Some", "fields": [11]}), SOME_11)
    assert verdict(from_gdb(SOME_11), semantic) == (MISMATCH, [".fields"])


def test_rust_enumerators_are_named_by_their_last_path_component():
    level = {"k": "enum", "v": 9, "name": "values::Level::High"}
    assert verdict(from_gdb(level), from_tracer(ok("High"), level)) == (MATCH, [])


def test_an_aggregate_gdb_has_no_leaf_of_is_not_read():
    # a Rust String optimized out but for its zero-sized markers ({}), and
    # gs-cgen's <OPTIMIZED_OUT>: neither has it
    string = {"k": "struct", "fields": [["ptr", {"k": "optout"}],
                                        ["_marker", {"k": "struct", "fields": []}]]}
    assert verdict(from_gdb(string), None) == (BOTH_UNAVAILABLE, [])
    assert verdict(from_gdb(string), from_tracer(ok({"ptr": 5, "_marker": {}}), string))[0] \
        == TRACER_ONLY
