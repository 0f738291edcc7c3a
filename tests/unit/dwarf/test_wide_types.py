"""Base types beyond int/float/double, built from gcc's DWARF
(tests/fixtures/wide_types.c and wide_chars.cpp): long double and the other
floating formats, _Complex, __int128, GNU vectors, _Bool, C++ characters.
Type names are checked against gdb's `whatis` of the same global."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import (ArrayType, BoolType, ComplexType, FloatFormat, FloatType,
                                 IntType, PointerType, TypedefType, VectorType,
                                 strip, type_name, type_size)
from tests.prerequisites import require
from tests.unit.conftest import FIXTURES


@pytest.fixture(scope="module")
def module(wide_types_bin):
    return open_module(wide_types_bin)


def _type(module, name):
    return module.find_global(name).type


@pytest.mark.parametrize("name, fmt", [
    ("g_ld_half", FloatFormat.X87_EXTENDED), ("g_f64x", FloatFormat.X87_EXTENDED),
    ("g_q_half", FloatFormat.BINARY128), ("g_float128", FloatFormat.BINARY128),
    ("g_h_half", FloatFormat.BINARY16), ("g_d32", FloatFormat.DECIMAL32),
    ("g_d64", FloatFormat.DECIMAL64), ("g_d128", FloatFormat.DECIMAL128)])
def test_float_formats(module, name, fmt):
    # gcc gives long double, _Float64x and _Float128 the same DWARF
    # (DW_ATE_float, 16 bytes): only the name tells binary128 from x87.
    ctype = strip(_type(module, name))
    assert isinstance(ctype, FloatType) and ctype.format is fmt


def test_long_double_is_16_bytes_holding_x87_extended(module):
    assert _type(module, "g_ld_half") == FloatType("long double", 16, FloatFormat.X87_EXTENDED)
    # the default format of a bare FloatType follows the same rule
    assert FloatType("long double", 16).format is FloatFormat.X87_EXTENDED
    assert FloatType("double", 8).format is FloatFormat.BINARY64


@pytest.mark.parametrize("name, part", [
    ("g_cf", FloatType("float", 4)), ("g_cd", FloatType("double", 8)),
    ("g_cld", FloatType("long double", 16)),
    ("g_cq", FloatType("_Float128", 16, FloatFormat.BINARY128)),
    ("g_ci", IntType("int", 4, True))])      # gcc: DW_ATE_lo_user, named "complex int"
def test_complex_types_have_their_part_type(module, name, part):
    ctype = _type(module, name)
    assert isinstance(ctype, ComplexType) and ctype.part == part
    assert ctype.size == 2 * part.size


def test_int128(module):
    assert _type(module, "g_i128_min") == IntType("__int128", 16, True)
    assert _type(module, "g_u128_max") == IntType("__int128 unsigned", 16, False)


@pytest.mark.parametrize("name, element, count", [
    ("g_vi", IntType("int", 4, True), 4), ("g_vf", FloatType("float", 4), 4),
    ("g_vd", FloatType("double", 8), 2), ("g_vq", IntType("long long int", 8, True), 2),
    ("g_vc", IntType("char", 1, True, is_char=True), 16),
    ("g_vld", FloatType("long double", 16), 2), ("g_v2", IntType("int", 4, True), 2)])
def test_vectors(module, name, element, count):
    ctype = strip(_type(module, name))
    assert ctype == VectorType(element, count)
    assert type_size(ctype) == count * element.size


def test_vector_typedefs_and_struct_members(module, wide_types_bin):
    vf = _type(module, "g_vf")
    assert isinstance(vf, TypedefType) and vf.name == "__m128"
    wide = _type(module, "g_wide")
    gdb = _gdb(wide_types_bin, "ptype/o struct wide")
    layout = re.findall(r"^/\*\s+(\d+)\s+\|\s+(\d+) \*/\s+(.+) (\w+);$", gdb, re.M)
    assert [(m.offset, type_size(m.type), type_name(m.type), m.name) for m in wide.members] \
        == [(int(offset), int(size), ctype, name) for offset, size, ctype, name in layout]
    assert wide.size == int(re.search(r"total size \(bytes\):\s+(\d+)", gdb).group(1))


def test_bool(module):
    assert _type(module, "g_true") == BoolType("_Bool", 1)


def test_type_names_are_gdbs(module, wide_types_bin):
    names = ["g_ld_half", "g_f64x", "g_q_half", "g_float128", "g_h_half", "g_d64", "g_cf",
             "g_cd", "g_cld", "g_cq", "g_i128_min", "g_u128_max", "g_vi", "g_vf", "g_vc",
             "g_v2", "g_x87_snan", "g_wide", "g_true"]
    gdb = re.findall(r"^type = (.*)$", _gdb(wide_types_bin, *(f"whatis {n}" for n in names)),
                     re.M)
    assert [type_name(_type(module, name)) for name in names] == gdb


def _gdb(binary: str, *commands: str) -> str:
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    args = ["gdb", "-nx", "-batch"]
    for command in commands:
        args += ["-ex", command]
    return subprocess.run(args + [binary], capture_output=True, text=True, check=True).stdout


def test_vector_without_typedef_is_spelled_as_gdb_does(module):
    # gdb: whatis g_v2 -> int __attribute__ ((vector_size(2))) (the count)
    assert type_name(_type(module, "g_v2")) == "int __attribute__ ((vector_size(2)))"


@pytest.fixture(scope="module")
def chars(tmp_path_factory):
    if shutil.which("g++") is None:
        require("g++ is not installed")
    out = tmp_path_factory.mktemp("wide_chars") / "wide_chars"
    subprocess.run(["g++", "-std=c++20", "-g", "-O0", "-no-pie", "-o", str(out),
                    str(FIXTURES / "wide_chars.cpp")], check=True)
    return open_module(str(out))


def test_cxx_character_types(chars):
    # char16_t/char32_t are DW_ATE_UTF: characters, but not bytes of a C
    # string, so a char16_t* stays a pointer and char16_t[] an array.
    assert chars.find_global("g_c8").type == IntType("char8_t", 1, False, is_char=True)
    assert chars.find_global("g_c16").type == IntType("char16_t", 2, False)
    assert chars.find_global("g_c32").type == IntType("char32_t", 4, False)
    assert chars.find_global("g_wc").type == IntType("wchar_t", 4, True)
    text = strip(chars.find_global("g_c16_text").type)
    assert isinstance(text, PointerType) and strip(text.target) == IntType("char16_t", 2, False)
    array = chars.find_global("g_c16_array").type
    assert isinstance(array, ArrayType) and array.count == 3
