#!/usr/bin/env python3
"""Run GhostScope's own C/C++ e2e test scripts through gs-cgen.

    python3 tests/ghostscope/run_e2e.py /tmp/gsrepo [--gs-cgen PATH] [FILTER ...]

Reads e2e-tests/tests/*_execution.rs (and the other C/C++ test files) of a
GhostScope checkout, builds its fixtures (a copy, under --work), and for
every test function extracts the scripts it runs, the fixture binary and
the attach mode (-p PID of a running fixture, or -t PATH with the fixture
started after gs-cgen attached), runs gs-cgen the same way and judges the
test's own expectations: the exit status it asserts and every
`stdout.contains(...)` condition (spacing-insensitive). See README.md.

Verdicts: PASS, FAIL, DELIBERATE (fails only because of a documented
difference, deliberate.py), NOT_APPLICABLE (with the reason).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import deliberate  # noqa: E402
from synthetic_dwarf import replace_debug_info, stack_argument_unit  # noqa: E402
from rustlite import (UNKNOWN, Env, Tok, Unsupported, evaluate, functions,  # noqa: E402
                      match_close, split_top, tokenize)

TREE = HERE.parents[1]

# ------------------------------------------------------------------ files

SKIP_FILES = {
    "common_fixture_builds.rs": "checks GhostScope's fixture build helpers, no script",
    "manual_gdb_ghostscope_benchmark.rs": "manual benchmark",
    "runner_lifecycle.rs": "checks GhostScope's test runner itself",
    "debuginfod_execution.rs": "needs GhostScope's debuginfod set-up (our own: tests/live/test_debuginfod_live.py)",
    "container_topology_execution.rs": "container topologies of GhostScope's CI (docker sandboxes)",
    "startup_load_report_execution.rs": "GhostScope's start-up load report (its module/debug-file loader UI); gs-cgen has no such report",
    "member_pointer_compilation.rs": "drives GhostScope's compiler/planner through its Rust API, runs nothing",
    "dwarf_index_regressions.rs": "drives GhostScope's DWARF index through its Rust API, runs nothing",
}


def test_files(repo: Path) -> list[Path]:
    tests = repo / "e2e-tests" / "tests"
    out = []
    for path in sorted(tests.glob("*.rs")):
        if path.name.startswith("rust_"):
            continue                               # Rust fixtures: not C/C++
        out.append(path)
    return out

# --------------------------------------------------------------- fixtures

# (fixture dir, make arguments) -- what GhostScope's compile-fixtures.sh and
# common/mod.rs build with gcc. Clang variants are built only when a clang
# is on PATH (CLANG_BIN honoured, as there).
GCC_BUILDS = [
    ("sample_program", ["all"]),
    ("complex_types_program", ["all", "complex_types_program_nopie"]),
    ("member_pointer_program", ["all"]),
    ("globals_program", ["all", "globals_program_o1", "globals_program_o2", "globals_program_o3"]),
    ("late_globals_program", ["all"]),
    ("short_lived_long_comm_program", ["all"]),
    ("c_multithread_program", ["all"]),
    ("backtrace_hot_program", ["all", "backtrace_hot_program_nopie"]),
    ("backtrace_cross_module_program", ["all"]),
    ("backtrace_dlopen_program", ["all"]),
    ("scalar_types_program", ["all"]),
    ("cast_types_program", ["all"]),
    ("inline_callsite_program", ["all"]),
    ("inline_call_value_program", ["all"]),
    ("partitioned_ranges_program", ["all"]),
    ("partitioned_ranges_program", ["all", "CC=gcc",
                                    "CFLAGS=-Wall -Wextra -gdwarf-5 -O3 -DNDEBUG -ffunction-sections -freorder-blocks-and-partition",
                                    "BINARY=partitioned_ranges_program_gcc_dwarf5_sections",
                                    "OBJ=partitioned_ranges_program_gcc_dwarf5_sections.o"]),
    ("cpp_complex_program", ["all"]),
    ("static_scope_program", ["all"]),
    ("entry_value_recovery_program", ["all"]),
]


def clang_builds(clang: str):
    return [
        ("inline_callsite_program", ["all", f"CC={clang}", "CFLAGS=-Wall -Wextra -gdwarf-5 -O3",
                                     "BINARY=inline_callsite_program_clang_dwarf5",
                                     "OBJ=inline_callsite_program_clang_dwarf5.o"]),
        ("partitioned_ranges_program", ["all", f"CC={clang}",
                                        "CFLAGS=-Wall -Wextra -gdwarf-5 -O3 -DNDEBUG -ffunction-sections -fbasic-block-sections=all",
                                        "BINARY=partitioned_ranges_program_clang_dwarf5_rnglistx",
                                        "OBJ=partitioned_ranges_program_clang_dwarf5_rnglistx.o"]),
        ("static_scope_program", ["all", f"CC={clang}", "CFLAGS=-Wall -Wextra -gdwarf-5 -O0",
                                  "BINARY=static_scope_program_clang_dwarf5",
                                  "OBJ=static_scope_program_clang_dwarf5.o"]),
        ("entry_value_recovery_program", ["all", f"CC={clang}", "CFLAGS=-Wall -Wextra -gdwarf-5 -O3",
                                          "BINARY=entry_value_recovery_program_clang_dwarf5",
                                          "OBJ=entry_value_recovery_program_clang_dwarf5.o"]),
    ]


def find_clang() -> str | None:
    for name in [os.environ.get("CLANG_BIN", ""), "clang-18", "clang"]:
        if name and shutil.which(name):
            return name
    return None


def build_fixtures(repo: Path, work: Path, log) -> Path:
    src = repo / "e2e-tests" / "tests" / "fixtures"
    dst = work / "fixtures"
    stamp = dst / ".gs-e2e-built"
    if not stamp.exists():
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
    builds = list(GCC_BUILDS)
    clang = find_clang()
    if clang:
        builds += clang_builds(clang)
    for fixture, args in builds:
        r = subprocess.run(["make", "-s", *args], cwd=dst / fixture, capture_output=True, text=True)
        if r.returncode != 0:
            log(f"build: make {' '.join(args)} in {fixture} failed: {r.stderr.strip()[-300:]}")
    if clang and shutil.which("objcopy"):
        build_breg_fixture(dst / "entry_value_breg_program", clang, log)
    stamp.write_text("ok\n")
    return dst


def build_breg_fixture(d: Path, clang: str, log) -> None:
    """entry_value_breg_program_clang_debuglink as compile_entry_value_breg_
    program_clang() builds it: clang -O2 -no-pie, debug info split into a
    .gnu_debuglink file whose .debug_info is replaced by the synthetic unit
    of tests/synthetic_dwarf.py (clang emits no such entry_value(breg) itself)."""
    binary = d / "entry_value_breg_program_clang_debuglink"
    debug = d / "entry_value_breg_program_clang_debuglink.debug"
    if binary.exists() and debug.exists():
        return
    try:
        def run(*argv):
            r = subprocess.run(list(map(str, argv)), cwd=d, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{argv[0]} {argv[1]}: {r.stderr.strip()[-300:]}")
        run(clang, "-Wall", "-Wextra", "-gdwarf-4", "-O2", "-fomit-frame-pointer", "-no-pie",
            "-o", binary, d / "entry_value_breg_program.c")
        run("objcopy", "--only-keep-debug", binary, debug)
        run("objcopy", "--strip-debug", binary)
        func, anchor = elf_symbol(binary, "stack_entry_target"), elf_symbol(binary, "entry_value_breg_anchor")
        if func is None or anchor is None:
            raise RuntimeError("stack_entry_target / entry_value_breg_anchor not in the symbol table")
        size = max(func[1], anchor[0] - func[0] + 16)
        replace_debug_info(debug, stack_argument_unit("entry_value_breg_program.c", "stack_entry_target",
                                                      func[0], size, "payload"))
        run("objcopy", "--add-gnu-debuglink", debug, binary)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        log(f"build: entry_value_breg_program_clang_debuglink failed: {e}")
        binary.unlink(missing_ok=True)
        debug.unlink(missing_ok=True)

# --------------------------------------------------------------- analysis

LEVEL_SUFFIX = {"Debug": "", "O1": "_o1", "O2": "_o2", "O3": "_o3", "Stripped": "_stripped"}
COMPILER_SUFFIX = {"Default": "", "ClangDwarf5": "_clang_dwarf5",
                   "GccDwarf5FunctionSections": "_gcc_dwarf5_sections",
                   "ClangDwarf5Rnglistx": "_clang_dwarf5_rnglistx"}

# Fixture a file's tests use when the body names none (their helpers do).
FILE_DEFAULT_FIXTURE = {
    "script_execution.rs": "sample_program",
    "backtrace_execution.rs": "backtrace_hot_program",
    "c_multithread_execution.rs": "c_multithread_program",
    "cast_types_execution.rs": "cast_types_program",
    "complex_types_execution.rs": "complex_types_program",
    "cpp_script_execution.rs": "cpp_complex_program",
    "globals_execution.rs": "globals_program",
    "globals_target_execution.rs": "globals_program",
    "member_pointer_execution.rs": "member_pointer_program",
    "optimized_inline_call_value_execution.rs": "inline_call_value_program",
    "optimized_inline_execution.rs": "inline_callsite_program",
    "partitioned_ranges_execution.rs": "partitioned_ranges_program",
    "scalar_types_execution.rs": "scalar_types_program",
    "static_scope_execution.rs": "static_scope_program",
    "entry_value_recovery_execution.rs": "entry_value_recovery_program",
}


@dataclass
class HelperInfo:
    runner: bool = False
    target_mode: bool = False        # .with_target(
    pid_mode: bool = False           # .attach_to( / .with_pid(
    perf: bool = False
    config: bool = False
    fixtures: list = field(default_factory=list)
    libs: list = field(default_factory=list)
    cli: list = field(default_factory=list)


def _texts(toks: list[Tok]) -> list[str]:
    return [t.text for t in toks]


def _find_seq(toks: list[Tok], seq: list[str], start: int = 0) -> int:
    n = len(seq)
    for i in range(start, len(toks) - n + 1):
        if all(toks[i + k].text == seq[k] and toks[i + k].kind != "str" for k in range(n)):
            return i
    return -1


def _direct_info(body: list[Tok]) -> HelperInfo:
    info = HelperInfo()
    for i, t in enumerate(body):
        if t.kind == "ident":
            if t.text == "GhostscopeRunner":
                info.runner = True
            nxt = body[i + 1].text if i + 1 < len(body) else ""
            prev = body[i - 1].text if i else ""
            if prev == "." and nxt == "(":
                if t.text == "with_target":
                    info.target_mode = True
                elif t.text in ("attach_to", "with_pid"):
                    info.pid_mode = True
                elif t.text == "force_perf_event_array" and i + 2 < len(body) and body[i + 2].text == "true":
                    info.perf = True
                elif t.text == "with_config_content":
                    info.config = True
            if t.text.startswith("get_test_binary") and nxt == "(" and i + 2 < len(body) \
                    and body[i + 2].kind == "str":
                info.fixtures.append(body[i + 2].text)
        if t.kind == "str" and re.fullmatch(r"lib[\w-]+\.so(\.\d+)*", t.text):
            info.libs.append(t.text)
        if t.kind == "str" and t.text == "--backtrace-depth":
            # the value follows as a literal in a few helpers
            for k in range(i + 1, min(i + 8, len(body))):
                if body[k].kind == "str" and body[k].text.isdigit():
                    info.cli += ["--backtrace-depth", body[k].text]
                    break
    return info


def helper_table(fns) -> dict[str, HelperInfo]:
    by_name = {f.name: f for f in fns}
    direct = {f.name: _direct_info(f.body) for f in fns}
    calls = {f.name: {t.text for i, t in enumerate(f.body)
                      if t.kind == "ident" and t.text in by_name and t.text != f.name
                      and i + 1 < len(f.body) and f.body[i + 1].text == "("} for f in fns}
    merged: dict[str, HelperInfo] = {}

    def info_of(name: str, seen: frozenset) -> HelperInfo:
        if name in merged:
            return merged[name]
        d = direct[name]
        out = HelperInfo(d.runner, d.target_mode, d.pid_mode, d.perf, d.config,
                         list(d.fixtures), list(d.libs), list(d.cli))
        for callee in sorted(calls[name]):
            if callee in seen:
                continue
            c = info_of(callee, seen | {name})
            if c.runner:
                out.runner = True
                out.target_mode |= c.target_mode
                out.pid_mode |= c.pid_mode
                out.perf |= c.perf
                out.config |= c.config
                out.libs += c.libs
                out.cli += c.cli
            out.fixtures += c.fixtures
        merged[name] = out
        return out

    for f in fns:
        info_of(f.name, frozenset())
    return merged


@dataclass
class Run:
    call: str                    # helper name (or "GhostscopeRunner")
    script: str | None
    script_problem: str | None
    timeout: int
    exit_var: str | None
    stdout_var: str | None
    stderr_var: str | None
    level: str | None            # OptimizationLevel from the call, or a variable name
    info: HelperInfo
    line: int
    depth: int | None = None
    config: bool = False
    target_link: tuple | None = None   # (file next to the binary, link name): -t a symlink to it


@dataclass
class Step:
    kind: str                    # run | assert | bool | strs | str | for
    line: int
    run: Run | None = None
    toks: list = field(default_factory=list)
    name: str | None = None
    values: list = field(default_factory=list)
    text: str = ""


def _literal_list(toks: list[Tok]) -> list[str] | None:
    """[ "a", "b" ] / vec![..] / &[..] -> strings, else None."""
    t = [x for x in toks if not x.is_("&")]
    if len(t) >= 2 and t[0].is_("vec") and t[1].is_("!"):
        t = t[2:]
    if len(t) >= 2 and t[0].is_("[") and t[-1].is_("]"):
        items = split_top(t[1:-1])
        if items and all(len(it) == 1 and it[0].kind == "str" for it in items):
            return [it[0].text for it in items]
    return None


# format! arguments that are the target's PID as GhostScope sees it: filled
# in when the target runs.
PID_NAMES = {"host_pid", "input_pid", "pid", "target_pid", "visible_pid", "sandbox_pid", "test_pid"}
PID_PLACEHOLDER = "\x00PID\x00"
FILE_CONSTS: dict[str, str] = {}
ALL_HELPERS: dict = {}

# ------------------------------------------------- addresses GhostScope's API computes
#
# A few tests build `trace 0x{pc:x}` from an address GhostScope's Rust API
# computes at run time. The script keeps a placeholder
# `\x00ADDR|KIND|MODULE|QUERY|SPEC\x00` (MODULE: "" = the test's binary, else a
# file next to it, e.g. libgvars.so), filled in once the fixture is known, by
# an oracle that gives the address that API returns -- never by gs-cgen:
#
# - func: DwarfAnalyzer::lookup_function_addresses(NAME)[0]. For a concrete
#   subprogram GhostScope takes the first row after low_pc that has
#   prologue_end, else the next is_stmt row (LineMappingTable::
#   find_first_executable_address), kept only inside the function's range;
#   that is gdb's breakpoint address (gdb also honours prologue_end, else
#   skips to the function's second line-table row). Several locations
#   (inline copies) are not needed by any test and are refused.
# - line: lookup_addresses_by_source_line(FILE, N)[0]: per group of rows
#   within 32 bytes the first is_stmt row of that line, lowest first; that is
#   the lowest `starts at address` of gdb's `info line FILE:N`.
# - sym: the e2e file's own lookup_symbol(): the ELF symbol's st_value
#   (readelf -sW).

ADDR_OPEN = "\x00ADDR|"
ADDR_RE = re.compile(r"\x00ADDR\|(\w+)\|([^|]*)\|([^|]*)\|([^\x00]*)\x00")


def addr_placeholder(kind: str, module: str, query: str) -> str:
    return f"{ADDR_OPEN}{kind}|{module}|{query}|\x00"


def _tool(argv: list[str]) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return r.stdout + r.stderr


def gdb_function_address(path: Path, name: str) -> int | None:
    """gdb's breakpoint address for a function, unrelocated (module-relative)."""
    out = _tool(["gdb", "-batch", "-nx", "-ex", f"break {name}", str(path)])
    m = re.search(r"^Breakpoint 1 at (0x[0-9a-f]+)", out, re.M)
    return int(m.group(1), 16) if m and "locations)" not in out else None


