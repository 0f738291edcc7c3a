"""C++ standard library values against gdb with libstdc++'s pretty
printers (Debian's gdb loads them), live (issue 24): tests/fixtures/
cpp_std.cpp, built by g++ at -O0 and -O2, is run by gdb with `break` at
each show_* function and, apart, traced by gs-cgen at the same
functions; every value gs-cgen prints, plain and JSON, must be gdb's
`print` of it, as tests/cpp_gdb_forms.py writes gdb's text in the
contract's form. Both processes run without address randomization, so
the heap addresses smart pointers print are the same too.

And libc++ (clang++ -stdlib=libc++), whose layouts gs-cgen does not know:
each of its std values prints in its DWARF form with a note.

Also: len(x) against the count gdb's printer shows and x[i] against gdb's `x[i]`
(libstdc++'s xmethods), --max-elements against gdb's full print cut as
the contract cuts, and the whole probe's cost staying within the
verifier's bounds (the probes load)."""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from tests.cpp_gdb_forms import Forms, attach_pointees, length, parse
from tests.gdb_oracle import gdb_values
from tests.live.conftest import FIXTURES, gs_cgen, our_uprobes
from tests.prerequisites import require

# function -> [(our expression, gdb's expression, gdb expressions of the
# objects its smart pointers point at)]. gdb's `*&x` is the object a
# reference parameter refers to (gdb's `print x` adds `(T &) @0x...:`).
_VALUES = {
    "show_order": [("o", "*&o", ["*o.where"]), ("o.stock", "o.stock", []),
                   ("o.where", "o.where", ["*o.where"])],
    "show_strings": [(n, f"*&{n}", []) for n in ("s", "heap", "empty", "sv", "big")],
    "show_sequences": [(n, f"*&{n}", []) for n in ("v", "words", "none", "bits", "arr", "dq",
                                                   "li", "fl", "sp", "many")],
    "show_maps": [(n, f"*&{n}", []) for n in ("m", "big", "s", "mm", "ms", "um", "us", "nested",
                                              "empty")],
    "show_wrappers": [(n, f"*&{n}", []) for n in ("some", "none", "text", "null", "nosp", "pr",
                                                  "tu", "var", "vari")] +
                     [("up", "*&up", ["*up"]), ("sp", "*&sp", ["*sp"]),
                      ("wp", "*&wp", ["*wp._M_ptr"])],
}
# len(x) is the count gdb's printer shows (`std::vector of length 3`; a
# list's elements, all printed); x[i] is gdb's x[i] (a reference: `*&`)
_LENGTHS = {
    "show_strings": ["s", "heap", "empty", "sv", "big"],
    "show_sequences": ["v", "words", "none", "bits", "arr", "dq", "li", "sp", "many"],
    "show_maps": ["m", "big", "s", "mm", "ms", "um", "us", "nested", "empty"],
}
# (ours, gdb's): gdb has no operator[] for a string_view or span
_INDEXED = {
    "show_strings": [("s[1]", "*&s[1]"), ("heap[34]", "*&heap[34]"), ("sv[5]", "sv._M_str[5]")],
    "show_sequences": [("v[0]", "*&v[0]"), ("v[2]", "*&v[2]"), ("words[2]", "*&words[2]"),
                       ("arr[1]", "*&arr[1]"), ("sp[2]", "sp._M_ptr[2]"),
                       ("many[999]", "*&many[999]")],
    # what a smart pointer owns (gdb: libstdc++'s xmethods)
    "show_wrappers": [("*up", "*up"), ("up->x", "up->x"), ("sp->y", "sp->y"), ("*sp", "*sp")],
}
_NAMES = {("x", "y"): "Point",
          ("name", "items", "stock", "discount", "where", "notes"): "Order"}


def _build(build_dir, level: str, compiler: str = "g++"):
    """clang++ also builds on libstdc++ (its default here), in DWARF 5
    with its own spellings (`std::_Head_base<0UL, ...>`)."""
    if shutil.which(compiler) is None:
        require(f"{compiler} is not installed")
    out = build_dir / f"cpp_std_{compiler}_{level}"
    if not out.exists():
        subprocess.run([compiler, "-std=c++20", "-g", f"-{level}", "-fPIE", "-pie", "-o", str(out),
                        str(FIXTURES / "cpp_std.cpp")], check=True)
    return out


def _gdb_probes(max_elements: int):
    probes = []
    for function, values in _VALUES.items():
        exprs = [e for _, theirs, pointees in values for e in [theirs, *pointees]]
        exprs += [theirs for _, theirs in _INDEXED.get(function, [])]
        probes.append((function, exprs))
    return probes


def _expected(binary, max_elements: int) -> dict[tuple[str, str], tuple[str, object]]:
    """{(function, our expression): (plain text, JSON value)} from gdb."""
    forms = Forms(_NAMES, max_elements)
    stops = gdb_values(str(binary), _gdb_probes(max_elements), len(_VALUES),
                       settings=("set print elements unlimited",
                                 "set print repeats unlimited"))
    found = {}
    for function, texts in stops:
        texts = list(texts)
        trees = {}
        for ours, _, pointees in _VALUES[function]:
            tree = trees[ours] = parse(texts.pop(0))
            attach_pointees(tree, [parse(texts.pop(0)) for _ in pointees])
            found[(function, ours)] = (forms.plain(tree), forms.as_json(tree))
        for name in _LENGTHS.get(function, []):
            size = length(trees[name])
            found[(function, f"len({name})")] = (str(size), size)
        for expr, _ in _INDEXED.get(function, []):
            tree = parse(texts.pop(0))
            found[(function, expr)] = (forms.plain(tree), forms.as_json(tree))
    return found


