"""C++ classes with base classes render their bases first, as gdb prints
them (issue 24; docs/rendering.md): `Derived { <Base>: Base { a: 1 }, b: 2 }`,
JSON `{"<Base>": {"a": 1}, "b": 2}`. Decoded from the g_* globals of
tests/fixtures/cpp_bases.cpp, whose bytes g++ wrote into the file, and
compared with gdb's `print` of the same globals."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import type_size
from gs_cgen.render.text import format_value, value_json, value_status
from gs_cgen.render.values import decode_object
from tests.gdb_oracle import gdb_form
from tests.unit.conftest import gdb_prints

GLOBALS = {
    "g_derived": "Derived { <Base>: Base { a: 1 }, b: 2 }",
    "g_both": "Both { <Left>: Left { l: 3, ls: -4 }, <Right>: Right { r: 5000000000 }, both: 6 }",
    "g_grand": "Grand { <Derived>: Derived { <Base>: Base { a: 7 }, b: 8 }, g: 9 }",
    "g_empty": "WithEmpty { <Empty>: Empty {}, e: 10 }",
    "g_shadow": "Shadow { <Base>: Base { a: 11 }, a: 12 }",
    "g_amb": "Amb { <AmbA>: AmbA { x: 20 }, <AmbB>: AmbB { x: 21 }, y: 22 }",
}


class Globals:
    def __init__(self, path: str) -> None:
        self.path, self.module = path, open_module(path)

    def value(self, name: str, cap: int | None = None):
        var = self.module.find_global(name)
        size = type_size(var.type) if cap is None else cap
        if var.section == "bss":
            data = bytes(size)                   # g_diamond: its constructor runs at start-up
        else:
            with open(self.path, "rb") as f:
                f.seek(self.module.vaddr_to_file_offset(var.address))
                data = f.read(size)
        return decode_object(var.type, data, address=var.address)


@pytest.fixture(scope="module", params=["O0", "O0-dwarf4"])
def program(request, cpp_bases_bins) -> Globals:
    return Globals(cpp_bases_bins[request.param])


@pytest.mark.parametrize("name", GLOBALS)
def test_bases_first_as_plain_text(program, name):
    assert format_value(program.value(name)) == GLOBALS[name]


def test_values_are_gdbs(program):
    """The JSON tree, written as gdb writes values, is gdb's `print`:
    bases first, in order, a base's own base nested, an empty base."""
    printed = gdb_prints(program.path, *GLOBALS)
    for name in GLOBALS:
        assert gdb_form(value_json(program.value(name))) == printed[name], name


def test_json_names_a_base_by_its_class_in_angle_brackets(program):
    assert value_json(program.value("g_grand")) == {
        "<Derived>": {"<Base>": {"a": 7}, "b": 8}, "g": 9}
    assert value_json(program.value("g_empty")) == {"<Empty>": {}, "e": 10}


def test_a_copy_cut_inside_a_base_is_truncated(program):
    both = program.value("g_both", cap=10)
    assert format_value(both) == "Both { <Left>: Left { l: 3, ls: -4 }, <Right>: Right { " \
                                 "... <truncated> }, ... <truncated> }"
    assert value_status(both) == "truncated"
    assert format_value(program.value("g_both", cap=8)) == \
        "Both { <Left>: Left { l: 3, ls: -4 }, ... <truncated> }"


def test_a_virtual_base_is_an_error_value_shown_once(program):
    """Its offset is in the vtable, which the object's bytes do not hold:
    an error, never the bytes at a guessed offset; VBase is one subobject
    of Diamond, shown where gdb shows it (under VLeft, not again under
    VRight). The other members are values."""
    diamond = program.value("g_diamond")
    text = format_value(diamond)
    error = ("<error: unsupported: virtual base VBase (the vtable holds its offset; print "
             "its members by name)>")
    assert text.startswith(f"Diamond {{ <VLeft>: VLeft {{ <VBase>: {error}, _vptr.VLeft: ")
    assert text.count("<VBase>") == 1
    assert text.endswith(", vl: 0 }, <VRight>: VRight { _vptr.VRight: NULL (function**), "
                         "vr: 0 }, dd: 0 }")
    tree = value_json(diamond)
    assert tree["<VLeft>"]["<VBase>"] is None and "<VBase>" not in tree["<VRight>"]