def gdb_line_address(path: Path, where: str) -> int | None:
    """The lowest address gdb's `info line FILE:N` says the line starts at."""
    out = _tool(["gdb", "-batch", "-nx", "-ex", f"info line {where}", str(path)])
    found = [int(a, 16) for a in re.findall(r"starts at address (0x[0-9a-f]+)", out)]
    return min(found) if found else None


def elf_symbol(path: Path, name: str) -> tuple[int, int] | None:
    """(st_value, st_size) of a symbol, as the `object` crate reports them."""
    for line in _tool(["readelf", "-sW", str(path)]).splitlines():
        f = line.split()
        if len(f) >= 8 and f[7] == name and f[0].endswith(":"):
            return int(f[1], 16), int(f[2], 0)
    return None


def resolve_addresses(script: str, binary: str) -> tuple[str, str | None]:
    """The script with its address placeholders filled in for this binary,
    or (script, why not)."""
    problems = []

    def one(m: re.Match) -> str:
        kind, module, query, spec = m.groups()
        path = Path(binary) if not module else Path(binary).parent / module
        if kind == "func":
            addr = gdb_function_address(path, query)
        elif kind == "line":
            addr = gdb_line_address(path, query)
        else:
            sym = elf_symbol(path, query)
            addr = sym[0] if sym else None
        if addr is None:
            problems.append(f"harness: no {kind} address for {query} in {path.name}")
            return m.group(0)
        return format(addr, spec or "d")

    out = ADDR_RE.sub(one, script)
    return out, (problems[0] if problems else None)


