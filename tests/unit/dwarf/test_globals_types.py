"""Globals, statics and named types."""
from __future__ import annotations

import re
import subprocess

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import (ArrayType, BoolType, EnumType, FunctionType, IntType, PointerType,
                                 QualifiedType, StructType, TypedefType, strip, type_name)

BUILDS = ("O0", "O2", "O0-dwarf4", "O2-dwarf4")
GLOBALS = {
    "g_int": ("int", "data"),
    "g_long": ("long int", "data"),
    "g_unsigned": ("unsigned int", "data"),
    "g_char": ("char", "data"),
    "g_bool": ("_Bool", "data"),
    "g_point": ("struct point", "data"),
    "g_color": ("enum color", "data"),
    "g_name": ("const char*", "data"),
    "g_flags": ("struct flags", "data"),
    "g_number": ("union number", "bss"),
    "g_op": ("binop_fn", "bss"),
    "g_point_ptr": ("point_t*", "data"),
}


@pytest.mark.parametrize("build", BUILDS)
def test_globals_have_types_sections_and_gdb_addresses(binaries, gdb_text, build):
    module = open_module(binaries[build])
    names = list(GLOBALS)
    text = gdb_text(binaries[build], *(f"info address {n}" for n in names))
    addresses = [int(a, 16) for a in re.findall(r"static storage at address (0x[0-9a-f]+)", text)]
    for name, address in zip(names, addresses):
        var = module.find_global(name)
        assert var is not None and var.address == address, name
        assert (type_name(var.type), var.section) == GLOBALS[name], name


def test_file_and_function_statics(binaries):
    module = open_module(binaries["O0"])
    s_static = module.find_global("s_static")
    assert (type_name(s_static.type), s_static.section) == ("int", "data")
    calls = module.find_global("calls")          # `static int calls;` inside scale()
    assert calls.section == "bss" and calls.decl_line == 53
    # gcc names the function-level static `calls.0` in .symtab
    nm = subprocess.run(["nm", module.path], capture_output=True, text=True, check=True).stdout
    assert calls.address == int(re.search(r"^([0-9a-f]+) b calls\.\d+$", nm, re.M).group(1), 16)
    assert module.find_global("no_such_global") is None
    assert {"g_int", "s_static", "calls"} <= set(module.global_names())


def test_base_type_flags(binaries):
    module = open_module(binaries["O0"])
    assert module.find_global("g_char").type == IntType("char", 1, True, is_char=True)
    assert module.find_global("g_bool").type == BoolType("_Bool", 1)
    assert module.find_global("g_unsigned").type == IntType("unsigned int", 4, False)
    assert module.find_global("g_long").type == IntType("long int", 8, True)


def test_array_dimensions_nest_outermost_first(binaries):
    matrix = open_module(binaries["O0"]).find_global("g_matrix").type
    assert isinstance(matrix, ArrayType) and matrix.count == 2
    assert matrix.element == ArrayType(IntType("int", 4, True), 3)
    assert matrix.size == 24


@pytest.mark.parametrize("build", ("O0", "O0-dwarf4"))
def test_struct_members_and_bitfields(binaries, build):
    """DWARF 5 DW_AT_data_bit_offset and DWARF 4 DW_AT_bit_offset (MSB
    numbering) both end up as LSB-first offsets in the storage unit."""
    flags = open_module(binaries[build]).find_global("g_flags").type
    got = [(m.name, m.offset, m.bit_size, m.bit_offset) for m in flags.members]
    assert got == [("tag", 0, None, None), ("low", 0, 3, 8), ("high", 0, 5, 11),
                   ("neg", 0, 4, 16), ("tail", 8, None, None)]
    assert flags.size == 16


def test_union_enum_and_function_pointer(binaries):
    module = open_module(binaries["O0"])
    number = module.find_global("g_number").type
    assert isinstance(number, StructType) and number.kind == "union"
    assert [(m.name, m.offset) for m in number.members] == [("i", 0), ("d", 0)]
    color = module.find_global("g_color").type
    assert isinstance(color, EnumType)
    assert color.enumerators == (("RED", 0), ("GREEN", 5), ("BLUE", 6))
    op = module.find_global("g_op").type
    assert isinstance(op, TypedefType) and isinstance(op.target, PointerType)
    assert isinstance(strip(op.target.target), FunctionType)
    name = module.find_global("g_name").type
    assert isinstance(name.target, QualifiedType) and name.target.qualifier == "const"


def test_find_type_spellings(binaries):
    module = open_module(binaries["O2"])
    point = module.find_type("struct point")
    assert isinstance(point, StructType) and [m.name for m in point.members] == ["x", "y"]
    assert strip(module.find_type("point_t")) is point          # cached by DIE offset
    pointer = module.find_type("struct point *")
    assert isinstance(pointer, PointerType) and pointer.target is point
    assert module.find_type("int") == IntType("int", 4, True)
    assert module.find_type("unsigned int") == IntType("unsigned int", 4, False)
    assert isinstance(module.find_type("enum color"), EnumType)
    assert module.find_type("union number").kind == "union"
    assert module.find_type("struct no_such") is None
    assert module.find_type("point") is point                  # a tag without `struct` too


@pytest.mark.parametrize("build", BUILDS)
def test_enumeration_constants_and_their_type(binaries, build):
    """gdb: print GREEN -> GREEN, print (int) BLUE -> 6 (enum color)."""
    module = open_module(binaries[build])
    enum, value = module.find_enumerator("BLUE")
    assert isinstance(enum, EnumType) and enum.name == "color" and value == 6
    assert module.find_enumerator("GREEN")[1] == 5
    assert module.find_enumerator("g_color") is None       # a variable, not a constant
    assert module.find_enumerator("PURPLE") is None
