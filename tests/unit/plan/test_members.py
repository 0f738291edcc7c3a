"""`a.name` through C++ base classes (plan/members.py, issue 24), on the
classes of tests/fixtures/cpp_bases.cpp: a name of the class hides its
bases'; a base's member is at the base's offset plus its own; a virtual
base is reached through the vtable; a name two bases declare is
ambiguous, with gdb's candidates (gdb: "Request for member 'x' is
ambiguous in type 'Amb'. Candidates are: 'int AmbA::x' (Amb -> AmbA) ...")."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import strip
from gs_cgen.errors import PlanError
from gs_cgen.plan.members import VirtualBaseStep, find_member, lookup_member
from gs_cgen.script import ast
from gs_cgen.source import SourceSpan


@pytest.fixture(scope="module")
def classes(cpp_bases_bins):
    module = open_module(cpp_bases_bins["O0"])
    return lambda name: strip(module.find_type(name))


def _member(field: str) -> ast.Member:
    span = SourceSpan(1, 1, 1, 2)
    return ast.Member(ast.Name("x", span), field, span)


@pytest.mark.parametrize("cls, field, offset, classes_passed", [
    ("Derived", "a", 0, ("Derived", "Base")),
    ("Derived", "b", 4, ("Derived",)),
    ("Both", "r", 8, ("Both", "Right")),
    ("Both", "ls", 4, ("Both", "Left")),
    ("Grand", "a", 0, ("Grand", "Derived", "Base")),
    ("Grand", "g", 8, ("Grand",)),
    ("Shadow", "a", 4, ("Shadow",)),           # hides Base::a
    ("Diamond", "vr", 24, ("Diamond", "VRight")),
])
def test_members_of_bases_at_static_offsets(classes, cls, field, offset, classes_passed):
    path = lookup_member(classes(cls), _member(field))
    assert (path.static_offset, path.classes) == (offset, classes_passed)


def test_a_virtual_base_is_one_subobject_reached_through_the_vtable(classes):
    """Diamond reaches VBase through VLeft and through VRight: one
    subobject, so `dia.v` is not ambiguous."""
    (path,) = find_member(classes("Diamond"), "v")
    assert path.static_offset is None
    assert path.steps == (0, VirtualBaseStep("VBase", -24), 0)
    (path,) = find_member(classes("VRight"), "v")
    assert path.steps == (VirtualBaseStep("VBase", -24), 0)


def test_a_name_two_bases_declare_is_ambiguous(classes):
    with pytest.raises(PlanError) as error:
        lookup_member(classes("Amb"), _member("x"))
    assert error.value.message == (
        "request for member 'x' is ambiguous in type 'Amb'; candidates are "
        "'int AmbA::x' (Amb -> AmbA), 'int AmbB::x' (Amb -> AmbB)")
    assert lookup_member(classes("Amb"), _member("y")).static_offset == 8


def test_no_such_member_suggests_the_bases_members(classes):
    with pytest.raises(PlanError) as error:
        lookup_member(classes("Grand"), _member("aa"))
    assert error.value.message == "struct Grand has no member 'aa'"
    assert "a" in error.value.candidates