def file_consts(toks: list[Tok]) -> dict[str, str]:
    """`const NAME: T = LITERAL;` at any level."""
    out = {}
    for i, t in enumerate(toks):
        if t.is_("const") and i + 5 < len(toks) and toks[i + 1].kind == "ident" and toks[i + 2].is_(":"):
            k = i + 3
            while k < len(toks) and not toks[k].is_("=") and not toks[k].is_(";"):
                k += 1
            if k + 2 < len(toks) and toks[k].is_("=") and toks[k + 2].is_(";") \
                    and toks[k + 1].kind in ("str", "num"):
                v = toks[k + 1].text
                if toks[k + 1].kind == "num":
                    v = re.sub(r"(u|i)(8|16|32|64|size)$", "", v).replace("_", "")
                out[toks[i + 1].text] = v
    return out


def _format_script(toks: list[Tok], strs: dict, nums: dict) -> str:
    """format!(LIT, args..) with args bound to literals in the test."""
    inner = toks[3:-1] if toks[2].is_("(") else None
    if inner is None:
        raise Unsupported("format!")
    parts = split_top(inner)
    if not parts or len(parts[0]) != 1 or parts[0][0].kind != "str":
        raise Unsupported("format! template")
    fmt = parts[0][0].text
    positional, named = [], {}
    for p in parts[1:]:
        if len(p) >= 3 and p[0].kind == "ident" and p[1].is_("="):
            key, val = p[0].text, p[2:]
        else:
            key, val = None, p
        val = [x for x in val if not x.is_("&")]
        if len(val) == 1 and val[0].kind == "str":
            v = val[0].text
        elif len(val) == 1 and val[0].kind == "num":
            v = val[0].text
        elif len(val) == 1 and val[0].kind == "ident" and val[0].text in strs:
            v = strs[val[0].text]
        elif len(val) == 1 and val[0].kind == "ident" and val[0].text in nums:
            v = nums[val[0].text]
        elif len(val) == 1 and val[0].kind == "ident" and val[0].text in PID_NAMES:
            v = PID_PLACEHOLDER
        else:
            raise Unsupported("format! argument " + " ".join(_texts(val)))
        if key:
            named[key] = v
        else:
            positional.append(v)
    out, i, pos = [], 0, 0
    while i < len(fmt):
        if fmt.startswith("{{", i):
            out.append("{")
            i += 2
        elif fmt.startswith("}}", i):
            out.append("}")
            i += 2
        elif fmt[i] == "{":
            end = fmt.index("}", i)
            key, _, spec = fmt[i + 1:end].partition(":")
            if key == "":
                out.append(_with_spec(positional[pos], spec))
                pos += 1
            elif key.isdigit():
                out.append(_with_spec(positional[int(key)], spec))
            elif key in named:
                out.append(_with_spec(named[key], spec))
            elif key in strs:
                out.append(strs[key])
            elif key in nums:
                out.append(_with_spec(nums[key], spec))
            elif key in PID_NAMES:
                out.append(PID_PLACEHOLDER)
            else:
                raise Unsupported("format! placeholder {%s}" % key)
            i = end + 1
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out)


def _with_spec(value, spec: str) -> str:
    """A format! argument as text. Only an address placeholder takes the
    spec (`{pc:x}`): its value exists only once the fixture is known, so the
    spec travels with it; literals are written as they are."""
    text = str(value)
    if spec and text.startswith(ADDR_OPEN) and text.endswith("|\x00"):
        return text[:-1] + spec + "\x00"
    return text


@dataclass
class PathState:
    """What a test's `let`s say about files and addresses: DwarfAnalyzers
    and the module each reads ("" = the test's binary), address lists,
    files next to the binary (`bin_dir.join("libgvars.so")`), temp dirs,
    files in them, and symlinks made there (name -> (file it points to,
    link name))."""
    analyzers: dict = field(default_factory=dict)
    addr_lists: dict = field(default_factory=dict)
    files: dict = field(default_factory=lambda: {"binary_path": ""})
    tempdirs: set = field(default_factory=set)
    temp_files: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)


def _single_name(toks: list[Tok]) -> str | None:
    t = [x for x in toks if not x.is_("&")]
    return t[0].text if len(t) == 1 and t[0].kind == "ident" else None


def _call_args(rhs: list[Tok], method: str) -> list[list[Tok]] | None:
    k = _find_seq(rhs, [method, "("])
    return split_top(rhs[k + 2:match_close(rhs, k + 1)]) if k >= 0 else None


def path_let(name: str, rhs: list[Tok], ps: PathState, nums: dict) -> bool:
    """Record a `let` about files or GhostScope-computed addresses; True if
    it was one. Addresses become placeholders in `nums` (see ADDR_OPEN)."""
    first = rhs[0].text if rhs and rhs[0].kind == "ident" else None
    if (args := _call_args(rhs, "from_exec_path")) is not None and _find_seq(rhs, ["DwarfAnalyzer"]) >= 0:
        module = ps.files.get(_single_name(args[0]) if args else None)
        if module is not None:
            ps.analyzers[name] = module
        return True
    if first in ps.analyzers and len(rhs) > 3 and rhs[1].is_("."):
        args = _call_args(rhs, rhs[2].text) or []
        lits = [a[0].text for a in args if len(a) == 1 and a[0].kind in ("str", "num")]
        kind = {"lookup_function_addresses": "func", "lookup_addresses_by_source_line": "line"}.get(rhs[2].text)
        if kind is None or len(lits) != len(args):
            return False
        query = lits[0] if kind == "func" else f"{lits[0]}:{re.sub(r'[^0-9].*', '', lits[1])}"
        ph = addr_placeholder(kind, ps.analyzers[first], query)
        if _find_seq(rhs, ["first", "(", ")"]) >= 0:           # .first().map(|a| a.address)
            nums[name] = ph
        else:
            ps.addr_lists[name] = ph
        return True
    if first in ps.addr_lists and len(rhs) >= 6 and rhs[1].is_("[") and rhs[2].text == "0" \
            and rhs[4].is_(".") and rhs[5].is_("address"):           # addrs[0].address
        nums[name] = ps.addr_lists[first]
        return True
    if first in ps.tempdirs and (args := _call_args(rhs, "join")) and args[0][0].kind == "str":
        ps.temp_files[name] = args[0][0].text                 # temp_dir.path().join("x.so")
        return True
    if (args := _call_args(rhs, "join")) and len(args[0]) == 1 and args[0][0].kind == "str" \
            and re.fullmatch(r"lib[\w-]+\.so(\.\d+)*", args[0][0].text):
        ps.files[name] = args[0][0].text                      # bin_dir.join("libgvars.so")
        return True
    if _find_seq(rhs, ["tempdir_in", "("]) >= 0 or _find_seq(rhs, ["tempdir", "("]) >= 0:
        ps.tempdirs.add(name)
        return True
    return False


def symlink_statement(toks: list[Tok], i: int, ps: PathState) -> int:
    """`unix_fs::symlink(&lib_path, &target_symlink)?;` at toks[i]: record
    the link (made again at run time, see run_gs); return the index after
    it, else i."""
    if not (toks[i].is_("symlink") and i + 1 < len(toks) and toks[i + 1].is_("(")):
        return i
    close = match_close(toks, i + 1)
    args = split_top(toks[i + 2:close])
    src, dst = (_single_name(args[0]), _single_name(args[1])) if len(args) == 2 else (None, None)
    if src in ps.files and dst in ps.temp_files:
        ps.links[dst] = (ps.files[src], ps.temp_files[dst])
    return close + 1


