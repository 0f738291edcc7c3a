"""The per-module index of file-scope type names (dwarf/index.py
type_names, read from the raw bytes) and find_named_type, on
tests/fixtures/casts built with DWARF 5 and DWARF 4."""
from __future__ import annotations

import shutil

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.index import TYPE_TAGS
from gs_cgen.dwarf.types import (ArrayType, IntType, PointerType, QualifiedType, StructType,
                                 TypedefType, describe_definition, same_definition, strip,
                                 type_name)
from tests.casts_fixture import build_casts
from tests.prerequisites import require


@pytest.fixture(scope="module", params=["-gdwarf-5", "-gdwarf-4"])
def casts(request, tmp_path_factory):
    require(None if shutil.which("gcc") else "gcc is not installed")
    paths = build_casts(tmp_path_factory.mktemp("casts" + request.param), request.param)
    return {name: open_module(str(path)) for name, path in paths.items()}


def _pyelftools_index(module) -> dict:
    """The same index the slow way: every CU's top-level DIEs through pyelftools."""
    found = {}
    dwarf = module._dwarf
    for off in dwarf.cu_offsets():
        for die in dwarf.cu_at(off).get_top_DIE().iter_children():
            name = die.attributes.get("DW_AT_name")
            if die.tag in TYPE_TAGS and name is not None:
                found.setdefault(name.value.decode(), []).append(
                    (die.tag, die.offset, "DW_AT_declaration" in die.attributes))
    return found


def test_raw_index_equals_pyelftools(casts):
    for module in casts.values():
        index = module._dwarf
        assert {n: index.type_entries(n) for n in index.type_names()} == _pyelftools_index(module)


def test_typedefs_base_spellings_and_tags(casts):
    app = casts["app"]
    u8 = app.find_named_type(None, "u8", False)
    assert isinstance(u8, TypedefType) and strip(u8) == IntType("unsigned char", 1, False, True)
    assert type_name(app.find_named_type(None, "uint32_t", False)) == "uint32_t"
    assert app.find_named_type(None, "unsigned long long", True) == \
        IntType("long long unsigned int", 8, False)
    assert app.find_named_type(None, "int", True) == IntType("int", 4, True)
    node = app.find_named_type(None, "CastNode", False)                   # the typedef
    tag = app.find_named_type("struct", "CastNode", False)
    assert isinstance(node, TypedefType) and strip(node) is tag
    assert isinstance(tag, StructType) and tag.size == 56          # gdb: sizeof(CastNode)
    assert app.find_named_type(None, "Duplicate", False).members[0].name == "app_marker"
    assert app.find_named_type("union", "CastNode", False) is None
    assert app.find_named_type(None, "OnlyInA", False) is None           # liba's only
    assert "CastPayload" in app.type_names() and "u8" in app.type_names()


def test_find_type_for_tools(casts):
    app = casts["app"]
    assert isinstance(app.find_type("struct CastNode *"), PointerType)
    assert app.find_type("CastNode") is app.find_type("CastNode")


def test_definitions_compared_across_modules(casts):
    a, b = casts["liba"], casts["libb"]
    assert same_definition(a.find_named_type("struct", "Same", False),
                           b.find_named_type("struct", "Same", False))
    twice_a = a.find_named_type("struct", "Twice", False)
    twice_b = b.find_named_type("struct", "Twice", False)
    assert not same_definition(twice_a, twice_b)
    assert describe_definition(twice_a) == "struct Twice { int a_first; int a_second; }, 8 bytes"
    assert describe_definition(twice_b) == "struct Twice { long int b_only; }, 8 bytes"


def test_a_qualified_array_of_qualified_elements_says_it_once():
    """GCC writes `static const char __func__[14]` as const -> array ->
    const char; C qualifies an array through its elements: gdb's
    `const char [14]`, not `const const char[14]`."""
    char = IntType("char", 1, True, True)
    const_char = QualifiedType("const", char)
    assert type_name(QualifiedType("const", ArrayType(const_char, 14))) == "const char[14]"
    assert type_name(QualifiedType("const", ArrayType(ArrayType(const_char, 3), 2))) == \
        "const char[2][3]"
    assert type_name(QualifiedType("volatile", ArrayType(const_char, 4))) == \
        "volatile const char[4]"
