"""Scopes and probe sites exactly as gdb sees them (issue #8), checked on
tests/fixtures/scopes.c (and a C++ and a two-CU fixture) against gdb at
the same PCs: where `break SPEC` puts its locations, which frame gdb stops
in at each, and the variables visible there (tests/gdb_frames.py runs the
program under gdb to every location)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.index import die_name
from gs_cgen.dwarf.model import (CallSiteValue, ImplicitValue, OptimizedOut, VariableKind,
                                 VisibleVariable)
from gs_cgen.errors import DebugInfoError
from tests.gdb_oracle import frame_names, gdb_frames, gdb_locations, innermost
from tests.prerequisites import require

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SCOPES = FIXTURES / "scopes.c"
BUILDS = {"O2": ["-g", "-O2"], "O2-dwarf4": ["-gdwarf-4", "-O2"], "O0": ["-g", "-O0"]}
FUNCTIONS = ("getint", "clampk", "opt_scale", "run_events", "twice", "gs_labelled", "main")
MARKERS = ("clampk", "ev", "boosted", "labelled")
# gdb names a C function with DW_AT_linkage_name by it; gs-cgen's frames
# are named as the source does.
SOURCE_NAMES = {"gs_labelled": "labelled"}


def marker(source: Path, name: str) -> int:
    for number, text in enumerate(source.read_text().splitlines(), 1):
        if re.search(rf"LINE:{name}\b", text):
            return number
    raise KeyError(name)


def _compile(out: Path, compiler: str, flags: list[str], *sources: Path) -> str:
    if shutil.which(compiler) is None:
        require(f"{compiler} is not installed")
    subprocess.run([compiler, *flags, "-fPIE", "-pie", "-o", str(out), *map(str, sources)],
                   check=True)
    return str(out)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("scopes")
    return {name: _compile(out / f"scopes_{name}", "gcc", flags, SCOPES)
            for name, flags in BUILDS.items()}


def _specs() -> tuple[str, ...]:
    return FUNCTIONS + tuple(f"scopes.c:{marker(SCOPES, m)}" for m in MARKERS)


@pytest.fixture(scope="module")
def gdb_stops(builds) -> dict[str, list[dict]]:
    """build -> every location of every spec, as gdb stops there."""
    return {name: gdb_frames(path, _specs()) for name, path in builds.items()}


def _site(module, spec: str, address: int):
    """gs-cgen's site for `spec` at `address`: (pc, frame_die)."""
    if ":" in spec:
        file, line = spec.split(":")
        sites = [(s.address, s.frame_die) for s in module.find_lines(file, int(line))]
    else:
        sites = [(s.probe_address, s.frame_die) for s in module.find_functions(spec)]
    return next(site for site in sites if site[0] == address)


# ------------------------------------------------------------ the fixture

def test_the_fixture_has_the_shapes_under_test(builds):
    """readelf: the -O2 build really has inlined subroutines and lexical
    blocks described by DW_AT_ranges, a concrete out-of-line instance
    (DW_AT_abstract_origin on a subprogram), DW_AT_specification and an
    asm label (DW_AT_linkage_name)."""
    text = subprocess.run(["readelf", "--debug-dump=info", builds["O2"]], capture_output=True,
                          text=True, check=True).stdout
    dies = re.split(r"\n(?= <\d+><[0-9a-f]+>:)", text)

    def having(tag: str, attribute: str) -> list[str]:
        return [d for d in dies if f"({tag})" in d.splitlines()[0] and attribute in d]
    assert having("DW_TAG_inlined_subroutine", "DW_AT_ranges")
    assert having("DW_TAG_lexical_block", "DW_AT_ranges")
    assert having("DW_TAG_subprogram", "DW_AT_abstract_origin")
    assert any("g_rounds" in d for d in having("DW_TAG_variable", "DW_AT_declaration"))
    assert having("DW_TAG_variable", "DW_AT_specification")
    assert any("gs_labelled" in d for d in having("DW_TAG_subprogram", "DW_AT_linkage_name"))
    module = open_module(builds["O2"])
    # clampk's inlined block begins at getint's first instruction ...
    (getint,) = module.find_functions("getint")
    frame = module.frame_at(getint.probe_address)
    assert (frame.function, frame.inlined_into) == ("clampk", ("getint",))
    # ... and an inlined copy has a DW_AT_entry_pc outside its ranges.
    assert _entry_pcs_outside_ranges(module) == ["twice"]