def symbol_let(names: list, rhs: list[Tok], ps: PathState, nums: dict) -> bool:
    """`let (pc, _) = lookup_symbol(&binary_path, NAME)?;` (the e2e file's
    own ELF symbol lookup): pc becomes a `sym` placeholder."""
    if not (rhs and rhs[0].is_("lookup_symbol") and len(rhs) > 1 and rhs[1].is_("(")):
        return False
    args = split_top(rhs[2:match_close(rhs, 1)])
    if len(args) != 2 or len(args[1]) != 1 or not names or not names[0]:
        return False
    module = ps.files.get(_single_name(args[0]))
    sym = args[1][0].text if args[1][0].kind == "str" else FILE_CONSTS.get(args[1][0].text)
    if module is None or not sym:
        return False
    nums[names[0]] = addr_placeholder("sym", module, sym)
    return True


# Assertion helpers of a test file that check that some stdout line matches
# REGEX with group N equal to the target's host PID (their bodies use a
# Regex, which the evaluator does not read): name -> (REGEX, N).
PID_LINE_HELPERS = {
    # globals_target_execution.rs
    "assert_saw_lib_counter_for_host_pid": (r"PID:([0-9]+) HP:([0-9]+) LC:([0-9]+)", 2),
}


def _int_of(tok: Tok) -> int | None:
    if tok.kind != "num":
        return None
    m = re.match(r"\d+", tok.text.replace("_", ""))
    return int(m.group(0)) if m else None


def analyse(body: list[Tok], helpers: dict[str, HelperInfo]) -> list[Step]:
    """The test body as a list of steps, in source order."""
    steps: list[Step] = []
    strs: dict[str, str] = {k: v for k, v in FILE_CONSTS.items() if not v[:1].isdigit()}
    nums: dict[str, str] = {k: v for k, v in FILE_CONSTS.items() if v[:1].isdigit()}
    pending: dict[str, Run] = {}
    ps = PathState()
    i = 0
    n = len(body)
    while i < n:
        t = body[i]
        if (k := symlink_statement(body, i, ps)) != i:
            i = k
            continue
        # let NAME = <literal> ;   let NAME = format!(..);   let NAME = [..];
        if t.is_("let") and i + 2 < n:
            j = i + 1
            is_mut = body[j].is_("mut")
            if is_mut:
                j += 1
            if body[j].is_("("):
                close = match_close(body, j)
                names = [p[-1].text if p else None for p in split_top(body[j + 1:close])]
                if close + 1 < n and body[close + 1].is_("="):
                    end = _stmt_end(body, close + 2)
                    rhs = body[close + 2:end]
                    if len(rhs) in (1, 2) and rhs[0].kind == "ident" and rhs[0].text in pending:
                        # let result = runner.run().await; ...; let (exit_code, stdout, ..) = result?;
                        r = pending[rhs[0].text]
                        r.exit_var, r.stdout_var, r.stderr_var = (list(names) + [None] * 3)[:3]
                        i = end + 1
                        continue
                    if symbol_let(names, rhs, ps, nums):
                        i = end + 1
                        continue
                    run = _run_from(rhs, names, strs, nums, helpers, t.line, ps.links)
                    if run:
                        steps.append(Step("run", t.line, run=run))
                    i = end + 1
                    continue
            if body[j].kind == "ident":
                name = body[j].text
                k = j + 1
                if k < n and body[k].is_(":"):                 # type annotation
                    while k < n and not body[k].is_("="):
                        k += 1
                if k < n and body[k].is_("="):
                    end = _stmt_end(body, k + 1)
                    rhs = body[k + 1:end]
                    if len(rhs) == 1 and rhs[0].kind == "str":
                        strs[name] = rhs[0].text
                        steps.append(Step("str", t.line, name=name, text=rhs[0].text))
                    elif len(rhs) == 1 and rhs[0].kind == "num":
                        nums[name] = rhs[0].text
                    elif len(rhs) >= 3 and rhs[0].is_("format") and rhs[1].is_("!"):
                        try:
                            strs[name] = _format_script(rhs, strs, nums)
                            steps.append(Step("str", t.line, name=name, text=strs[name]))
                        except Unsupported as e:
                            steps.append(Step("str", t.line, name=name, text="",
                                              values=[f"unsupported: {e}"]))
                    elif rhs and rhs[0].is_("first_backtrace_block_after"):
                        close = match_close(rhs, 1)
                        steps.append(Step("derive", t.line, name=name, toks=rhs[2:close]))
                    elif rhs and rhs[0].is_("matching_backtrace_block_with_ordered_patterns_after"):
                        close = match_close(rhs, 1)
                        steps.append(Step("derive_matching", t.line, name=name, toks=rhs[2:close]))
                    elif (lst := _literal_list(rhs)) is not None:
                        steps.append(Step("strs", t.line, name=name, values=lst))
                    elif path_let(name, rhs, ps, nums):
                        pass
                    elif rhs and any(x.kind == "ident" and x.text in ("OptimizationLevel",) for x in rhs[:1]) \
                            and len(rhs) == 3:
                        steps.append(Step("str", t.line, name=name, text="level:" + rhs[2].text))
                    elif rhs and (rhs[0].is_("[") or rhs[0].is_("&")) and \
                            all(x.text in ("[", "]", ",", "&", "OptimizationLevel", "::", "Debug", "O1", "O2", "O3")
                                for x in rhs):
                        levels = [x.text for x in rhs if x.text in LEVEL_SUFFIX]
                        steps.append(Step("levels", t.line, name=name, values=levels))
                    else:
                        run = _run_from(rhs, [None, name, None], strs, nums, helpers, t.line, ps.links)
                        if run:
                            pending[name] = run
                            steps.append(Step("run", t.line, run=run))
                        elif is_mut:       # set later in a loop: not a value we know
                            steps.append(Step("unknown", t.line, name=name))
                        else:
                            steps.append(Step("bool", t.line, name=name, toks=rhs))
                    i = end + 1
                    continue
        # for VAR in LIST {
        if t.is_("for") and i + 3 < n and body[i + 1].kind == "ident" and body[i + 2].is_("in"):
            k = i + 3
            while k < n and not body[k].is_("{"):
                if body[k].text in ("(", "["):
                    k = match_close(body, k)
                k += 1
            src = body[i + 3:k]
            steps.append(Step("for", t.line, name=body[i + 1].text, toks=src,
                              values=_literal_list(src) or []))
            i = k + 1
            continue
        # assertions
        if t.kind == "ident" and t.text in ("assert", "assert_eq", "assert_ne", "ensure") \
                and i + 2 < n and body[i + 1].is_("!") and body[i + 2].is_("("):
            close = match_close(body, i + 2)
            steps.append(Step("assert", t.line, name=t.text, toks=body[i + 3:close]))
            i = close + 1
            continue
        if t.kind == "ident" and t.text in PID_LINE_HELPERS and i + 1 < n and body[i + 1].is_("("):
            close = match_close(body, i + 1)
            steps.append(Step("pid_line", t.line, name=t.text, toks=body[i + 2:close]))
            i = close + 1
            continue
        if t.is_("assert_ordered_patterns") and i + 1 < n and body[i + 1].is_("("):
            close = match_close(body, i + 1)
            steps.append(Step("ordered", t.line, toks=body[i + 2:close]))
            i = close + 1
            continue
        i += 1
    return steps


def _stmt_end(body: list[Tok], start: int) -> int:
    depth = 0
    for k in range(start, len(body)):
        x = body[k]
        if x.kind == "punct" and x.text in "([{":
            depth += 1
        elif x.kind == "punct" and x.text in ")]}":
            depth -= 1
            if depth < 0:
                return k
        elif depth == 0 and x.is_(";"):
            return k
    return len(body)


def _is_script(text: str) -> bool:
    """A trace script, not a fixture name such as `backtrace_hot_program`."""
    return re.search(r"(?m)^\s*trace\s+\S", text) is not None


