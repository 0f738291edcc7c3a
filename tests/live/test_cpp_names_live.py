"""C++ names, live (issue #9): tests/fixtures/cpp_names.cpp is launched by
gs-cgen (`-- COMMAND`) and by gdb with `break PATTERN` for each probe, and
the first N values each prints, in execution order, must be the same.
gs-cgen is given the names a switching user writes (`trace add` for every
`add`, `print counter` for geo::counter, `this.sides`); gdb is given the
same patterns and, where gdb's own scoping needs it, the qualified names
of the same objects (`geo::counter`, `this->sides`)."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.gdb_oracle import gdb_locations, gdb_values
from tests.live.conftest import FIXTURES, traced_values, gs_cgen, our_uprobes

COUNT = 14


def _build(build_dir, level: str):
    out = build_dir / f"cpp_names_{level}"
    if not out.exists():
        subprocess.run(["g++", "-g", f"-{level}", "-fPIE", "-pie", "-o", str(out),
                        str(FIXTURES / "cpp_names.cpp")], check=True)
    return out


def _traced(binary, probes) -> list[tuple[str, list[str]]]:
    return traced_values(binary, probes, COUNT, _as_gdb)


def _as_gdb(value: dict) -> str:
    if value["status"] == "optimized_out":
        return "<optimized out>"
    assert value["status"] == "ok", value
    if isinstance(value["value"], float):
        return format(value["value"], ".17g")       # gdb prints a double with %.17g
    return str(value["value"])


def _check(binary, ours, theirs):
    traced = _traced(binary, ours)
    expected = gdb_values(binary, theirs, COUNT)
    assert len(traced) == COUNT and traced == expected
    assert our_uprobes() == []
    return traced


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_functions_in_namespaces_classes_and_templates(build_dir, level):
    """`trace add` stops in geo::add(int, int), geo::add(double) and
    other::add, as gdb's `break add`; a const method through `this`; both
    instances of a template; globals and statics of namespaces and a
    static member, by their qualified and their trailing names, from a
    function of an anonymous namespace. (At -O2 biggest<double>'s
    parameters live in xmm registers, which a uprobe cannot read.)"""
    binary = _build(build_dir, level)
    biggest = ["a", "b"] if level == "O0" else ["g_rounds"]
    ours = [("add", ["g_rounds"]),
            ("Shape::area", ["unit", "this.sides", "this.origin.x"]),
            ("biggest", biggest),
            ("helper", ["v", "counter", "geo::counter", "Shape::instances", "hidden",
                        "detail::depth"])]
    theirs = [("add", ["g_rounds"]),
              ("Shape::area", ["unit", "this->sides", "this->origin.x"]),
              ("biggest", biggest),
              ("helper", ["v", "geo::counter", "geo::counter", "geo::Shape::instances",
                          "geo::hidden", "geo::detail::depth"])]
    traced = _check(binary, ours, theirs)
    assert [pattern for pattern, _ in traced[:7]] == ["add", "add", "add", "Shape::area",
                                                      "biggest", "biggest", "helper"]


def test_overloads_methods_and_mangled_names(build_dir):
    """One overload by its signature (plain and gdb-quoted), a nested
    namespace's function by a partial qualification, a method defined
    outside its class, and a function by its mangled name."""
    binary = _build(build_dir, "O0")
    ours = [("geo::add(int,int)", ["a", "b", "geo::counter"]),
            ("'geo::add(double)'", ["d"]),
            ("detail::scale", ["v", "by", "geo::detail::depth"]),
            ("geo::Shape::move", ["dx", "dy", "this.origin.y", "geo::Shape::instances"]),
            ("_ZN5other3addEii", ["a", "b"])]
    theirs = [(spec, [e.replace("this.", "this->") for e in exprs]) for spec, exprs in ours]
    _check(binary, ours, theirs)


def test_dry_run_lists_every_overload_and_errors_offer_demangled_names(build_dir):
    binary = _build(build_dir, "O0")
    result = gs_cgen("trace", "-t", str(binary), "--dry-run", "-s", "trace geo::add { print 1; }")
    assert result.returncode == 0, result.stderr
    assert [line.split(" at ")[0] for line in result.stdout.splitlines()
            if line.startswith("probe ")] == [
        "probe 0: geo::add -> geo::add(int, int)", "probe 1: geo::add -> geo::add(double)"]
    result = gs_cgen("trace", "-t", str(binary), "--dry-run", "-s", "trace geo::ad { print 1; }")
    assert result.returncode == 1
    assert "error: no function 'geo::ad'" in result.stderr
    assert "did you mean: geo::add, other::add?" in result.stderr
    result = gs_cgen("info", "-t", str(binary), "function", "Shape::area")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Shape::area -> geo::Shape::area(int) const at ")
    # gdb: `ptype this` is `const geo::Shape * const`
    assert "parameter const class geo::Shape* const this  @ frame offset" in result.stdout


def test_a_cold_part_is_no_location_of_its_own(build_dir):
    """g++ -O2's `ns::f(int) [clone .cold]` lies in ns::f's ranges: gdb
    breaks once, at ns::f; gs-cgen probed the cold part too, with no
    variables."""
    binary = build_dir / "cpp_cold"
    subprocess.run(["g++", "-g", "-O2", "-o", str(binary), str(FIXTURES / "cpp_cold.cpp")],
                   check=True)
    symbols = subprocess.run(["nm", "-C", str(binary)], capture_output=True, text=True).stdout
    assert "ns::f(int) [clone .cold]" in symbols                          # the case
    result = gs_cgen("trace", "-t", str(binary), "--dry-run", "-s", "trace ns::f { print x; }")
    assert result.returncode == 0, result.stderr
    ours = [int(a, 16) for a in re.findall(r" (0x[0-9a-f]+), file offset", result.stdout)]
    assert ours == gdb_locations(binary, ["ns::f"])["ns::f"]


@pytest.mark.parametrize("compiler", ["g++", "clang++"])
def test_inlined_template_instances_are_found_as_gdb_finds_them(build_dir, compiler):
    """A pattern without template arguments means every instance (gdb's
    rule): `get_as` was "no function" when its instances exist only
    inlined; clang's constructors (named by their abstract instance's
    linkage name) were missed too."""
    binary = build_dir / f"cpp_inlined_templates_{compiler}"
    subprocess.run([compiler, "-g", "-O2", "-o", str(binary),
                    str(FIXTURES / "cpp_inlined_templates.cpp")], check=True)
    patterns = ["get_as", "Box::get_as", "get_as<double>", "twice", "twice<int>",
                "Holder::Holder", "Holder<long>::Holder", "Box::operator=="]
    oracle = gdb_locations(binary, patterns)
    assert all(oracle[p] for p in patterns[:5])                                  # the case
    for pattern in patterns:
        result = gs_cgen("info", "-t", str(binary), "function", pattern)
        ours = sorted(int(a, 16) for a in re.findall(r"probe address (0x[0-9a-f]+)", result.stdout))
        assert ours == oracle[pattern], (pattern, ours, oracle[pattern], result.stderr)
        # g++'s inlined constructors (C4) are no location for gdb either
        assert result.returncode == (0 if ours else 1), (pattern, result.stderr)


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_references_are_the_objects_they_refer_to(build_dir, level):
    """`x + 1`, `foo.y`, `array[i]` through C++ references read the objects
    referred to, equal to gdb; a whole reference prints its object, as
    gdb's `x = @0x...: 42` does (issue found replaying bpftrace's
    uprobe_test_cxx: `array[3]` read a garbage int[10] at array + 120)."""
    binary = build_dir / f"cpp_refs_{level}"
    if not binary.exists():
        subprocess.run(["g++", "-g", f"-{level}", "-fPIE", "-pie", "-o", str(binary),
                        str(FIXTURES / "cpp_refs.cpp")], check=True)
    probes = [("refs", ["x + 1", "foo.x", "foo.y"]), ("array_ref", ["array[i]", "array[0]", "i"])]
    traced = traced_values(binary, probes, 8, _as_gdb)
    assert traced == gdb_values(binary, probes, 8) and len(traced) == 8
    result = gs_cgen("trace", "--output", "plain", "--max-events", "3", "-s",
                     "trace refs { print x; print $args; } trace element:return { print $retval; }",
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["x = 40", "$args: x = 40, foo = Foo { x: 0, y: 100 }",
                                              "$retval = 0"], result.stdout