def _entry_pcs_outside_ranges(module) -> list[str]:
    index = module._dwarf
    found = []
    for offset in index.cu_offsets():
        for die in index.cu_at(offset).iter_DIEs():
            entry = die.attributes.get("DW_AT_entry_pc")
            if die.tag == "DW_TAG_inlined_subroutine" and entry is not None and \
                    not any(lo <= entry.value < hi for lo, hi in index.die_ranges(die)):
                found.append(die_name(die))
    return found


@pytest.mark.parametrize("build", ("O2", "O2-dwarf4"))
def test_raw_searches_find_what_a_walk_of_every_die_finds(builds, build):
    """dies_named and references_to search bytes instead of walking DIE
    trees: on the fixture they must find exactly what a full walk finds."""
    index = open_module(builds[build])._dwarf
    dies = [die for off in index.cu_offsets() for die in index.cu_at(off).iter_DIEs()]
    programs = [d for d in dies if d.tag == "DW_TAG_subprogram"]
    for name in ("twice", "opt_scale", "clampk", "gs_labelled", "labelled", "main", "printf"):
        walked = {d.offset for d in programs
                  if any(a in d.attributes and d.attributes[a].value == name.encode()
                         for a in ("DW_AT_name", "DW_AT_linkage_name"))}
        assert walked and {d.offset for d in index.dies_named(name, ("DW_TAG_subprogram",))} == \
            walked, name
    abstracts = [d for d in programs if "DW_AT_inline" in d.attributes]
    assert len(abstracts) >= 4
    for abstract in abstracts:
        walked = {d.offset for d in dies if d.tag == "DW_TAG_inlined_subroutine" and
                  d.attributes["DW_AT_abstract_origin"].value + d.cu.cu_offset == abstract.offset}
        found = index.references_to(abstract, ("DW_AT_abstract_origin",),
                                    ("DW_TAG_inlined_subroutine",))
        assert walked and {d.offset for d in found} == walked, die_name(abstract)


# ------------------------------------------------------------ probe sites

@pytest.mark.parametrize("build", BUILDS)
def test_function_sites_are_gdbs_breakpoint_locations(builds, build):
    module = open_module(builds[build])
    expected = gdb_locations(builds[build], FUNCTIONS + ("labelled",))
    for spec in FUNCTIONS:
        assert [s.probe_address for s in module.find_functions(spec)] == expected[spec], spec
    # gdb: Function "labelled" not defined (its DWARF name is its asm label).
    assert expected["labelled"] == []
    with pytest.raises(DebugInfoError, match="no function 'labelled'"):
        module.find_functions("labelled")


def test_inlined_copy_site_is_the_first_range_not_entry_pc(builds):
    """gdb 13 puts an inlined copy's location at the start of its first
    range (BLOCK_ENTRY_PC). GCC's DW_AT_entry_pc for twice's copy in main
    lies outside the copy's ranges: probing there found none of its
    variables (issue #8: `no variable 'value' at opt_scale`)."""
    module = open_module(builds["O2"])
    inlined = [s for s in module.find_functions("twice") if s.frame_die is not None
               and module.frame_at(s.probe_address, s.frame_die).inlined]
    assert len(inlined) == 1
    names = {v.name for v in module.variables_at(inlined[0].probe_address, inlined[0].frame_die)}
    assert names == {"x", "doubled"}


# ---------------------------------------------------------------- frames