def _script() -> str:
    """A probe for each function's values, another for its len() and [i]
    (each probe's program is verified on its own: the verifier's budget
    of instructions is per program)."""
    blocks = []
    for function, values in _VALUES.items():
        groups = [[ours for ours, _, _ in values],
                  [f"len({n})" for n in _LENGTHS.get(function, [])] +
                  [ours for ours, _ in _INDEXED.get(function, [])]]
        blocks += [f"trace {function} {{ " + " ".join(f"print {e};" for e in exprs) + " }"
                   for exprs in groups if exprs]
    return "\n".join(blocks)


def _traced(binary, *options: str) -> tuple[dict, str]:
    """{(function, expression): (plain line's value, JSON value entry)}
    of each function's first event, from a process gs-cgen attaches to
    (run without address randomization, as gdb runs it); and stderr."""
    proc = subprocess.Popen(["setarch", "-R", str(binary)], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        result = gs_cgen("trace", "-p", str(proc.pid), "--output", "json", "--max-events",
                         str(4 * len(_VALUES)), *options, "-s", _script(), timeout=180)
    finally:
        proc.kill()
        proc.wait()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        event = json.loads(line)
        for text, value in zip(event["lines"], event["values"]):
            expr, shown = text.split(" = ", 1)
            assert expr == value["expr"], (text, value)
            found.setdefault((event["trace"], expr), (shown, value))
    return found, result.stderr


def _compare(binary, max_elements: int, *options: str) -> int:
    expected = _expected(binary, max_elements)
    traced, _ = _traced(binary, *options)
    assert set(traced) == set(expected), (sorted(set(expected) ^ set(traced)))
    for key, (plain, as_json) in expected.items():
        shown, value = traced[key]
        assert shown == plain, (key, shown, plain)
        assert value["value"] == as_json, (key, value, as_json)
        assert value["status"] in ("ok", "truncated"), (key, value)
    return len(expected)


@pytest.mark.parametrize("compiler, level", [("g++", "O0"), ("g++", "O2"),
                                             ("clang++", "O0"), ("clang++", "O2")])
def test_std_values_are_gdbs(build_dir, compiler, level):
    """Every value, plain and JSON, at the default --max-elements (200)."""
    binary = _build(build_dir, level, compiler)
    assert _compare(binary, 200) == sum(map(len, _VALUES.values())) + \
        sum(map(len, _LENGTHS.values())) + sum(map(len, _INDEXED.values()))
    assert our_uprobes() == []


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_max_elements_cuts_what_gdb_prints_whole(build_dir, level):
    """--max-elements 2: each collection's first two elements (a map's
    first two pairs in key order) and each string's first two bytes, the
    rest counted."""
    binary = _build(build_dir, level)
    _compare(binary, 2, "--max-elements", "2")


def _libcxx_build(build_dir):
    """The fixture with clang++ and libc++ (`-stdlib=libc++`), whose
    layouts gs-cgen does not know."""
    clang = shutil.which("clang++") or shutil.which("clang++-14")
    if clang is None:
        require("clang++ is not installed (apt-get install clang)")
    out = build_dir / "cpp_std_libcxx"
    if not out.exists():
        built = subprocess.run([clang, "-stdlib=libc++", "-std=c++20", "-g", "-O0", "-o", str(out),
                                str(FIXTURES / "cpp_std.cpp")], capture_output=True, text=True)
        if built.returncode != 0:
            require(f"libc++ is not installed (apt-get install libc++-dev): {built.stderr[-300:]}")
    return out


# libc++'s std::pair is a pair by its members (first, second): it prints
# as one; `o` (a user class) nests past print's depth bound (`{...}`),
# which raw(x) does not have
_LIBCXX_SAME_AS_GDB_FORM = {"pr", "o"}


def _within_raw(shown: str, raw: str) -> bool:
    """`shown` is `raw` but where print's depth bound cut a struct short
    (`{...}`; raw(x) has no bound): its pieces, in order."""
    at = 0
    for piece in shown.split("{...}"):
        at = raw.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


def test_libcxx_values_print_raw_with_a_note_each(build_dir):
    """Every libc++ std value prints its DWARF form, as raw(x) does, never
    a value read as if it were libstdc++'s; each type is named in one
    note on stderr."""
    binary = _libcxx_build(build_dir)
    names = {function: [ours for ours, _, _ in values if "." not in ours and
                        ours not in _LIBCXX_SAME_AS_GDB_FORM]
             for function, values in _VALUES.items()}
    names = {function: exprs for function, exprs in names.items() if exprs}
    script = "\n".join(f"trace {function} {{ " + " ".join(f"print {n}; print raw({n});"
                                                         for n in exprs) + " }"
                       for function, exprs in names.items())
    result = gs_cgen("trace", "--output", "plain", "--max-events", str(len(names)), "-s", script,
                     "--", str(binary), timeout=180)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    printed = [line.split(" = ", 1) for line in result.stdout.splitlines()]
    assert len(printed) == 2 * sum(map(len, names.values())), result.stdout
    for (name, shown), (raw_name, raw_shown) in zip(printed[::2], printed[1::2]):
        assert raw_name == f"raw({name})", (name, raw_name)
        # the DWARF form, as raw(x) starts it (print flattens an anonymous
        # union as gdb does, and bounds the depth: raw(x) does neither)
        assert shown.startswith("std::__1::") and \
            shown.split(" { ", 1)[0] == raw_shown.split(" { ", 1)[0], (name, shown)
        assert _within_raw(shown.split(" { ", 1)[1][:40], raw_shown), (name, shown)
    notes = [line for line in result.stderr.splitlines() if "gs-cgen knows" in line]
    assert len(notes) == len(set(notes)) and len(notes) >= 20, result.stderr
    assert all("the layout of std::__1::" in note for note in notes), notes