def _run_from(rhs, names, strs, nums, helpers, line, links=None) -> Run | None:
    """A run of gs-cgen in the right-hand side of a let, if any. `links`:
    symlinks the test made (PathState.links), for `.with_target(&link)`."""
    call = None
    args: list[list[Tok]] = []
    info = None
    target_link = None
    for k, x in enumerate(rhs):
        if x.kind == "ident" and x.text in helpers and helpers[x.text].runner and \
                k + 1 < len(rhs) and rhs[k + 1].is_("("):
            close = match_close(rhs, k + 1)
            call, args, info = x.text, split_top(rhs[k + 2:close]), helpers[x.text]
            break
        if x.is_("GhostscopeRunner"):
            call = "GhostscopeRunner"
            info = _direct_info(rhs)
            ws = _find_seq(rhs, ["with_script", "("])
            if ws >= 0:
                close = match_close(rhs, ws + 1)
                args = [rhs[ws + 2:close]]
            to = _find_seq(rhs, ["timeout_secs", "("])
            if to >= 0 and rhs[to + 2].kind == "num":
                args.append([rhs[to + 2]])
            wt = _find_seq(rhs, ["with_target", "("])
            link = (links or {}).get(_single_name(rhs[wt + 2:match_close(rhs, wt + 1)])) if wt >= 0 else None
            if link:
                info.libs = [link[0]]
                target_link = link
            break
    if call is None:
        return None
    script, problem = None, None
    # the script argument: the first that is a script (helpers may take a fixture name first)
    sidx = 0
    for k, a in enumerate(args):
        a2 = [x for x in a if not x.is_("&")]
        if len(a2) == 1 and ((a2[0].kind == "str" and _is_script(a2[0].text)) or
                             (a2[0].kind == "ident" and _is_script(strs.get(a2[0].text, "")))):
            sidx = k
            break
    sarg = [x for x in (args[sidx] if args else []) if not x.is_("&")]
    if len(sarg) == 1 and sarg[0].kind == "str":
        script = sarg[0].text
    elif len(sarg) == 1 and sarg[0].kind == "ident" and sarg[0].text in strs:
        script = strs[sarg[0].text]
    elif len(sarg) >= 3 and sarg[0].is_("format"):
        try:
            script = _format_script(sarg, strs, nums)
        except Unsupported as e:
            problem = str(e)
    else:
        problem = "script argument " + " ".join(_texts(sarg))[:80]
    timeout, depth, level = 3, None, None
    ints = [_int_of(a[0]) for a in args[sidx + 1:] if len(a) == 1 and _int_of(a[0]) is not None]
    if "depth" in call and ints:
        depth = ints[0]
        ints = ints[1:]
    # a timeout is seconds; larger numbers are event rates (output_events_per_sec)
    ints = [v for v in ints if 1 <= v <= 60]
    if ints:
        timeout = ints[0]
    for a in args[sidx + 1:]:
        tx = [x.text for x in a if not x.is_("*") and not x.is_("&")]
        if len(tx) == 3 and tx[0] == "OptimizationLevel":
            level = tx[2]
        elif len(tx) == 1 and a[-1].kind == "ident" and not tx[0][0].isdigit():
            level = level or ("var:" + tx[0])
    config = any(x.is_("Some") for a in args[1:] for x in a) or \
        (call == "GhostscopeRunner" and _find_seq(rhs, ["with_config_content", "("]) >= 0)
    padded = (list(names) + [None, None, None])[:4]
    if len(names) == 4:
        exit_var, stdout_var, stderr_var = padded[0], padded[1], padded[2]
    else:
        exit_var, stdout_var, stderr_var = padded[0], padded[1], padded[2]
    return Run(call, script, problem, timeout, exit_var, stdout_var, stderr_var, level, info, line,
               depth, config, target_link)

# ------------------------------------------------------------------ cases


@dataclass
class Variant:
    binary: str | None
    level: str


@dataclass
class Case:
    file: str
    name: str
    line: int
    verdict: str = ""
    reason: str = ""
    steps: list = field(default_factory=list)
    variants: list = field(default_factory=list)
    runs: list = field(default_factory=list)          # results
    failures: list = field(default_factory=list)
    unchecked: list = field(default_factory=list)
    checks: int = 0


# Helpers of a test file that build their own fixture binary: name ->
# (fixture dir, binary), built by build_fixtures.
FIXTURE_BUILDERS = {
    "compile_entry_value_breg_program_clang": ("entry_value_breg_program",
                                               "entry_value_breg_program_clang_debuglink"),
}


def binary_for(body: list[Tok], file: str, helpers_used: list[HelperInfo], level: str,
               fixtures: Path) -> tuple[str | None, str | None]:
    """(path, problem) of the fixture binary a test runs."""
    for i, t in enumerate(body):
        if t.kind == "ident" and t.text in FIXTURE_BUILDERS and i + 1 < len(body) and body[i + 1].is_("("):
            path = fixtures.joinpath(*FIXTURE_BUILDERS[t.text])
            if not path.exists():
                return None, f"fixture binary {path.name} not built (needs clang and objcopy)"
            return str(path), None
    # explicit in the body
    for i, t in enumerate(body):
        if t.kind != "ident" or i + 2 >= len(body) or not body[i + 1].is_("("):
            continue
        if t.text == "get_test_binary_complex_nopie":
            return str(fixtures / "complex_types_program" / "complex_types_program_nopie"), None
        if t.text in ("get_test_binary_with_opt", "get_test_binary", "get_test_binary_with_compiler") \
                and (body[i + 2].kind == "str" or body[i + 2].text in FILE_CONSTS):
            name = body[i + 2].text if body[i + 2].kind == "str" else FILE_CONSTS[body[i + 2].text]
            suffix = ""
            close = match_close(body, i + 1)
            seg = _texts(body[i + 2:close])
            if t.text == "get_test_binary_with_opt":
                lv = next((x for x in seg if x in LEVEL_SUFFIX), None)
                if lv is None:
                    lv = level
                suffix = LEVEL_SUFFIX[lv]
            elif t.text == "get_test_binary_with_compiler":
                comp = next((x for x in seg if x in COMPILER_SUFFIX), "Default")
                suffix = COMPILER_SUFFIX[comp]
            path = fixtures / name / (name + suffix)
            if not path.exists():
                return None, f"fixture binary {path.name} not built (clang variant needs a clang on PATH)" \
                    if "clang" in suffix else f"fixture binary {path.name} missing"
            return str(path), None
        if t.text == "FIXTURE_NAME":
            pass
    # helpers the body calls (spawn_x_program() and the like), in order
    for i, t in enumerate(body):
        if t.kind == "ident" and t.text in ALL_HELPERS and i + 1 < len(body) and body[i + 1].is_("(") \
                and ALL_HELPERS[t.text].fixtures and not ALL_HELPERS[t.text].runner:
            name = ALL_HELPERS[t.text].fixtures[0]
            return str(fixtures / name / (name + LEVEL_SUFFIX.get(level, ""))), None
    for h in helpers_used:
        if h.fixtures:
            name = h.fixtures[0]
            return str(fixtures / name / (name + LEVEL_SUFFIX.get(level, ""))), None
    name = FILE_DEFAULT_FIXTURE.get(file)
    if name is None:
        return None, "no fixture binary found"
    if file == "entry_value_recovery_execution.rs":
        pass
    path = fixtures / name / (name + LEVEL_SUFFIX.get(level, ""))
    if not path.exists():
        path = fixtures / name / name
    return str(path), None