def _mismatches(module, stop: dict) -> list[str]:
    """How gs-cgen's frame at gdb's stop differs from gdb's."""
    pc, frame_die = _site(module, stop["spec"], stop["address"])
    ours = module.frame_at(pc, frame_die)
    problems = []
    gdb_function = SOURCE_NAMES.get(stop["function"], stop["function"])
    if (ours.function, ours.inlined) != (gdb_function, stop["inlined"]):
        problems.append(f"frame {ours.function} inlined={ours.inlined}, gdb {stop['function']} "
                        f"inlined={stop['inlined']}")
    if sorted(v.name for v in ours.variables) != sorted(frame_names(stop)):
        problems.append(f"names {[v.name for v in ours.variables]}, gdb {frame_names(stop)}")
    first: dict[str, VisibleVariable] = {}
    for variable in ours.variables:
        first.setdefault(variable.name, variable)
    for name, symbol in innermost(stop).items():
        problem = _value_mismatch(first.get(name), symbol)
        if problem:
            problems.append(f"{name}: {problem}")
    return problems


def _value_mismatch(ours: VisibleVariable | None, symbol: dict) -> str | None:
    if ours is None:
        return "missing"
    if (ours.kind is VariableKind.PARAMETER) != symbol["argument"]:
        return f"{ours.kind.value}, gdb argument={symbol['argument']}"
    location = ours.location
    if symbol["optimized_out"] != isinstance(location, OptimizedOut):
        return f"{location}, gdb {symbol['value']}"
    if isinstance(location, ImplicitValue) and str(location.value) != symbol["value"]:
        return f"constant {location.value}, gdb {symbol['value']}"
    return None


@pytest.mark.parametrize("build", BUILDS)
def test_frames_and_variables_are_gdbs_at_every_location(builds, gdb_stops, build):
    """At each location of each spec: the frame gdb stops in (a function
    probe is in the function's frame even where an inlined call begins at
    its first instruction; an inlined copy's probe in the copy's frame; a
    line probe in the innermost), the same variable names, and for the one
    `print NAME` shows, the same parameter/local kind, optimized-out-ness
    and constant value."""
    module = open_module(builds[build])
    stops = gdb_stops[build]
    assert {s["spec"] for s in stops} == set(_specs())
    problems = {f"{s['spec']}@0x{s['address']:x}": _mismatches(module, s) for s in stops}
    assert {k: v for k, v in problems.items() if v} == {}


def test_lua_shape_function_probe_sees_its_own_k(builds, gdb_stops):
    """Issue #8's luaH_getint: an inlined callee with its own `k` begins at
    the function's first instruction. `break getint` shows getint's k, `break
    clampk` and a line breakpoint there clampk's (the constant 7)."""
    module = open_module(builds["O2"])
    by_spec = {s["spec"]: s for s in gdb_stops["O2"]}
    (getint,) = module.find_functions("getint")
    (clampk,) = module.find_functions("clampk")
    assert getint.probe_address == clampk.probe_address
    outer = {v.name: v for v in module.variables_at(getint.probe_address, getint.frame_die)}
    inner = {v.name: v for v in module.variables_at(clampk.probe_address, clampk.frame_die)}
    assert innermost(by_spec["getint"])["k"]["value"] != "7"
    assert not isinstance(outer["k"].location, ImplicitValue) and "slot" in outer
    assert innermost(by_spec["clampk"])["k"]["value"] == "7"
    assert inner["k"].location == ImplicitValue(7) and set(inner) == {"k", "limit"}
    frame = module.frame_at(getint.probe_address, getint.frame_die)
    assert frame.hidden == ("clampk",) and frame.inlined_into == ()


def test_block_labels(builds):
    """`gs-cgen info` names the block each variable comes from."""
    module = open_module(builds["O2"])
    (site,) = [s for s in module.find_lines("scopes.c", marker(SCOPES, "boosted"))]
    labels = {v.name: v.scope for v in module.variables_at(site.address, site.frame_die)}
    ev_line = marker(SCOPES, "ev")
    assert labels["ev"] == f"block at line {ev_line}"
    assert labels["boosted"] == f"block at line {ev_line + 2}"
    assert labels["total"] is None and labels["events"] is None
    (clampk,) = module.find_functions("clampk")
    assert {v.scope for v in module.variables_at(clampk.probe_address, clampk.frame_die)} == \
        {"inlined clampk"}


