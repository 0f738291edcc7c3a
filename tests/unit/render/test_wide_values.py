"""long double, _Float128, _Float16, decimal floats, _Complex, __int128 and
vectors rendered as gdb prints them (docs/rendering.md).

Two kinds of test: globals of tests/fixtures/wide_types.c decoded from the
bytes gcc put in the file and compared with gdb's `print` of the same
global (gdb asked by the test), and byte patterns with gdb 13.1's text
written down, so the number formatting is covered without gcc or gdb.
"""
from __future__ import annotations

import math
import random
import re
import struct
from fractions import Fraction

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import (ComplexType, FloatFormat, FloatType, IntType, VectorType,
                                 type_size)
from gs_cgen.render import floats
from gs_cgen.render.text import format_value, value_json, value_status
from gs_cgen.render.values import ComplexValue, FloatValue, StructValue, decode_object
from gs_cgen.script.ast import FormatKind
from tests.unit.conftest import FIXTURES, gdb_prints

LONG_DOUBLE = FloatType("long double", 16)
FLOAT128 = FloatType("_Float128", 16)
HALF = FloatType("_Float16", 2)


class Globals:
    """The fixture's globals: types from our DWARF reader, bytes from the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.module = open_module(path)

    def value(self, name: str):
        var = self.module.find_global(name)
        size = type_size(var.type)
        if var.section == "bss":
            return decode_object(var.type, bytes(size))
        with open(self.path, "rb") as f:
            f.seek(self.module.vaddr_to_file_offset(var.address))
            return decode_object(var.type, f.read(size))


@pytest.fixture(scope="module")
def globals_(wide_types_bin) -> Globals:
    return Globals(wide_types_bin)


# gcc gives complex integers DW_ATE_lo_user, which gdb 13 does not decode
# ("'g_ci' has unknown type; cast it to its declared type").
GDB_UNKNOWN = ("g_ci",)


def _fixture_globals() -> list[str]:
    """Every scalar-like g_* the fixture defines (unions and the struct are
    compared member by member below)."""
    source = (FIXTURES / "wide_types.c").read_text()
    names = re.findall(r"^[^/(\n]*\b(g_\w+) *=", source, re.M)
    return [n for n in names if not n.startswith(("g_x87_", "g_wide")) and n not in GDB_UNKNOWN]


def _as_ours(gdb_text: str) -> str:
    # Vectors: gdb prints {1, 2}; gs-cgen prints every array-like value [1, 2].
    return gdb_text.replace("{", "[").replace("}", "]")


@pytest.fixture(scope="module")
def gdb(wide_types_bin):
    x87 = [f"{n}.v" for n in ("g_x87_unnormal", "g_x87_pseudo_denormal", "g_x87_pseudo_inf",
                              "g_x87_snan", "g_x87_payload_nan", "g_x87_denorm")]
    members = [f"g_wide.{m}" for m in ("ld", "i128", "u128", "cd", "cld", "vi", "vf", "q",
                                       "h", "flag")]
    return gdb_prints(wide_types_bin, *_fixture_globals(), *x87, *members)


@pytest.mark.parametrize("name", _fixture_globals())
def test_global_prints_as_gdb_prints_it(globals_, gdb, name):
    assert format_value(globals_.value(name)) == _as_ours(gdb[name])


@pytest.mark.parametrize("name", ["g_x87_unnormal", "g_x87_pseudo_denormal",
                                  "g_x87_pseudo_inf", "g_x87_snan", "g_x87_payload_nan",
                                  "g_x87_denorm"])
def test_x87_encodings_no_arithmetic_makes(globals_, gdb, name):
    # unnormals, pseudo-denormals, pseudo-infinities: <invalid float value>
    union = globals_.value(name)
    assert isinstance(union, StructValue)
    assert format_value(dict(union.fields)["v"]) == gdb[f"{name}.v"]


def test_struct_members_print_as_gdb_prints_them(globals_, gdb):
    fields = dict(globals_.value("g_wide").fields)
    for member in ("ld", "i128", "u128", "cd", "cld", "vi", "vf", "q", "h", "flag"):
        assert format_value(fields[member]) == _as_ours(gdb[f"g_wide.{member}"]), member


def test_whole_struct(globals_):
    assert format_value(globals_.value("g_wide")) == (
        "wide { tag: 119, ld: 2.5, i128: -1267650600228229401496703205369, u128: 12345, "
        "cd: 1.5 + 2i, cld: -0.5 + 0.100000000000000000001i, vi: [5, 6, 7, 8], "
        "vf: [0.5, 1.5, 2.5, 3.5], q: 0.25, h: 0.5, flag: true }")


# --- JSON ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("g_ld_half", 1.5),                          # exact in a double: a number
    ("g_ld_1e20", 1e20),
    ("g_ld_third", "0.333333333333333333342"),   # not exact: gdb's text
    ("g_ld_huge", "9.99999999999999999997e+3999"),
    ("g_ld_nan", "nan(0xc000000000000000)"),
    ("g_ld_negzero", -0.0),
    ("g_q_third", "0.333333333333333333333333333333333317"),
    ("g_h_tenth", 0.0999755859375),              # every _Float16 is exact in a double
    ("g_d64", "0.1"), ("g_d32", 1.5),
    ("g_i128_min", -2**127), ("g_u128_max", 2**128 - 1),
    ("g_cd", {"real": 1.5, "imag": -0.25}),
    ("g_cld", {"real": "0.333333333333333333342", "imag": 2.0}),
    ("g_vi", [1, -2, 3, 4]), ("g_vc", [97, 98, 1, 2, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]),
    ("g_vld", [1.5, "-0.100000000000000000001"]), ("g_true", True)])
def test_json_values(globals_, name, expected):
    value = globals_.value(name)
    json_value = value_json(value)
    assert json_value == expected and type(json_value) is type(expected)
    assert value_status(value) == "ok"
    if isinstance(expected, float):
        assert Fraction(expected) == floats.exact_value(value.raw, value.format)


def test_negative_zero_keeps_its_sign_in_json(globals_):
    assert math.copysign(1.0, value_json(globals_.value("g_ld_negzero"))) == -1.0


# --- format specifiers ----------------------------------------------------------------

@pytest.mark.parametrize("name, kind, text", [
    # gdb: print/x g_ld_half -> 0x3fffc000000000000000 (the 10 bytes that hold the value)
    ("g_ld_half", FormatKind.HEX, "3fffc000000000000000"),
    ("g_ld_half", FormatKind.POINTER, "0x3fffc000000000000000"),
    # gdb: print/x g_i128_neg -> 0xffffffffffffffffffffffffffffffff
    ("g_i128_neg", FormatKind.HEX, "f" * 32),
    ("g_u128_mixed", FormatKind.HEX_UPPER, "DEADBEEF0123456789ABCDEF"),
    # gdb: print/x g_q_half -> 0x3fff8000000000000000000000000000
    ("g_q_half", FormatKind.HEX, "3fff8000000000000000000000000000"),
    ("g_h_half", FormatKind.HEX, "3e00"),        # gdb: print/x g_h_half -> 0x3e00
    ("g_cd", FormatKind.HEX, "3ff8000000000000 + bfd0000000000000i"),
    ("g_vi", FormatKind.HEX, "[1, fffffffe, 3, 4]"),  # gdb: print/x g_vi -> {0x1, 0xfffffffe, 0x3, 0x4}
])
def test_format_specifiers(globals_, name, kind, text):
    assert format_value(globals_.value(name), kind) == text


# --- byte patterns with gdb 13.1's text (no compiler or gdb needed) -------------------
# The bytes are gcc's for the fixture's globals (g_ld_third, g_q_third, g_d32, ...) and
# a few hand-made x87 encodings; each text is what gdb 13.1 printed for them.

def x87(sign_exponent: int, mantissa: int) -> bytes:
    """An x87 long double's 16 bytes: mantissa (integer bit included), then
    sign and exponent, then 6 bytes of padding (garbage on purpose)."""
    return mantissa.to_bytes(8, "little") + sign_exponent.to_bytes(2, "little") + b"\xa5" * 6


@pytest.mark.parametrize("raw, text", [
    (x87(0x3FFF, 0xC000000000000000), "1.5"),
    (x87(0x3FFD, 0xAAAAAAAAAAAAAAAB), "0.333333333333333333342"),        # 1.0L/3
    (x87(0x3FFB, 0xCCCCCCCCCCCCCCCD), "0.100000000000000000001"),        # 0.1L
    (x87(0x4000, 0xC90FDAA22168C235), "3.14159265358979323851"),         # M_PIl
    (x87(0x8000, 0), "-0"),
    (x87(0x7FFF, 0x8000000000000000), "inf"),
    (x87(0xFFFF, 0x8000000000000000), "-inf"),
    (x87(0x7FFF, 0xC000000000000000), "nan(0xc000000000000000)"),
    (x87(0xFFFF, 0xC000000000000123), "-nan(0xc000000000000123)"),
    (x87(0x7FFF, 0x8000000000000001), "nan(0x8000000000000001)"),        # signalling
    (x87(0, 1), "3.64519953188247460253e-4951"),                          # LDBL_TRUE_MIN
    (x87(0x7FFE, 0xFFFFFFFFFFFFFFFF), "1.18973149535723176502e+4932"),   # LDBL_MAX
    (x87(0x0001, 0x8000000000000000), "3.36210314311209350626e-4932"),   # LDBL_MIN
    (x87(0x3FFF, 0x4000000000000000), "<invalid float value>"),          # unnormal
    (x87(0, 0x8000000000000001), "<invalid float value>"),               # pseudo-denormal
    (x87(0x7FFF, 0), "<invalid float value>"),                           # pseudo-infinity
])
def test_x87_patterns(raw, text):
    assert format_value(decode_object(LONG_DOUBLE, raw)) == text


def test_x87_padding_is_ignored():
    one = x87(0x3FFF, 0x8000000000000000)
    assert format_value(decode_object(LONG_DOUBLE, one[:10] + bytes(6))) == "1"
    assert format_value(decode_object(LONG_DOUBLE, one), FormatKind.HEX) == \
        "3fff8000000000000000"


@pytest.mark.parametrize("bits, text", [
    (0x3FFD5555555555555555555555555555, "0.333333333333333333333333333333333317"),
    (0x3FFB999999999999999999999999999A, "0.100000000000000000000000000000000005"),
    (0x7FFF8000000000000000000000000000, "nan(0x8000000000000000000000000000)"),
    (0x00000000000000000000000000000001, "6.47517511943802511092443895822764655e-4966"),
    (0x80000000000000000000000000000000, "-0"),
])
def test_binary128_patterns(bits, text):
    assert format_value(decode_object(FLOAT128, bits.to_bytes(16, "little"))) == text


@pytest.mark.parametrize("bits, text", [
    (0x2E66, "0.099976"), (0x0001, "5.9605e-08"), (0x7BFF, "65504"), (0x7E00, "nan(0x200)"),
    (0xFC00, "-inf")])
def test_binary16_patterns(bits, text):
    assert format_value(decode_object(HALF, bits.to_bytes(2, "little"))) == text


@pytest.mark.parametrize("size, bits, text", [
    (4, 0x3200000F, "1.5"), (8, 0x31A0000000000001, "0.1"),
    (8, 0x5740000000000001, "1E+300"),
    (4, 0x6C58967F, "9999.999"),        # BID32 with the coefficient's second form
    (8, 0x7800000000000000, "Infinity"), (8, 0x7C00000000000000, "NaN"),
])
def test_decimal_patterns(size, bits, text):
    name = {4: "_Decimal32", 8: "_Decimal64"}[size]
    ctype = FloatType(name, size, {4: FloatFormat.DECIMAL32, 8: FloatFormat.DECIMAL64}[size])
    assert format_value(decode_object(ctype, bits.to_bytes(size, "little"))) == text


def test_complex_and_vector_patterns():
    cld = ComplexType("complex long double", 32, LONG_DOUBLE)
    raw = x87(0xBFFE, 0x8000000000000000) + x87(0x3FFB, 0xCCCCCCCCCCCCCCCD)
    value = decode_object(cld, raw)
    assert isinstance(value, ComplexValue)
    assert format_value(value) == "-0.5 + 0.100000000000000000001i"
    vector = VectorType(IntType("char", 1, True, is_char=True), 4)
    # a vector of chars is numbers (gdb: {97, 98, 0, -1}), not a string
    assert format_value(decode_object(vector, b"ab\x00\xff")) == "[97, 98, 0, -1]"


def test_complex_integer(globals_):
    # C11 6.2.5p13: a complex value is laid out as an array of two parts,
    # real first; gcc's bytes for 3 - 4i are 03 00 00 00 fc ff ff ff.
    value = globals_.value("g_ci")
    assert format_value(value) == "3 + -4i"
    assert value_json(value) == {"real": 3, "imag": -4}


def test_truncated_copies():
    # A capped copy never shows a plausible number for a partial value.
    assert format_value(decode_object(LONG_DOUBLE, b"\0" * 8)) == "... <truncated>"
    vector = VectorType(IntType("int", 4, True), 4)
    assert format_value(decode_object(vector, struct.pack("<3i", 1, 2, 3))) == \
        "[1, 2, 3, ... <truncated>]"


def test_unsupported_float_format_shows_its_type_and_bytes():
    imaginary = FloatType("imaginary float", 4, FloatFormat.UNKNOWN)
    value = decode_object(imaginary, b"\x00\x00\xc0\x3f")
    assert format_value(value) == "<unsupported type imaginary float: 00 00 c0 3f>"
    assert value_status(value) == "unavailable" and value_json(value) is None


def test_float_and_double_keep_the_contracts_percent_g():
    # CONTRACT.md: float, double = C's %g (gdb would print 0.100000001 and
    # 0.10000000000000001).
    assert format_value(decode_object(FloatType("float", 4), struct.pack("<f", 0.1))) == "0.1"
    assert format_value(decode_object(FloatType("double", 8), struct.pack("<d", 0.1))) == "0.1"
    cd = ComplexType("complex double", 16, FloatType("double", 8))
    assert format_value(decode_object(cd, struct.pack("<2d", 0.1, -1e300))) == "0.1 + -1e+300i"


def test_printf_g_matches_c_on_random_doubles():
    # Python's %-formatting of a float is correctly rounded, as glibc's is.
    rng = random.Random(8)
    for _ in range(3000):
        number = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if not math.isfinite(number):
            continue
        for precision in (1, 6, 17, 21):
            expected = "%.*g" % (precision, abs(number))
            assert floats.printf_g(Fraction(abs(number)), precision) == expected


def test_float_value_number_is_the_nearest_double():
    value = decode_object(LONG_DOUBLE, x87(0x3FFD, 0xAAAAAAAAAAAAAAAB))
    assert isinstance(value, FloatValue) and value.number == 1 / 3
    huge = decode_object(LONG_DOUBLE, x87(0x7FFE, 0xFFFFFFFFFFFFFFFF))
    assert huge.number == math.inf