def plan_case(file: str, fn, helpers: dict[str, HelperInfo], fixtures: Path, fns_by_name) -> Case:
    case = Case(file, fn.name, fn.line)
    if fn.ignored:
        case.verdict, case.reason = "NOT_APPLICABLE", "#[ignore] in GhostScope"
        return case
    body = fn.body
    steps = analyse(body, helpers)
    runs = [s.run for s in steps if s.kind == "run"]
    if not runs:
        # a helper that runs the scripts itself: inline its body
        called = [t.text for i, t in enumerate(body) if t.kind == "ident" and t.text in helpers
                  and i + 1 < len(body) and body[i + 1].is_("(") and helpers[t.text].runner]
        for name in called:
            hbody = fns_by_name[name].body
            if any(s.kind == "run" for s in analyse(hbody, helpers)):
                body = body + hbody
                steps = analyse(body, helpers)
                runs = [s.run for s in steps if s.kind == "run"]
                break
    if not runs:
        if called:
            case.verdict = "NOT_APPLICABLE"
            case.reason = f"harness: the scripts are run inside helper {called[0]}() with its own checks"
            return case
        case.verdict = "NOT_APPLICABLE"
        case.reason = "runs no GhostScope script (exercises GhostScope's Rust API)"
        return case
    for r in runs:
        if r.config:
            case.verdict, case.reason = "NOT_APPLICABLE", "uses a GhostScope config file"
            return case
        if r.script is None:
            case.verdict, case.reason = "NOT_APPLICABLE", f"harness: cannot extract script ({r.script_problem})"
            return case
    # variants: a list of OptimizationLevels iterated by a for loop
    levels: list[str] = []
    level_lists = {s.name: s.values for s in steps if s.kind == "levels"}
    level_vars = {s.name: s.text[6:] for s in steps if s.kind == "str" and s.text.startswith("level:")}
    for s in steps:
        if s.kind == "for":
            src = [x.text for x in s.toks if x.text not in ("&", "*")]
            if len(src) == 1 and src[0] in level_lists:
                levels = level_lists[src[0]]
                level_vars[s.name] = "LOOP"
            elif any(x in ("OptimizationLevel",) for x in src):
                levels = [x for x in src if x in LEVEL_SUFFIX]
                level_vars[s.name] = "LOOP"
    if not levels:
        lv = None
        for r in runs:
            if r.level and not r.level.startswith("var:"):
                lv = r.level
            elif r.level and r.level[4:] in level_vars and level_vars[r.level[4:]] != "LOOP":
                lv = level_vars[r.level[4:]]
        if lv is None:
            for i, t in enumerate(body):
                if t.is_("OptimizationLevel") and i + 2 < len(body) and body[i + 2].text in LEVEL_SUFFIX \
                        and not (i and body[i - 1].text in ("==", "!=")):
                    lv = body[i + 2].text
                    break
        levels = [lv or "Debug"]
    # a `-t` library named in the test itself (lib_path = dir.join("libgvars.so"))
    body_libs = [t.text for t in body if t.kind == "str" and re.fullmatch(r"lib[\w-]+\.so(\.\d+)*", t.text)]
    for r in runs:
        names_lib = (_find_seq(body, ["with_target", "(", "&", "lib_path"]) >= 0
                     or "library" in fn.name or "library" in r.call)
        if r.info.target_mode and body_libs and not r.info.libs and names_lib:
            r.info = HelperInfo(**{**asdict(r.info), "libs": body_libs[:1]})
    used = [r.info for r in runs]
    for lv in levels:
        path, problem = binary_for(body, file, used, lv, fixtures)
        if problem:
            case.verdict, case.reason = "NOT_APPLICABLE", problem
            return case
        case.variants.append(Variant(path, lv))
    case.steps = steps
    return case

# ---------------------------------------------------------------- running


class Proc:
    """A process we started, with both pipes drained by threads."""

    def __init__(self, argv, cwd=None, capture=True):
        self.p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                                  stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
                                  start_new_session=True)
        self.out, self.err = [], []
        self.threads = []
        if capture:
            for stream, sink in ((self.p.stdout, self.out), (self.p.stderr, self.err)):
                th = threading.Thread(target=self._drain, args=(stream, sink), daemon=True)
                th.start()
                self.threads.append(th)

    @staticmethod
    def _drain(stream, sink):
        for chunk in iter(lambda: stream.readline(), b""):
            sink.append(chunk.decode("utf-8", "replace"))

    def stderr_text(self):
        return "".join(self.err)

    def stdout_text(self):
        return "".join(self.out)

    def stop(self, sig=signal.SIGKILL, wait=5.0):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(wait)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        for th in self.threads:
            th.join(2)


def run_gs(gs: str, run: Run, variant: Variant, startup: float, margin: float) -> dict:
    binary = variant.binary
    target_mode = run.info.target_mode
    lib = run.info.libs[0] if run.info.libs else None
    args = ["trace", "--output", "plain"]
    target = None
    script, problem = resolve_addresses(run.script, binary)
    if problem:
        return {"argv": [], "exit": None, "ready": False, "killed": False, "stdout": "",
                "stderr": problem, "seconds": 0, "script": script}
    link_dir = None
    if target_mode:
        tpath = str(Path(binary).parent / lib) if lib else binary
        if run.target_link:
            link_dir, tpath = make_target_link(binary, *run.target_link)
        args += ["-t", tpath]
        if run.info.pid_mode and run.call == "GhostscopeRunner":      # -t PATH -p PID
            target = Proc([binary], cwd=str(Path(binary).parent), capture=False)
            time.sleep(0.5)
            args += ["-p", str(target.p.pid)]
    else:
        target = Proc([binary], cwd=str(Path(binary).parent), capture=False)
        time.sleep(0.5)
        args += ["-p", str(target.p.pid)]
    if run.info.perf:
        args += ["--event-map", "perf"]
    if run.depth:
        args += ["--backtrace-depth", str(min(max(run.depth, 1), 128))]
    elif run.info.cli:
        args += run.info.cli
    if PID_PLACEHOLDER in script:
        if target is None:          # -t mode: the PID exists only later
            if link_dir:
                shutil.rmtree(link_dir, ignore_errors=True)
            return {"argv": [], "exit": None, "ready": False, "killed": False, "stdout": "",
                    "stderr": "harness: script needs the PID of a -t target", "seconds": 0}
        script = script.replace(PID_PLACEHOLDER, str(target.p.pid))
    args += ["-s", script]
    t0 = time.time()
    gsp = Proc([gs, *args])
    ready = False
    while time.time() - t0 < startup:
        if "tracing" in gsp.stderr_text():
            ready = True
            break
        if gsp.p.poll() is not None:
            break
        time.sleep(0.05)
    killed = False
    if ready:
        if target_mode and target is None:
            target = Proc([binary], cwd=str(Path(binary).parent), capture=False)
        deadline = time.time() + run.timeout + margin
        while time.time() < deadline and gsp.p.poll() is None:
            time.sleep(0.05)
        if gsp.p.poll() is None:
            gsp.p.send_signal(signal.SIGINT)
            try:
                gsp.p.wait(30)
            except subprocess.TimeoutExpired:
                killed = True
    elif gsp.p.poll() is None:
        killed = True
    if killed:
        gsp.stop()
    else:
        gsp.p.wait()
        for th in gsp.threads:
            th.join(5)
    if target:
        target.stop()
    if link_dir:
        shutil.rmtree(link_dir, ignore_errors=True)
    code = gsp.p.returncode
    if killed:
        code = 0 if gsp.stdout_text().strip() else -9      # GhostScope's runner does the same
    return {"argv": [gs, *args], "exit": code, "ready": ready, "killed": killed,
            "stdout": gsp.stdout_text(), "stderr": gsp.stderr_text(),
            "seconds": round(time.time() - t0, 2), "script": script,
            "target_pid": target.p.pid if target else None}


def make_target_link(binary: str, file: str, link: str) -> tuple[str, str]:
    """(temp dir, link path): the symlink a test makes to a fixture file in
    a fresh `.ghostscope-test-target-*` dir (GhostScope's tests make it in
    their workspace; here next to the fixture dirs), so that `-t` names the
    link and the script's module suffix is the link's name."""
    d = tempfile.mkdtemp(prefix=".ghostscope-test-target-", dir=str(Path(binary).parent.parent))
    path = os.path.join(d, link)
    os.symlink(str(Path(binary).parent / file), path)
    return d, path


def exit_expectation(step: Step, env: Env):
    """assert_eq!(exit_code, 0) style: returns (expected description, ok) or None."""
    parts = split_top(step.toks)
    if step.name in ("assert_eq", "assert_ne") and len(parts) >= 2:
        a, b = parts[0], parts[1]
        for x, y in ((a, b), (b, a)):
            if len(x) == 1 and x[0].text in env.exit_vars and len(y) == 1 and y[0].kind == "num":
                want = int(re.match(r"-?\d+", y[0].text).group(0))
                code = env.exit_code
                ok = (code == want) if step.name == "assert_eq" else (code != want)
                return (f"exit {'==' if step.name == 'assert_eq' else '!='} {want}", ok)
    return None