# ------------------------------------------------------ DW_AT_specification

def test_a_global_defined_after_its_declaration(builds):
    """`extern int g_rounds; int g_rounds;`: the definition's DIE names its
    declaration with DW_AT_specification (name, type, file from there)."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    module = open_module(builds["O2"])
    found = module.find_global("g_rounds")
    text = subprocess.run(["gdb", "-nx", "-batch", "-ex", "info address g_rounds", builds["O2"]],
                          capture_output=True, text=True, check=True).stdout
    assert found is not None and f"0x{found.address:x}" in text
    assert found.decl_file.endswith("scopes.c") and found.decl_line == 12


@pytest.fixture(scope="module")
def cpp(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("scopes_cpp")
    return _compile(out / "scopes_cpp", "g++", ["-g", "-O2"], FIXTURES / "scopes_cpp.cpp")


def test_a_member_function_defined_outside_its_class(cpp):
    """Counter::bump's DIE has DW_AT_specification (the declaration in the
    class): its name comes from there; `this`, `by` and `before` are its
    variables, as gdb lists them at the same line."""
    source = FIXTURES / "scopes_cpp.cpp"
    line = marker(source, "bump")
    module = open_module(cpp)
    stops = gdb_frames(cpp, [f"scopes_cpp.cpp:{line}"])
    assert stops
    for stop in stops:
        (site,) = [s for s in module.find_lines("scopes_cpp.cpp", line) if s.address == stop["address"]]
        assert site.function == "bump"
        frame = module.frame_at(site.address, site.frame_die)
        assert frame.function == "bump" and not frame.inlined
        assert sorted(v.name for v in frame.variables) == sorted(frame_names(stop))
        assert {"this", "by", "before"} <= {v.name for v in frame.variables}


# ------------------------------------------------- call sites in other CUs

def _evaluate(tree: tuple, registers: dict[int, int]) -> int:
    """A ValueExpression over 64-bit values (DWARF's generic type)."""
    mask = (1 << 64) - 1
    kind = tree[0]
    if kind == "const":
        return tree[1] & mask
    if kind == "reg":
        return (registers[tree[1]] + tree[2]) & mask
    if kind == "~":
        return ~_evaluate(tree[1], registers) & mask
    if kind == "neg":
        return -_evaluate(tree[1], registers) & mask
    left, right = _evaluate(tree[1], registers), _evaluate(tree[2], registers)
    signed = left - (1 << 64) if left >> 63 else left
    ops = {"+": left + right, "-": left - right, "*": left * right, "&": left & right,
           "|": left | right, "^": left ^ right, "<<": left << (right & 63),
           ">>": left >> (right & 63), ">>a": signed >> (right & 63)}
    return ops[kind] & mask


def test_entry_value_from_a_caller_in_another_cu(tmp_path):
    """After work()'s loop, `a` is DW_OP_entry_value(rdi) and rdi was
    rewritten; main, in caller.c's CU, says at its call how it computed the
    argument (from r12). gdb prints a there; so can gs-cgen: the call-site
    expression, evaluated over the caller's registers gdb shows, is gdb's a."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    binary = _compile(tmp_path / "callsites", "gcc", ["-g", "-O2"],
                      FIXTURES / "callsites" / "callee.c", FIXTURES / "callsites" / "caller.c")
    line = marker(FIXTURES / "callsites" / "callee.c", "after_loop")
    module = open_module(binary)
    (site,) = module.find_lines("callee.c", line)
    a = next(v for v in module.variables_at(site.address, site.frame_die) if v.name == "a")
    assert isinstance(a.location, CallSiteValue) and len(a.location.cases) == 1
    (return_pc, value), = a.location.cases
    caller = module.describe_address(return_pc)
    assert caller.function == "main" and caller.file.endswith("caller.c")
    registers = sorted({node[1] for node in _nodes(value.tree) if node[0] == "reg"})
    names = {3: "rbx", 6: "rbp", 12: "r12", 13: "r13", 14: "r14", 15: "r15"}
    text = subprocess.run(
        ["gdb", "-nx", "-batch", "-ex", f"break callee.c:{line}", "-ex", "run", "-ex", "print a",
         "-ex", "up", *[arg for r in registers for arg in ("-ex", f"print/x ${names[r]}")],
         binary], capture_output=True, text=True, timeout=60).stdout
    printed = re.findall(r"^\$\d+ = (\S+)", text, re.M)
    gdb_a, caller_registers = int(printed[0]), [int(v, 16) for v in printed[1:]]
    assert len(caller_registers) == len(registers), text
    got = _evaluate(value.tree, dict(zip(registers, caller_registers)))
    assert got & 0xFFFFFFFF == gdb_a & 0xFFFFFFFF


def _nodes(tree: tuple):
    yield tree
    for child in tree[1:]:
        if isinstance(child, tuple):
            yield from _nodes(child)


# ------------------------------------------------------ system libraries

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
# __libc_read and __mmap64 are known to gdb by their linkage names
# (__GI_...): the inlined copy of each inside itself is a location of the
# __GI_ name only. PyUnicode_New's inlined copy has a DW_AT_entry_pc
# outside its ranges; _PyObject_Init exists only inlined (44 copies).
LIBC_SPECS = ("__libc_read", "__mmap64", "__GI___libc_read", "__GI___mmap64", "read", "mmap",
              "malloc")
LIBPYTHON_SPECS = ("PyUnicode_New", "PyObject_GetAttr", "PyDict_SetItem", "_PyObject_Init")


def _library(kind: str) -> str:
    from .test_libpython import _candidates
    paths = [LIBC] if kind == "libc" else _candidates()
    for path in paths:
        if os.path.exists(path) and open_module(path).has_debug_info:
            return path
    require("no libc.so.6 debug info (install libc6-dbg)" if kind == "libc"
            else "no libpython3.11.so.1.0 with DWARF on this machine")


@pytest.mark.parametrize("kind, specs", [("libc", LIBC_SPECS), ("libpython", LIBPYTHON_SPECS)])
def test_library_sites_are_gdbs_breakpoint_locations(kind, specs):
    path = _library(kind)
    expected = gdb_locations(path, specs)
    module = open_module(path)
    assert {spec: [s.probe_address for s in module.find_functions(spec)] for spec in specs} == \
        expected
    if kind == "libc":
        assert len(expected["__mmap64"]) == 1 and len(expected["__GI___mmap64"]) == 2


INNERMOST_SPECS = {"libc": ("__GI___libc_read", "__GI___mmap64"),
                   "libpython": ("PyUnicode_New", "PyDict_SetItem")}


@pytest.mark.parametrize("kind", INNERMOST_SPECS)
def test_library_scopes_are_gdbs_info_scope(kind):
    """On glibc and -O3 libpython: the innermost frame's variables at each
    site are the symbols gdb's `info scope *ADDR` lists (blocks with
    ranges, inherited abstract variables, a function inlined into itself)."""
    path = _library(kind)
    module = open_module(path)
    sites = [s for spec in INNERMOST_SPECS[kind] for s in module.find_functions(spec)]
    args = [arg for s in sites for arg in ("-ex", f"echo GS-SITE\\n", "-ex",
                                           f"info scope *0x{s.probe_address:x}")]
    text = subprocess.run(["gdb", "-nx", "-batch", *args, path], capture_output=True, text=True,
                          check=True).stdout
    scopes = text.split("GS-SITE\n")[1:]
    assert len(scopes) == len(sites) >= 4
    for site, scope in zip(sites, scopes):
        gdb_names = re.findall(r"^Symbol (\w+) is (?!a function)", scope, re.M)
        ours = [v.name for v in module.variables_at(site.probe_address)]
        assert sorted(ours) == sorted(gdb_names), (site, scope)
