"""C++ names as text (gs_cgen/cppnames.py): the demangler's output and
what a user writes parse into the same shape, and gdb's wild matching of
`break NAME` decides which functions a name selects. The demangled texts
below are what libstdc++'s __cxa_demangle prints (checked by
tests/unit/dwarf/test_cpp_symbols.py on a real binary)."""
from __future__ import annotations

import pytest

from gs_cgen.cppnames import (CppName, is_function_pattern, looks_like_cpp, matches, normalize,
                              parse_cpp_name)


@pytest.mark.parametrize("text, components, params, qualifiers", [
    ("geo::add(int, int)", ("geo", "add"), "int, int", ""),
    ("int geo::biggest<int>(int, int)", ("geo", "biggest<int>"), "int, int", ""),
    ("geo::Shape::area(int) const [clone .isra.0]", ("geo", "Shape", "area"), "int", "const"),
    ("(anonymous namespace)::helper(int)", ("(anonymous namespace)", "helper"), "int", ""),
    ("geo::counter", ("geo", "counter"), None, ""),
    ("main::count", ("main", "count"), None, ""),
    ("std::vector<int, std::allocator<int> >::push_back(int const&)",
     ("std", "vector<int, std::allocator<int> >", "push_back"), "int const&", ""),
    ("std::basic_string<char> geo::name<int>()", ("geo", "name<int>"), "", ""),
    ("Foo::~Foo()", ("Foo", "~Foo"), "", ""),
    ("Foo::operator()()", ("Foo", "operator()"), "", ""),
    ("Foo::operator int() const", ("Foo", "operator int"), "", "const"),
    ("operator new(unsigned long)", ("operator new",), "unsigned long", ""),
    ("bool std::operator< <char>(int)", ("std", "operator< <char>"), "int", ""),
    ("my_operator<int>::run()", ("my_operator<int>", "run"), "", ""),
])
def test_demangled_names_parse(text, components, params, qualifiers):
    assert parse_cpp_name(text) == CppName(components, params, qualifiers)


@pytest.mark.parametrize("text", ["vtable for geo::Shape", "guard variable for main::x",
                                  "non-virtual thunk to Foo::bar()", "add(int, int", "geo::", ""])
def test_texts_that_name_no_function(text):
    assert parse_cpp_name(text) is None


def test_display_is_gdbs_location_name():
    name = parse_cpp_name("geo::Shape::area(int) const [clone .isra.0]")
    assert name.display() == "geo::Shape::area(int) const"
    assert name.qualified == "geo::Shape::area" and name.identifier() == "area"
    assert parse_cpp_name("int geo::biggest<int>(int, int)").identifier() == "biggest"
    assert parse_cpp_name("Foo::~Foo()").identifier() == "Foo"
    assert parse_cpp_name("Foo::operator()()").identifier() is None


def test_normalize_spells_whitespace_as_the_demangler():
    assert normalize("int,int") == "int, int"
    assert normalize("  char  const *") == "char const*"
    assert normalize("std::vector<int,std::allocator<int>>") == "std::vector<int, std::allocator<int> >"
    assert normalize("unsigned   long") == "unsigned long"


ADD_II = parse_cpp_name("geo::add(int, int)")
ADD_D = parse_cpp_name("geo::add(double)")
OTHER_ADD = parse_cpp_name("other::add(int, int)")
SCALE = parse_cpp_name("geo::detail::scale(long, int)")
BIGGEST_INT = parse_cpp_name("int geo::biggest<int>(int, int)")
AREA = parse_cpp_name("geo::Shape::area(int) const")
HELPER = parse_cpp_name("(anonymous namespace)::helper(int)")
ALL = (ADD_II, ADD_D, OTHER_ADD, SCALE, BIGGEST_INT, AREA, HELPER)


# Each row is what gdb 13's `break PATTERN` selected on the fixture
# tests/fixtures/cpp_names.cpp (see tests/unit/dwarf/test_cpp_symbols.py,
# which asks gdb on the compiled binary).
@pytest.mark.parametrize("pattern, selected", [
    ("add", (ADD_II, ADD_D, OTHER_ADD)),
    ("geo::add", (ADD_II, ADD_D)),
    ("geo::add(int,int)", (ADD_II,)),
    ("add(int, int)", (ADD_II, OTHER_ADD)),
    ("geo::add(double)", (ADD_D,)),
    ("scale", (SCALE,)),
    ("detail::scale", (SCALE,)),
    ("geo::scale", ()),
    ("eo::add", ()),
    ("biggest", (BIGGEST_INT,)),
    ("biggest<int>", (BIGGEST_INT,)),
    ("biggest<double>", ()),
    ("Shape::area", (AREA,)),
    ("Shape::area(int) const", (AREA,)),
    ("Shape::area(int)", (AREA,)),
    ("helper", (HELPER,)),
    ("(anonymous namespace)::helper", (HELPER,)),
    ("geo::add(void)", ()),
])
def test_wild_matching_as_gdbs_break(pattern, selected):
    wanted = parse_cpp_name(pattern)
    assert tuple(name for name in ALL if matches(wanted, name)) == selected


def test_an_empty_parameter_list_is_void():
    assert matches(parse_cpp_name("run(void)"), parse_cpp_name("Foo::run()"))


@pytest.mark.parametrize("text, valid", [
    ("geo::add", True), ("Shape::~Shape", True), ("biggest<int>", True),
    ("'x'", False), ("geo::add:return", False), ("a::::b", False), ("1abc::x", False),
    ("operator<<", True), ("(anonymous namespace)::helper", True),
])
def test_user_patterns(text, valid):
    assert is_function_pattern(text) is valid


def test_what_looks_like_cpp():
    assert looks_like_cpp("ns::f") and looks_like_cpp("f(int)") and looks_like_cpp("max<int>")
    assert not looks_like_cpp("main") and not looks_like_cpp("file.c:10")