def execute(case: Case, gs: str, startup: float, margin: float, log) -> None:
    for variant in case.variants:
        env = Env()
        bool_missing: dict[str, list[str]] = {}
        last_run = None
        for step in case.steps:
            if step.kind == "str":
                env.strs[step.name] = step.text
            elif step.kind == "strs":
                env.lists[step.name] = step.values
            elif step.kind == "for":
                src = [x for x in step.toks if not x.is_("&") and not x.is_("*")]
                if step.values:
                    env.lists[step.name] = step.values
                elif len(src) == 1 and src[0].text in env.lists:
                    env.lists[step.name] = env.lists[src[0].text]
                elif len(src) >= 3 and src[0].kind == "ident" and src[0].text in env.lists \
                        and src[1].is_("."):           # list.iter()
                    env.lists[step.name] = env.lists[src[0].text]
            elif step.kind == "run":
                r = step.run
                res = run_gs(gs, r, variant, startup, margin)
                res["line"] = step.line
                res["level"] = variant.level
                res.setdefault("script", r.script)
                case.runs.append(res)
                last_run = res
                log(f"    run line {step.line} [{variant.level}] exit={res['exit']} "
                    f"ready={res['ready']} {res['seconds']}s")
                for name in (r.stdout_var,):
                    if name and name != "_":
                        env.texts[name] = res["stdout"]
                if r.stderr_var and r.stderr_var != "_":
                    env.texts[r.stderr_var] = None      # GhostScope's wording: not judged
                if r.exit_var and "count" in r.exit_var:
                    # GhostScope's backtrace helpers return the number of
                    # `backtrace: ` blocks, and fail unless the run exited 0
                    env.counts[r.exit_var] = res["stdout"].count("backtrace: ")
                    if res["exit"] != 0:
                        case.failures.append({"line": step.line, "check": "exit == 0 (helper's ensure!)",
                                              "got": f"exit {res['exit']}", "stderr": _first_error(res["stderr"]),
                                              "level": variant.level, "run_line": step.line})
                elif r.exit_var and r.exit_var != "_":
                    env.exit_vars.add(r.exit_var)
                env.exit_code = res["exit"]
            elif step.kind == "derive":
                parts = split_top(step.toks)
                src = [x for x in parts[0] if not x.is_("&")] if parts else []
                text = env.texts.get(src[0].text) if len(src) == 1 else None
                marker = parts[1][0].text if len(parts) > 1 and parts[1][0].kind == "str" else None
                depth = _int_of(parts[2][0]) if len(parts) > 2 else None
                if text is None or marker is None:
                    continue
                block, problem = None, None
                at = text.find(marker)
                if at < 0:
                    problem = f"missing marker {marker!r}"
                else:
                    rest = text[at:]
                    h = rest.find("backtrace:")
                    if h < 0:
                        problem = "missing backtrace header 'backtrace:'"
                    else:
                        block = rest[h:]
                        e = block.find("\n[")
                        block = block if e < 0 else block[:e]
                        if depth is not None and f"(max {depth})" not in block:
                            problem = f"backtrace block lacks '(max {depth})'"
                case.checks += 1
                if problem:
                    case.failures.append({"line": step.line, "check": "first_backtrace_block_after: " + problem,
                                          "missing": [problem], "stderr": _first_error(last_run["stderr"]),
                                          "level": variant.level, "run_line": last_run["line"]})
                env.texts[step.name] = block if block is not None else ""
            elif step.kind == "derive_matching":
                # (stdout, stderr, marker, depth, description, patterns): the
                # first backtrace block after the marker that holds the
                # patterns in order
                parts = split_top(step.toks)
                src = [x for x in parts[0] if not x.is_("&")] if parts else []
                text = env.texts.get(src[0].text) if len(src) == 1 else None
                marker = parts[2][0].text if len(parts) > 5 and parts[2][0].kind == "str" else None
                pats = _patterns(parts[5], env) if len(parts) > 5 else None
                if text is None or marker is None or pats is None:
                    continue
                case.checks += 1
                block = next((b for b in _blocks_after(text, marker) if _ordered_missing(b, pats) is None), None)
                if block is None:
                    case.failures.append({"line": step.line, "check": f"a backtrace block with {pats}",
                                          "missing": [f"backtrace block with {pats}"],
                                          "stderr": _first_error(last_run["stderr"]),
                                          "level": variant.level, "run_line": last_run["line"]})
                env.texts[step.name] = block or ""
            elif step.kind == "pid_line":
                pid_line_check(case, step, env, last_run, variant)
            elif step.kind == "ordered":
                parts = split_top(step.toks)
                src = [x for x in parts[0] if not x.is_("&")] if parts else []
                text = env.texts.get(src[0].text) if len(src) == 1 else None
                pats = _literal_list(parts[1]) if len(parts) > 1 else None
                if text is None or pats is None:
                    continue
                case.checks += 1
                missing = _ordered_missing(text, pats)
                if missing is not None:
                    case.failures.append({"line": step.line, "check": f"ordered patterns {pats}",
                                          "missing": [missing], "stderr": _first_error(last_run["stderr"]),
                                          "level": variant.level, "run_line": last_run["line"]})
            elif step.kind == "unknown":
                env.bools[step.name] = UNKNOWN
                env.texts.pop(step.name, None)
            elif step.kind == "bool":
                before = len(env.checked)
                try:
                    env.bools[step.name] = evaluate(step.toks, env)
                    bool_missing[step.name] = [nd for nd, found in env.checked[before:] if not found]
                except (Unsupported, ValueError, IndexError, KeyError):
                    pass
            elif step.kind == "assert":
                if last_run is None:
                    continue
                src = " ".join(x.text if x.kind != "str" else json.dumps(x.text) for x in step.toks)
                ex = exit_expectation(step, env)
                if ex is not None:
                    desc, ok = ex
                    case.checks += 1
                    if not ok:
                        case.failures.append({"line": step.line, "check": desc,
                                              "got": f"exit {env.exit_code}",
                                              "stderr": _first_error(last_run["stderr"]),
                                              "level": variant.level, "run_line": last_run["line"]})
                    continue
                cond = split_top(step.toks)[0] if step.toks else []
                before = len(env.checked)
                try:
                    value = evaluate(cond, env)
                except (Unsupported, ValueError, IndexError, KeyError) as e:
                    case.unchecked.append({"line": step.line, "assert": src[:160], "why": str(e)[:80]})
                    continue
                if value is UNKNOWN:
                    case.unchecked.append({"line": step.line, "assert": src[:160],
                                           "why": "depends on stderr wording"})
                    continue
                case.checks += 1
                if value is False:
                    missing = [needle for needle, found in env.checked[before:] if not found]
                    for x in cond:
                        if x.kind == "ident" and x.text in bool_missing:
                            missing += bool_missing[x.text]
                    case.failures.append({"line": step.line, "check": src[:300],
                                          "missing": missing,
                                          "stderr": _first_error(last_run["stderr"]),
                                          "level": variant.level, "run_line": last_run["line"]})


def pid_line_check(case: Case, step: Step, env: Env, last_run, variant) -> None:
    """A PID_LINE_HELPERS call: some line of the run's stdout carries the
    PID of the target the harness started."""
    parts = split_top(step.toks)
    text = env.texts.get(_single_name(parts[0])) if parts else None
    pid = last_run.get("target_pid") if last_run else None
    if text is None or pid is None:
        case.unchecked.append({"line": step.line, "assert": step.name, "why": "no stdout or target PID"})
        return
    regex, group = PID_LINE_HELPERS[step.name]
    case.checks += 1
    if not any((m := re.search(regex, line)) and m.group(group) == str(pid) for line in text.splitlines()):
        case.failures.append({"line": step.line, "check": f"{step.name}: a line /{regex}/ with group {group} == {pid}",
                              "missing": [f"/{regex}/ with host PID {pid}"],
                              "stderr": _first_error(last_run["stderr"]),
                              "level": variant.level, "run_line": last_run["line"]})


def _ordered_missing(text: str, patterns: list[str]) -> str | None:
    """The first pattern not found after the previous one, else None."""
    cursor = 0
    for pat in patterns:
        k = text.find(pat, cursor)
        if k < 0:
            return pat
        cursor = k + len(pat)
    return None


def _patterns(toks: list[Tok], env: Env) -> list[str] | None:
    lst = _literal_list(toks)
    if lst is not None:
        return lst
    names = [x for x in toks if not x.is_("&")]
    return env.lists.get(names[0].text) if len(names) == 1 else None


def _blocks_after(text: str, marker: str) -> list[str]:
    """The `backtrace:` blocks after each occurrence of the marker (a block
    ends at the next line that is not one of its frames)."""
    blocks = []
    for chunk in text.split(marker)[1:]:
        current = None
        for line in chunk.splitlines():
            if line.lstrip().startswith("backtrace:"):
                if current is not None:
                    blocks.append(current)
                current = line.strip() + "\n"
            elif current is not None and line.startswith(" "):
                current += line + "\n"
            elif current is not None:
                blocks.append(current)
                current = None
        if current is not None:
            blocks.append(current)
    return blocks


