"""Value trees and their text/JSON forms (docs/rendering.md), decoded from
globals of tests/fixtures/render_types.c.

The fixture is compiled with gcc and each global's initialised bytes are
read from the binary, so struct layout, bitfield placement and float
encodings come from the compiler rather than from the test's own packing.
"""
from __future__ import annotations

import math
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import (ArrayType, BoolType, EnumType, FloatType, IntType, PointerType,
                                 TypedefType, type_name, type_size)
from gs_cgen.render.status import ValueStatus
from gs_cgen.render.text import format_dump, format_value, value_json, value_status
from gs_cgen.render.values import (BoolValue, EnumValue, IntValue, PointerValue, StringValue,
                                   decode_cstring, decode_integer, decode_object, error_value)
from gs_cgen.script.ast import FormatKind

SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "render_types.c"
# -no-pie: pointer initialisers are stored as link-time addresses in .data.
BUILDS = {"dwarf5": ["-g", "-O0", "-no-pie"], "dwarf4": ["-gdwarf-4", "-O0", "-no-pie"]}
INT = IntType("int", 4, True)


class Target:
    """A compiled fixture: types from our DWARF reader, bytes from the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.module = open_module(path)

    def type(self, name: str):
        return self.module.find_global(name).type

    def address(self, name: str) -> int:
        return self.module.find_global(name).address

    def bytes(self, name: str) -> bytes:
        var = self.module.find_global(name)
        size = type_size(var.type)
        if var.section == "bss":
            return bytes(size)
        with open(self.path, "rb") as f:
            f.seek(self.module.vaddr_to_file_offset(var.address))
            return f.read(size)

    def value(self, name: str, cap: int | None = None):
        data = self.bytes(name)
        return decode_object(self.type(name), data if cap is None else data[:cap],
                             address=self.address(name))

    def text(self, name: str, kind: FormatKind = FormatKind.DEFAULT, cap: int | None = None):
        return format_value(self.value(name, cap), kind)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Target]:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("render_types")
    targets = {}
    for name, flags in BUILDS.items():
        binary = out / name
        subprocess.run(["gcc", *flags, "-o", str(binary), str(SOURCE)], check=True)
        targets[name] = Target(str(binary))
    return targets


@pytest.fixture(scope="module")
def t(builds) -> Target:
    return builds["dwarf5"]


# --- one test per row of the rendering table -------------------------------

@pytest.mark.parametrize("name, text", [
    ("g_int", "-42"), ("g_ull", "18000000000000000000"), ("g_char", "65"),
    ("g_uchar", "200"), ("g_short", "-7")])
def test_integers_are_decimal(t, name, text):
    assert t.text(name) == text


def test_bool_any_nonzero_byte_is_true(t):
    assert t.text("g_bool") == "true"
    bool_type = t.type("g_bool")
    assert format_value(decode_object(bool_type, b"\x02")) == "true"
    assert format_value(decode_object(bool_type, b"\x00")) == "false"


@pytest.mark.parametrize("number, text", [
    (3.5, "3.5"), (1e10, "1e+10"), (-0.0, "-0"), (math.inf, "inf"), (-math.inf, "-inf"),
    (math.nan, "nan"), (-math.nan, "-nan"), (123456789.0, "1.23457e+08")])
def test_double_is_c_percent_g(number, text):
    assert format_value(decode_object(FloatType("double", 8), struct.pack("<d", number))) == text


def test_float_globals_and_long_double(t):
    assert t.text("g_float") == "3.14"
    assert t.text("g_double") == "1e+10"
    # long double renders as gdb prints it (tests/unit/render/test_wide_values.py)
    assert t.text("g_ldouble") == "2.5"
    assert value_status(t.value("g_ldouble")) == "ok"


@pytest.mark.parametrize("name, text", [
    ("g_name", '"Alice"'),                     # stops at the first NUL
    ("g_full", '"abcd"'),                      # no NUL: all N bytes
    ("g_odd", '"q\\"\\\\\\x0a\\x7f"'),         # ", \, newline, DEL escaped
    ("g_names", '["ab", "cde"]')])
def test_char_arrays_are_quoted_strings(t, name, text):
    assert t.text(name) == text


def test_top_level_char_pointer_string(t):
    ctype = t.type("g_str")
    assert format_value(decode_cstring(ctype, 0x4000, b"Alice\0", False)) == '"Alice"'
    capped = decode_cstring(ctype, 0x4000, b"aaaa\0", True)
    assert format_value(capped) == '"aaaa"... <truncated>'
    assert value_status(capped) == "truncated"
    null = decode_cstring(ctype, 0, b"", False)
    assert format_value(null) == "<error: null pointer dereference>"
    assert value_status(null) == "null_deref"


def test_pointers(t):
    assert t.text("g_null_ptr") == "NULL (struct point*)"
    fn = t.text("g_fn")
    assert re.fullmatch(r"0x[0-9a-f]+ \(function\*\)", fn)
    line = t.text("g_line")
    assert f"next: 0x{t.address('g_point'):x} (struct point*)" in line
    assert f"fn: {fn}" in line
    assert re.search(r"label: 0x[0-9a-f]+ \(const char\*\)", line)   # not followed


def test_pointer_through_typedef_names_the_pointee():
    point_ptr = TypedefType("ptr_t", PointerType(lambda: INT))
    assert format_value(decode_integer(point_ptr, 0x10)) == "0x10 (int*)"


@pytest.mark.parametrize("name, text", [
    ("g_point", "point { x: 3, y: 4 }"),
    ("g_point_t", "point { x: 5, y: 6 }"),           # the tag, not the typedef
    ("g_pair", "pair_t { a: 7, b: -8 }"),            # typedef'd anonymous struct
    ("g_anon", "{ x: 9 }")])                          # anonymous, no typedef
def test_struct_names(t, name, text):
    assert t.text(name) == text


def test_nested_struct(t):
    text = t.text("g_line")
    assert text.startswith('line { a: point { x: 1, y: 2 }, b: point { x: 3, y: 4 }, name: "ln", ')
    assert text.endswith(", weight: 0.5, status: Status::INACTIVE, level: level_t::HIGH }")


def test_unions_decode_every_member_from_the_same_bytes(t):
    # CONTRACT.md's example shows `f: 1.4e-45`; C's %g of that float is 1.4013e-45.
    assert t.text("g_data") == "union Data { i: 1, f: 1.4013e-45 }"
    assert t.text("g_word") == 'union word_t { b: "abcd", u: 1684234849 }'


def test_anonymous_members_are_flattened(t):
    assert t.text("g_tagged") == "tagged { kind: 2, i: 1, f: 1.4013e-45, lo: 10, hi: 20 }"


@pytest.mark.parametrize("name, text", [
    ("g_status", "Status::ACTIVE"), ("g_status_bad", "Status::<7>"),
    ("g_status_neg", "Status::FAILED"), ("g_level", "level_t::HIGH")])
def test_enums(t, name, text):
    assert t.text(name) == text


def test_anonymous_enum():
    anon = EnumType(None, 4, False, (("A", 0),))
    assert format_value(decode_integer(anon, 0)) == "enum::A"
    assert format_value(decode_integer(anon, 7)) == "enum::<7>"


@pytest.mark.parametrize("name, text", [
    ("g_matrix", "[[1, 2, 3], [4, 5, 6]]"),
    ("g_points", "[point { x: 1, y: 2 }, point { x: 3, y: 4 }]")])
def test_arrays(t, name, text):
    assert t.text(name) == text


@pytest.mark.parametrize("build", BUILDS)
def test_bitfields_signed_and_unsigned(builds, build):
    """Extraction uses StructMember.bit_offset, built from DW_AT_data_bit_offset
    (DWARF 5) or MSB-first DW_AT_bit_offset (DWARF 4)."""
    target = builds[build]
    assert target.text("g_flags") == (
        "flags { tag: 171, low: 5, neg: -3, tiny: -2, on: true, st: Status::INACTIVE, "
        "wide: 1099511627775, swide: -4294967295 }")
    # packed: `straddle` crosses three bytes, `rest` starts mid-byte.
    assert target.text("g_packed") == "packed_bits { c: 122, straddle: 703710, rest: -1000 }"


def test_depth_limit(t):
    assert t.text("g_deep") == "l1 { two: l2 { three: l3 { four: l4 { five: {...} } } } }"
    assert value_json(t.value("g_deep")) == {"two": {"three": {"four": {"five": None}}}}


def test_optimized_out_and_errors():
    cases = [(error_value(ValueStatus.OPTIMIZED_OUT), "<OPTIMIZED_OUT>", "optimized_out"),
             (error_value(ValueStatus.NULL_DEREF), "<error: null pointer dereference>",
              "null_deref"),
             (error_value(ValueStatus.READ_ERROR, 0x5000), "<error: read failed at 0x5000>",
              "read_error"),
             (error_value(ValueStatus.ACCESS_ERROR, 0x10), "<error: read failed at 0x10>",
              "read_error"),
             (error_value(ValueStatus.OFFSETS_UNAVAILABLE), "<error: offsets unavailable>",
              "offsets_unavailable"),
             (error_value(ValueStatus.UNAVAILABLE, detail="no location"), "<error: no location>",
              "unavailable")]
    for value, text, status in cases:
        assert [format_value(value, k) for k in FormatKind] == [text] * len(FormatKind)
        assert (value_status(value), value_json(value)) == (status, None)
    with pytest.raises(ValueError):
        error_value(ValueStatus.OK)


# --- truncation --------------------------------------------------------------

@pytest.mark.parametrize("name, cap, text", [
    ("g_points", 12, "[point { x: 1, y: 2 }, point { x: 3, ... <truncated> }, ... <truncated>]"),
    ("g_matrix", 16, "[[1, 2, 3], [4, ... <truncated>], ... <truncated>]"),
    ("g_line", 12, "line { a: point { x: 1, y: 2 }, b: point { x: 3, ... <truncated> }, "
                   "... <truncated> }"),
    ("g_name", 3, '"Ali"... <truncated>'),
    ("g_name", 6, '"Alice"'),                          # the NUL made it: complete
    ("g_int", 2, "... <truncated>")])
def test_truncated_objects(t, name, cap, text):
    value = t.value(name, cap)
    assert format_value(value) == text
    assert value_status(value) == ("ok" if cap == 6 else "truncated")


def test_unbounded_array_uses_the_truncated_flag():
    flexible = ArrayType(INT, None)
    data = struct.pack("<ii", 1, 2)
    assert format_value(decode_object(flexible, data, truncated=True)) == "[1, 2, ... <truncated>]"
    assert format_value(decode_object(flexible, data)) == "[1, 2]"


# --- format specifiers ---------------------------------------------------------

@pytest.mark.parametrize("kind, text", [
    (FormatKind.DEFAULT, "-42"), (FormatKind.HEX, "ffffffd6"), (FormatKind.HEX_UPPER, "FFFFFFD6"),
    (FormatKind.POINTER, "0xffffffd6"), (FormatKind.STRING, "\\xd6\\xff\\xff\\xff")])
def test_integer_format_kinds(t, kind, text):
    assert t.text("g_int", kind) == text


def test_integer_as_string_stops_at_nul():
    assert format_value(decode_integer(INT, 0x636261), FormatKind.STRING) == "abc"


def test_other_scalars_under_hex(t):
    assert t.text("g_bool", FormatKind.HEX) == "1"
    assert t.text("g_status_neg", FormatKind.HEX) == "fffffffe"
    assert t.text("g_float", FormatKind.HEX) == "4048f5c3"          # IEEE bits of 3.14f
    assert t.text("g_pair", FormatKind.HEX) == "pair_t { a: 7, b: fff8 }"


def test_pointer_format_kinds(t):
    address = t.address("g_point")
    pointer = decode_integer(t.type("g_null_ptr"), address)
    assert format_value(pointer, FormatKind.HEX) == f"{address:x}"
    assert format_value(pointer, FormatKind.HEX_UPPER) == f"{address:X}"
    assert format_value(pointer, FormatKind.POINTER) == f"0x{address:x}"
    # {:s} needs the followed string (a StringValue); a bare pointer stays a pointer.
    assert format_value(pointer, FormatKind.STRING) == f"0x{address:x} (struct point*)"


@pytest.mark.parametrize("kind, whole, capped", [
    (FormatKind.HEX, "416c696365", "416c69 ... <truncated>"),
    (FormatKind.HEX_UPPER, "416C696365", "416C69 ... <truncated>"),
    (FormatKind.STRING, "Alice", "Ali ... <truncated>")])
def test_string_format_kinds(t, kind, whole, capped):
    assert t.text("g_name", kind) == whole
    assert t.text("g_name", kind, cap=3) == capped


def test_string_pointer_kind_is_the_address(t):
    assert t.text("g_name", FormatKind.POINTER) == f"0x{t.address('g_name'):x}"
    cstring = decode_cstring(t.type("g_str"), 0x4010, b"Bob\0", False)
    assert format_value(cstring, FormatKind.POINTER) == "0x4010"
    assert format_value(StringValue(t.type("g_name"), b"x"), FormatKind.POINTER) == \
        "<error: address unavailable>"


@pytest.mark.parametrize("data, style, truncated, text", [
    (b"\xde\xad\xbe\xef", "x", False, "de ad be ef"),
    (b"\xde\xad\xbe\xef", "X", False, "DE AD BE EF"),
    (b"\xde\xad", "x", True, "de ad ... <truncated>"),
    (b"hi\x01\"\\\0zz", "s", False, 'hi\\x01"\\'),
    (b"abc", "s", True, "abc ... <truncated>"),
    (b"", "x", False, ""),
    (b"", "s", True, "... <truncated>")])
def test_format_dump(data, style, truncated, text):
    assert format_dump(data, style, truncated) == text


def test_format_dump_rejects_unknown_style():
    with pytest.raises(ValueError):
        format_dump(b"", "d", False)


# --- decode_integer --------------------------------------------------------------

UCHAR = IntType("unsigned char", 1, False, True)
SCHAR = IntType("signed char", 1, True, True)
UINT = IntType("unsigned int", 4, False)
BOOL = BoolType("_Bool", 1)
ENUM = EnumType("E", 4, False, (("B", 3),))


@pytest.mark.parametrize("ctype, number, expected", [
    (None, 2**64 - 1, IntValue(None, -1)),
    (UCHAR, 300, IntValue(UCHAR, 44)),
    (SCHAR, 200, IntValue(SCHAR, -56)),
    (UINT, -1, IntValue(UINT, 2**32 - 1)),
    (BOOL, 256, BoolValue(BOOL, True)),              # C: != 0, not the low byte
    (ENUM, 3, EnumValue(ENUM, 3, "B"))])
def test_decode_integer_wraps_to_the_type(ctype, number, expected):
    assert decode_integer(ctype, number) == expected


def test_decode_integer_through_typedef_and_pointer():
    size_t = TypedefType("size_t", IntType("long unsigned int", 8, False))
    assert format_value(decode_integer(size_t, -1)) == str(2**64 - 1)
    pointer = decode_integer(PointerType(lambda: INT), 0x1000)
    assert isinstance(pointer, PointerValue) and pointer.address == 0x1000


# --- JSON ------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("g_int", -42), ("g_bool", True), ("g_double", 1e10), ("g_status", "Status::ACTIVE"),
    ("g_status_bad", "Status::<7>"), ("g_name", "Alice"),
    ("g_null_ptr", {"address": 0, "type": "struct point*"}),
    ("g_point", {"x": 3, "y": 4}), ("g_data", {"i": 1, "f": struct.unpack("<f", b"\1\0\0\0")[0]}),
    ("g_matrix", [[1, 2, 3], [4, 5, 6]]), ("g_ldouble", 2.5)])
def test_json_values(t, name, expected):
    assert value_json(t.value(name)) == expected


def test_json_pointer_string_and_float_edges(t):
    line = value_json(t.value("g_line"))
    assert line["next"] == {"address": t.address("g_point"), "type": "struct point*"}
    assert line["fn"]["type"] == "function*" and line["fn"]["address"] != 0
    assert line["a"] == {"x": 1, "y": 2} and line["name"] == "ln"
    assert value_json(decode_cstring(t.type("g_str"), 1, b"a\xffb", False)) == "a\\xffb"
    inf = decode_object(FloatType("double", 8), struct.pack("<d", -math.inf))
    assert value_json(inf) == "-inf"
    assert value_json(t.value("g_points", cap=12)) == [{"x": 1, "y": 2}, {"x": 3}]
    assert value_status(t.value("g_points")) == "ok"


# --- type names ------------------------------------------------------------------

@pytest.mark.parametrize("name, spelled", [
    ("g_matrix", "int[2][3]"), ("g_names", "char[2][4]"), ("g_points", "struct point[2]"),
    ("g_fn", "function*"), ("g_str", "const char*"), ("g_point_t", "point_t")])
def test_type_names(t, name, spelled):
    assert type_name(t.type(name)) == spelled


def test_statuses_outside_the_contract_list_still_render_as_errors():
    from enum import Enum
    other = Enum("OtherStatus", {"DIV": "division_by_zero"}).DIV
    value = error_value(other)
    assert (format_value(value), value_status(value)) == ("<error: division by zero>",
                                                          "unavailable")
