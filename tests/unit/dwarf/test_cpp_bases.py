"""C++ base classes in the type model (DW_TAG_inheritance, issue 24), on
tests/fixtures/cpp_bases.cpp built by g++: each class's bases in order,
at gcc's offsets (gdb's `&d.member` agrees), virtual bases with where the
vtable holds their offset."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import BaseClass, StructType, same_definition, strip, type_name
from tests.unit.conftest import gdb_prints

BUILDS = ("O0", "O2", "O0-dwarf4")


def _bases(module, name: str) -> list[tuple[str, int | None, bool, int | None]]:
    struct = strip(module.find_type(name))
    assert isinstance(struct, StructType)
    return [(type_name(b.type), b.offset, b.virtual, b.vbase_offset_at) for b in struct.bases]


@pytest.mark.parametrize("build", BUILDS)
def test_bases_in_declaration_order_at_their_offsets(cpp_bases_bins, build):
    module = open_module(cpp_bases_bins[build])
    assert _bases(module, "Derived") == [("struct Base", 0, False, None)]
    assert _bases(module, "Both") == [("struct Left", 0, False, None),
                                      ("struct Right", 8, False, None)]
    assert _bases(module, "Grand") == [("struct Derived", 0, False, None)]
    assert _bases(module, "WithEmpty") == [("struct Empty", 0, False, None)]
    assert _bases(module, "Base") == []
    # gcc: DW_OP_dup; DW_OP_deref; DW_OP_lit24; DW_OP_minus; DW_OP_deref; DW_OP_plus
    assert _bases(module, "VLeft") == [("struct VBase", None, True, -24)]
    assert _bases(module, "VRight") == [("struct VBase", None, True, -24)]
    assert _bases(module, "Diamond") == [("struct VLeft", 0, False, None),
                                         ("struct VRight", 16, False, None)]


def test_base_offsets_are_gdbs(cpp_bases_bins):
    """The second base of Both starts where gdb puts `g_both.r`."""
    binary = cpp_bases_bins["O0"]
    module = open_module(binary)
    printed = gdb_prints(binary, "(long)&g_both.r - (long)&g_both",
                         "(long)&g_grand.g - (long)&g_grand")
    (right,) = [b for b in strip(module.find_type("Both")).bases if type_name(b.type) == "struct Right"]
    assert right.offset == int(printed["(long)&g_both.r - (long)&g_both"])
    grand = strip(module.find_type("Grand"))
    assert [m.offset for m in grand.members if m.name == "g"] == \
        [int(printed["(long)&g_grand.g - (long)&g_grand"])]


def test_same_definition_compares_bases(cpp_bases_bins):
    """Two classes alike in members but not in bases are different
    definitions (one name from two modules must lay out alike)."""
    module = open_module(cpp_bases_bins["O0"])
    derived = strip(module.find_type("Derived"))
    assert same_definition(derived, strip(open_module(cpp_bases_bins["O0-dwarf4"])
                                          .find_type("Derived")))
    rebased = StructType(derived.kind, derived.name, derived.size, lambda: derived.members,
                         bases_loader=lambda: (BaseClass(derived.bases[0].type, 4),))
    assert not same_definition(derived, rebased)