def unjudged_refusal(case: Case) -> None:
    """A test none of whose checks could be evaluated cannot pass on a run
    that gs-cgen refused: that refusal is its failure. A test that judges
    stderr's wording is one that expects an error; its refusal is no
    failure (the wording is GhostScope's, not judged)."""
    if case.failures or case.checks:
        return
    if any(u.get("why") == "depends on stderr wording" for u in case.unchecked):
        return
    for run in case.runs:
        if run.get("exit") not in (0, None):
            case.failures.append({"line": run["line"], "check": "gs-cgen ran the script",
                                  "got": f"exit {run['exit']}",
                                  "stderr": _first_error(run.get("stderr") or ""),
                                  "level": run.get("level"), "run_line": run["line"]})
            return


def _first_error(stderr: str) -> str:
    for line in stderr.splitlines():
        s = line.strip()
        if not s or s.startswith("gs-cgen: tracing"):
            continue
        return s[:300]
    return ""

# ------------------------------------------------------------------- main


def reclassify(out: Path) -> int:
    data = json.loads((out / "results.json").read_text())
    cases = []
    for d in data["results"]:
        c = Case(d["file"], d["test"], d["line"], d["verdict"], d["reason"])
        c.failures, c.runs, c.unchecked, c.checks = d["failures"], d["runs"], d["unchecked"], d["checks"]
        na = deliberate.NOT_APPLICABLE.get(f"{c.file}::{c.name}")
        if na:
            c.verdict, c.reason = "NOT_APPLICABLE", na
            d["verdict"], d["reason"] = c.verdict, c.reason
        elif c.verdict in ("FAIL", "DELIBERATE"):
            why = deliberate.classify(c)
            c.verdict, c.reason = ("DELIBERATE", why) if why else ("FAIL", "")
            d["verdict"], d["reason"] = c.verdict, c.reason
        cases.append(c)
    return write_results(out, data["gs_cgen"], data["ghostscope"], cases, data["results"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ghostscope", type=Path, help="GhostScope checkout (with e2e-tests/)")
    ap.add_argument("filters", nargs="*", help="test-name filters: substrings or globs "
                    "(FILE.rs::NAME is matched too)")
    ap.add_argument("--gs-cgen", default=str(TREE / ".venv" / "bin" / "gs-cgen"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/gs-e2e-work"),
                    help="where fixtures are copied and built (default %(default)s)")
    ap.add_argument("--out", type=Path, default=None,
                    help="results directory (default WORK/results)")
    ap.add_argument("--startup", type=float, default=180.0,
                    help="seconds gs-cgen may take to attach (default %(default)s)")
    ap.add_argument("--margin", type=float, default=1.0,
                    help="seconds added to each test's own timeout (default %(default)s)")
    ap.add_argument("--list", action="store_true", help="extract and list, run nothing")
    ap.add_argument("--rebuild", action="store_true", help="copy and build the fixtures again")
    ap.add_argument("--reclassify", action="store_true",
                    help="run nothing: re-judge OUT/results.json against deliberate.py and rewrite "
                         "the summary")
    args = ap.parse_intermixed_args(argv)
    if args.reclassify:
        return reclassify(args.out or (args.work / "results"))

    out = args.out or (args.work / "results")
    out.mkdir(parents=True, exist_ok=True)
    logf = open(out / "log.txt", "w")

    def log(msg: str) -> None:
        print(msg, flush=True)
        logf.write(msg + "\n")
        logf.flush()

    args.work.mkdir(parents=True, exist_ok=True)
    if args.rebuild and (args.work / "fixtures").exists():
        shutil.rmtree(args.work / "fixtures")
    fixtures = build_fixtures(args.ghostscope, args.work, log)

    cases: list[Case] = []
    for path in test_files(args.ghostscope):
        toks = tokenize(path.read_text())
        FILE_CONSTS.clear()
        FILE_CONSTS.update(file_consts(toks))
        fns = functions(toks)
        helpers = helper_table(fns)
        ALL_HELPERS.clear()
        ALL_HELPERS.update(helpers)
        for fn in fns:
            if not fn.is_test:
                continue
            full = f"{path.name}::{fn.name}"
            if args.filters and not any(
                    f in full or fnmatch.fnmatch(fn.name, f) or fnmatch.fnmatch(full, f)
                    for f in args.filters):
                continue
            if path.name in SKIP_FILES:
                c = Case(path.name, fn.name, fn.line, "NOT_APPLICABLE", SKIP_FILES[path.name])
            elif path.name.startswith("manual_"):
                c = Case(path.name, fn.name, fn.line, "NOT_APPLICABLE", "manual test")
            else:
                try:
                    c = plan_case(path.name, fn, helpers, fixtures, {f.name: f for f in fns})
                except (Unsupported, ValueError, IndexError) as e:
                    c = Case(path.name, fn.name, fn.line, "NOT_APPLICABLE", f"harness: cannot read test ({e})")
            override = deliberate.NOT_APPLICABLE.get(f"{path.name}::{fn.name}")
            if override and not c.verdict:
                c.verdict, c.reason = "NOT_APPLICABLE", override
            cases.append(c)

    for c in cases:
        if c.verdict:
            if args.list:
                log(f"{c.file}::{c.name}: {c.verdict}: {c.reason}")
            continue
        if args.list:
            runs = [s.run for s in c.steps if s.kind == "run"]
            log(f"{c.file}::{c.name}: {len(runs)} run(s) on {[v.binary for v in c.variants]} "
                f"mode={'t' if runs[0].info.target_mode else 'p'}")
            continue
        log(f"{c.file}::{c.name}")
        execute(c, args.gs_cgen, args.startup, args.margin, log)
        unjudged_refusal(c)
        if c.failures:
            why = deliberate.classify(c)
            if why:
                c.verdict, c.reason = "DELIBERATE", why
            else:
                c.verdict = "FAIL"
        else:
            c.verdict = "PASS"
        log(f"  -> {c.verdict} ({c.checks} checks, {len(c.unchecked)} unchecked){' ' + c.reason if c.reason else ''}")
        for f in c.failures:
            log(f"     line {f['line']}: {f['check'][:160]} missing={f.get('missing')} stderr={f['stderr'][:160]}")

    if args.list:
        return 0
    results = []
    for c in cases:
        d = {"file": c.file, "test": c.name, "line": c.line, "verdict": c.verdict, "reason": c.reason,
             "checks": c.checks, "unchecked": c.unchecked, "failures": c.failures,
             "variants": [asdict(v) for v in c.variants], "runs": c.runs}
        results.append(d)
    return write_results(out, args.gs_cgen, str(args.ghostscope), cases, results)


def limit_cause(runs) -> str:
    """'verifier E2BIG' / 'BPF stack 512' when a run hit one of those limits."""
    for r in runs:
        err = r.get("stderr") or ""
        if "Argument list too long" in err or "E2BIG" in err:
            return "verifier E2BIG"
        if "stack limit of 512 bytes" in err or "BPF stack limit" in err:
            return "BPF stack 512"
    return ""


def write_results(out: Path, gs: str, ghostscope: str, cases, results) -> int:
    for c, d in zip(cases, results):
        d["limit"] = limit_cause(c.runs) if c.verdict == "FAIL" else ""
    (out / "results.json").write_text(json.dumps({"gs_cgen": gs, "ghostscope": ghostscope,
                                                   "results": results}, indent=1))
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    partial = sum(1 for c in cases if c.verdict == "PASS" and c.unchecked)
    lines = [f"gs-cgen: {gs}", f"GhostScope: {ghostscope}",
             "counts: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in
                                     ("PASS", "FAIL", "DELIBERATE", "NOT_APPLICABLE")),
             f"  (of the PASSes, {partial} had assertions the harness could not evaluate; see results.json)",
             ""]
    for c in cases:
        if c.verdict == "FAIL":
            f = c.failures[0]
            what = f.get("missing") or f["check"]
            tag = limit_cause(c.runs)
            lines.append(f"FAIL {c.file}::{c.name} [{f['level']}]{' {' + tag + '}' if tag else ''} line {f['line']}: "
                         f"{str(what)[:200]} | stderr: {f['stderr'][:200]}")
    for c in cases:
        if c.verdict == "DELIBERATE":
            lines.append(f"DELIBERATE {c.file}::{c.name}: {c.reason}")
    for c in cases:
        if c.verdict == "NOT_APPLICABLE":
            lines.append(f"N/A {c.file}::{c.name}: {c.reason}")
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:4]))
    print(f"results: {out / 'results.json'}, summary: {out / 'summary.txt'}")
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
