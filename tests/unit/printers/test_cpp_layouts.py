"""libstdc++ layouts recognized from the DWARF of real g++ builds
(issue 24): tests/fixtures/cpp_std.cpp's std values by their members
(through the bases libstdc++ builds them from) and node types (from the
containers' node allocators), a user's classes left alone; and
tests/fixtures/cpp_std_unknown.cpp's std class of a layout gs-cgen does
not know (libc++'s namespace and member names): raw, with one note."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import StructType, strip, type_size
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.follows import plan_follows
from gs_cgen.plan.model import DeepCapture, MemoryCapture, PidNamespace, Walk
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.printers import cpp
from gs_cgen.printers.layout import Kind, Shown
from gs_cgen.render.text import format_value
from gs_cgen.render.values import decode_object
from gs_cgen.script.parser import parse
from tests.prerequisites import require
from tests.unit.conftest import FIXTURES


def _build(out, source: str, level: str) -> str:
    if shutil.which("g++") is None:
        require("g++ is not installed")
    path = str(out / f"{source}_{level}")
    subprocess.run(["g++", "-std=c++20", "-g", f"-{level}", "-o", path,
                    str(FIXTURES / f"{source}.cpp")], check=True)
    return path


@pytest.fixture(scope="module", params=["O0", "O2"])
def std_module(request, tmp_path_factory):
    return open_module(_build(tmp_path_factory.mktemp("cpp_std"), "cpp_std", request.param))


def _parameters(module, function: str) -> dict:
    """name -> the type a reference parameter of `function` refers to."""
    (site,) = module.find_functions(function)
    found = {}
    for variable in module.variables_at(site.probe_address, site.frame_die):
        found[variable.name] = strip(strip(variable.type).target)
    return found


_KINDS = {
    "show_strings": {"s": Kind.TEXT, "heap": Kind.TEXT, "sv": Kind.TEXT},
    "show_sequences": {"v": Kind.SEQUENCE, "words": Kind.SEQUENCE, "bits": Kind.BITS,
                       "arr": Kind.WRAPPER, "dq": Kind.DEQUE, "li": Kind.CHAIN,
                       "fl": Kind.CHAIN, "sp": Kind.SEQUENCE},
    "show_maps": {"m": Kind.RBTREE, "s": Kind.RBTREE, "mm": Kind.RBTREE, "ms": Kind.RBTREE,
                  "um": Kind.CHAIN, "us": Kind.CHAIN},
    "show_wrappers": {"some": Kind.OPTIONAL, "text": Kind.OPTIONAL, "up": Kind.HANDLE,
                      "sp": Kind.HANDLE, "wp": Kind.HANDLE, "pr": Kind.ELEMENTS,
                      "tu": Kind.ELEMENTS, "var": Kind.VARIANT},
}


@pytest.mark.parametrize("function", _KINDS)
def test_std_types_are_recognized(std_module, function):
    types = _parameters(std_module, function)
    for name, kind in _KINDS[function].items():
        shape = cpp.layout(types[name])
        assert shape.kind is kind and shape.note is None, (name, types[name].name, shape)


def test_layouts_point_at_the_members_libstdcxx_has(std_module):
    """Offsets and node types come from the DWARF: checked against the
    members by name, as libstdc++ lays them out."""
    maps = _parameters(std_module, "show_maps")
    tree = cpp.layout(maps["m"])
    assert tree.shown is Shown.MAP and tree.node.name.startswith("std::_Rb_tree_node<")
    assert tree.pointer_offset == _at(maps["m"], "_M_t", "_M_impl", "_M_header", "_M_parent")
    node_base = cpp.find(tree.node, "_M_left")[0], cpp.find(tree.node, "_M_right")[0]
    assert (tree.next_offset, tree.right_offset) == node_base
    assert tree.value_offset == cpp.find(tree.node, "_M_storage")[0]
    assert cpp.layout(maps["s"]).shown is Shown.SET
    assert cpp.layout(maps["um"]).shown is Shown.MAP and cpp.layout(maps["us"]).shown is Shown.SET
    sequences = _parameters(std_module, "show_sequences")
    vector = cpp.layout(sequences["v"])
    assert vector.end_pointer and type_size(vector.element) == 4
    listed = cpp.layout(sequences["li"])
    assert listed.end_offset is not None and listed.count_offset is not None
    assert cpp.layout(sequences["fl"]).count_offset is None      # forward_list: no count
    strings = _parameters(std_module, "show_strings")
    assert cpp.layout(strings["s"]).length_offset == _at(strings["s"], "_M_string_length")
    assert cpp.layout(strings["s"]).pointer_offset == _at(strings["s"], "_M_dataplus", "_M_p")


def _at(base, *names: str) -> int:
    """The offset of a member path, each member found through bases."""
    offset = 0
    for name in names:
        at, member = cpp.find(base, name)
        offset, base = offset + at, strip(member.type)
    return offset


def test_a_users_classes_are_theirs(std_module):
    for name in ("Point", "Order"):
        assert cpp.layout(std_module.find_type(name)).kind is Kind.PLAIN
        assert cpp.layout(std_module.find_type(name)).note is None


def test_a_map_is_walked_as_a_tree_in_the_probe(std_module):
    maps = _parameters(std_module, "show_maps")
    (walk, *keys) = plan_follows(maps["m"], 8, 60_000)     # map<string, int>: its keys too
    # pre-order reaches a key after up to its depth of ancestors: 24 nodes more
    assert walk.walk is Walk.TREE and walk.links == 8 + 24 and walk.scratch > 0
    assert keys and all(k.source == 0 for k in keys)
    (chain, *_) = plan_follows(maps["um"], 8, 60_000)
    assert chain.walk is Walk.CHAIN and chain.end_offset is None


def test_a_std_class_named_but_not_laid_out_as_libstdcxx_is_noted():
    strange = StructType("class", "std::vector<int, std::allocator<int> >", 24, lambda: (),
                         language="c++")
    shape = cpp.layout(strange)
    assert shape.kind is Kind.PLAIN
    assert shape.note == ("the layout of std::vector<int, std::allocator<int> > is not one "
                          "gs-cgen knows (libstdc++'s)")


@pytest.fixture(scope="module")
def unknown(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("cpp_unknown"), "cpp_std_unknown", "O0")


def test_an_unknown_std_layout_prints_raw_with_one_note(unknown):
    """libc++'s vector (std::__1, __begin_/__end_): its DWARF members and,
    printed twice, one note naming it; never a `[...]` guessed from it."""
    module = open_module(unknown)
    options = PlanOptions("t.gs", PidNamespace(False))
    plan = build_plan(parse("trace show_unknown { print v; print w; print v; }"),
                      ModuleSet.of(module), options)
    (probe,) = plan.probes
    assert probe.notes == ("note: the layout of std::__1::vector<int> is not one gs-cgen "
                           "knows (libstdc++'s): it prints in its DWARF form (raw)",)
    captures = [slot.capture for slot in probe.slots]
    assert all(isinstance(c, MemoryCapture) and not isinstance(c, DeepCapture)
               for c in captures)
    vector = strip(captures[0].ctype)
    data = (0x1000).to_bytes(8, "little") + (0x100c).to_bytes(8, "little") * 2
    assert format_value(decode_object(vector, data)) == (
        "std::__1::vector<int> { __begin_: 0x1000 (int*), __end_: 0x100c (int*), "
        "__end_cap_: 0x100c (int*) }")
