"""Return probes live (issue #12 item 1, CONTRACT.md "Return probes"):
`FUNC:return` blocks on tests/fixtures/retprobe.c at -O0 and -O2, launched
by gs-cgen (`-- COMMAND`) and by gdb. Every `$retval` (and member of it)
and every `$entry(expr)` must equal what gdb's `finish` returns from the
same call and what gdb prints at `break FUNC` when it was entered, in the
order the calls returned (tests/gdb_returns.py); durations must nest as
the calls do; a call in progress when the tracer attaches prints nothing."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, gs_cgen_popen, our_uprobes
from tests.prerequisites import require

SOURCE = "retprobe.c"
GDB_SCRIPT = Path(__file__).resolve().parents[1] / "gdb_returns.py"
FLAGS = {"O0": "-g -O0 -fPIE -pie -pthread", "O2": "-g -O2 -fPIE -pie -pthread"}
# (function, $entry expressions, $retval paths): '' is $retval itself.
CALLS = [
    ("fact", ["n"], [""]),
    ("is_even", ["n"], [""]),
    ("pick", ["n"], [""]),
    ("find_req", ["id"], ["", "id", "name"]),
    ("make_pair", ["a", "b"], ["", "second"]),
    ("make_big", ["seed"], ["", "tag"]),
    ("handle", ["req->id", "req->size", "req->name"], [""]),
    ("inner", ["x"], [""]),
    ("outer", ["x"], [""]),
    ("depth", ["n"], [""]),
]
RETURNS = 22          # the returns from CALLS' functions in main's calls


@pytest.fixture(params=sorted(FLAGS))
def binary(request, build_dir):
    return compile_fixture(build_dir, SOURCE, FLAGS[request.param],
                           output=f"retprobe_{request.param}")


def _script(calls) -> str:
    blocks = []
    for function, entries, paths in calls:
        values = [f"$entry({e})" for e in entries] + \
            ["$retval" + (f".{p}" if p else "") for p in paths] + ["$duration"]
        blocks.append(f'trace {function}:return {{ print "{" ".join("{}" for _ in values)}", '
                      f'{", ".join(values)}; }}')
    return "\n".join(blocks)


def _as_gdb(value: dict) -> str:
    """A gs-cgen JSON value as gdb prints it (pointers: NULL or pointer)."""
    if value["status"] == "null_deref":
        return "<null>"
    assert value["status"] == "ok", value
    return _gdb_text(value["value"], value["type"])


def _gdb_text(value, type_name: str = "") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and set(value) == {"address", "type"}:
        return "NULL" if value["address"] == 0 else "pointer"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_gdb_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "{" + ", ".join(_gdb_text(v) for v in value) + "}"
    if isinstance(value, str) and "::" in value and type_name.startswith("enum"):
        return value.split("::", 1)[1]
    return str(value)


def _traced(binary: Path, calls) -> list[tuple[list, list, int]]:
    result = gs_cgen("trace", "--output", "json", "-s", _script(calls), "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    traced = []
    for line in result.stdout.splitlines():
        event = json.loads(line)
        function = event["trace"].removesuffix(":return")
        entries = next(len(e) for f, e, _ in calls if f == function)
        values = event["values"]
        assert values[-1]["status"] == "ok" and values[-1]["type"] == "unsigned long"
        traced.append((function, [_as_gdb(v) for v in values[:entries]],
                       [_as_gdb(v) for v in values[entries:-1]], values[-1]["value"]))
    return traced


def _gdb_returns(binary: Path, calls, count: int) -> list[tuple[str, list, list]]:
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    env = dict(os.environ, GS_GDB_RETURNS=json.dumps(calls), GS_GDB_COUNT=str(count))
    out = subprocess.run(["gdb", "-nx", "-batch", "-x", str(GDB_SCRIPT), str(binary)],
                         capture_output=True, text=True, timeout=180, env=env, check=True).stdout
    return [tuple(json.loads(line.removeprefix("GS-RETURN ")))
            for line in out.splitlines() if line.startswith("GS-RETURN ")]


def test_return_values_equal_gdb_finish(binary):
    """Integers, bools, enums, pointers (NULL too) with members through
    them, a 16-byte struct in rax:rdx, a 40-byte one through the hidden
    pointer, $entry of parameters and of members through a pointer
    parameter; recursion (fact: each return's $entry(n) is its depth) and
    nested calls (outer calls inner twice); calls a longjmp left, whose
    records the next calls in the same frames replace (depth)."""
    ours = _traced(binary, CALLS)
    expected = _gdb_returns(binary, CALLS, 100)
    assert len(ours) == RETURNS == len(expected)
    assert [(f, e, r) for f, e, r, _ in ours] == [(f, e, r) for f, e, r in expected]
    assert our_uprobes() == []
    durations = {}
    for function, entries, _, duration in ours:
        assert duration > 0
        durations.setdefault(function, []).append((entries, duration))
    # fact(5) encloses fact(4) ... fact(1): returned innermost first, each
    # took longer than the call it encloses; outer took longer than both inners.
    facts = durations["fact"]
    assert [e for e, _ in facts] == [["1"], ["2"], ["3"], ["4"], ["5"]]
    assert all(a[1] < b[1] for a, b in zip(facts, facts[1:]))
    assert durations["outer"][0][1] > max(d for _, d in durations["inner"])
    assert [e for e, _ in durations["depth"]] == [["0"], ["1"], ["2"]]


def test_threads_pair_their_own_calls(binary):
    """Four threads in fact(3..6) at once, 25 times each: every return
    pairs with its own thread's entry (retval = $entry(n)!), and a return
    block's condition reads both."""
    result = gs_cgen("trace", "--output", "json", "-s",
                     'trace fact:return { print "{} {}", $entry(n), $retval; '
                     'if $entry(n) == 6 && $retval == 720 { print "six"; } }',
                     "--", str(binary), "threads")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    factorial = {1: 1}
    for n in range(2, 7):
        factorial[n] = n * factorial[n - 1]
    by_thread: dict[int, list[int]] = {}
    for event in events:
        n, retval = (v["value"] for v in event["values"][:2])
        assert retval == factorial[n]
        by_thread.setdefault(event["tid"], []).append(n)
        assert ("six" in event["lines"]) == (n == 6)
    # Each thread's fact(k) returns k calls, 1 first, 25 times over.
    assert sorted(len(calls) for calls in by_thread.values()) == [75, 100, 125, 150]
    for calls in by_thread.values():
        top = max(calls)
        assert calls == list(range(1, top + 1)) * 25


def test_a_call_in_progress_at_attach_prints_nothing(build_dir, tmp_path, start_target):
    """slow_call(3) is entered before the probes exist: its return has no
    entry record and must send nothing (the uretprobe was never armed for
    it); fact(3) and slow_call(4), entered later, pair with their entries."""
    binary = compile_fixture(build_dir, SOURCE, FLAGS["O2"], output="retprobe_O2")
    flag = tmp_path / "go"
    target = start_target(binary, "wait", str(flag))
    time.sleep(0.2)                     # inside slow_call(3)'s polling loop
    tracer = gs_cgen_popen("trace", "-p", str(target.pid), "-s",
                           'trace slow_call:return { print "slow({}) = {}", $entry(n), $retval; }'
                           ' trace fact:return { print "fact({}) = {}", $entry(n), $retval; }')
    try:
        deadline = time.monotonic() + 60
        while "tracing" not in tracer.stderr.readline():
            assert time.monotonic() < deadline and tracer.poll() is None
        flag.touch()
        out, err = tracer.communicate(timeout=60)
    finally:
        if tracer.poll() is None:
            tracer.kill()
    assert tracer.returncode == 0, err
    assert out.splitlines() == ["fact(1) = 1", "fact(2) = 2", "fact(3) = 6", "slow(4) = 400"]


@pytest.mark.parametrize("script, message", [
    ("trace average:return { print $retval; }",
     "error: 'average' returns 'double', which the x86-64 ABI returns in xmm0/xmm1; a uprobe "
     "sees only the general-purpose registers (struct pt_regs), so $retval cannot be read"),
    ("trace make_mixed:return { print $retval; }",
     "error: 'make_mixed' returns 'struct mixed', which the x86-64 ABI returns in xmm0/xmm1"),
    ("trace touch:return { print $retval; }", "error: 'touch' returns void: there is no $retval"),
    ("trace fact:return { print n; }",
     "error: 'n' is a parameter or local of 'fact', which is not readable when it returns\n"
     "  trace fact:return { print n; }\n"
     "                            ^\n"
     "hint: write $entry(n) for its value when the call was entered"),
    ("trace fact { print $duration; }",
     "error: $duration is only available in a return block (trace FUNC:return { ... })"),
    ("trace only_inlined:return { print $duration; }",
     "error: 'only_inlined' exists only inlined into its callers: it has no return "
     "instruction of its own to probe"),
])
def test_return_block_errors(binary, script, message):
    result = gs_cgen("trace", "--emit-c", "-t", str(binary), "-s", script)
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_dry_run_shows_the_uretprobe_and_its_entry_probe(binary):
    result = gs_cgen("trace", "--dry-run", "-t", str(binary), "-s",
                     "trace fact:return { print $entry(n); print $retval; }")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    nm = subprocess.run(["nm", str(binary)], capture_output=True, text=True).stdout
    fact = next(int(l.split()[0], 16) for l in nm.splitlines() if l.endswith(" fact"))
    assert lines[0].startswith("probe 0: fact:return -> fact at ")
    assert f" 0x{fact:x}, file offset 0x{fact:x}" in lines[0]
    assert lines[1].startswith("  at return (uretprobe); entry probe at ")
    assert f" 0x{fact:x}," in lines[1] and "(1 $entry value(s)" in lines[1]
    # At -O0 `n` is readable after the prologue: gdb's `break fact` address.
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-ex", "break fact", str(binary)],
                         capture_output=True, text=True).stdout
    if "O0" in binary.name:
        assert len(lines) == 3 and lines[2].startswith("  $entry values read at ")
        address = int(gdb.split("Breakpoint 1 at ")[1].split(":")[0], 16)
        assert f" 0x{address:x}," in lines[2]
    else:
        assert len(lines) == 2


def test_return_values_and_durations_aggregate(binary):
    """Aggregations in a return block (kept in the kernel, printed at
    exit): keys and sums from $retval and $entry, a histogram of
    $duration. The values are those gdb returns in
    test_return_values_equal_gdb_finish: pick(4), pick(5) = GREEN, BLUE;
    fact(5) enters with n = 5..1; handle's three requests."""
    result = gs_cgen("trace", "-s",
                     "trace pick:return { count colors by $retval; } "
                     "trace fact:return { sum entered = $entry(n); hist took = $duration; "
                     "count calls by $entry(n), $retval; } "
                     "trace handle:return { count by_name by $entry(req->name), $retval; "
                     'if $entry(req->name) == "beta" { print "{} {}", $entry(req->name), '
                     "$retval; } }", "--", str(binary))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "@colors[color::BLUE]: 1\n@colors[color::GREEN]: 1\n" in out
    assert "@entered: 15\n" in out
    for n, value in ((1, 1), (2, 2), (3, 6), (4, 24), (5, 120)):
        assert f"@calls[{n}, {value}]: 1\n" in out
    # A string $entry: its characters in a print, its pointer in a key or
    # a comparison (the characters read at the return).
    assert out.startswith('"beta" 20\n')
    assert '@by_name["alpha", 10]: 1\n@by_name["beta", 20]: 1\n@by_name["gamma", 30]: 1\n' in out
    took = out.split("@took:")[1].split("\n\n")[0]
    assert sum(int(row.split(")")[1].split()[0]) for row in took.splitlines() if ")" in row) == 5


def test_narrow_return_values_in_expressions_and_aggregations(build_dir):
    """$retval of a type narrower than rax is its C value wherever it is
    used, not only where printed: a cast, a condition and a sum of a short
    -3 are -3, not rax's 4294967293 (gdb's `finish` is the oracle)."""
    binary = compile_fixture(build_dir, "retval_widths.c", "-g -O2 -fPIE -pie")
    functions = {"ri": "int", "rs": "short", "rus": "unsigned short", "rsc": None, "rb": None}
    expected = _gdb_returns(binary, [(f, ["x"], [""]) for f in functions], 100)
    assert len(expected) == 35
    blocks = []
    for f, same_type in functions.items():
        same = f'if $retval == cast($entry(x), "{same_type}") {{ print "{f} same"; }}' \
            if same_type else ""
        blocks.append(f'trace {f}:return {{ print "{f} {{}} {{}}", $entry(x), '
                      f'cast($retval, "long"); sum s_{f} = $retval; {same} }}')
    result = gs_cgen("trace", "--output", "plain", "-s", "\n".join(blocks), "--", str(binary))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # gdb prints a signed char as `106 'j'`, a bool as true/false
    numbers = {"true": "1", "false": "0"}
    calls = [(f, x, numbers.get(r, r.split()[0])) for f, (x,), (r,) in expected]
    assert [line for line in lines if line.count(" ") == 2] == [f"{f} {x} {r}" for f, x, r in calls]
    for f in functions:
        assert f"@s_{f}: {sum(int(r) for g, _, r in calls if g == f)}" in lines, (f, lines)
    for f in ("ri", "rs", "rus"):
        assert lines.count(f"{f} same") == 7, (f, lines)


@pytest.mark.parametrize("sleepable", ["on", "off"])
def test_a_return_block_with_several_ifs(binary, sleepable):
    """Several conditions decide in the decision map (emit/probe.py), per
    thread in the sleepable build, per CPU in the other; fact(5)'s calls
    return 1, 2, 6, 24, 120 (gdb's `finish` in test_return_values_equal_gdb_finish)."""
    result = gs_cgen("trace", "-s",
                     'trace fact:return { if $retval == 6 { print "six {}", $entry(n); } '
                     'if $retval > 24 { print "big {}", $retval; } '
                     'if $entry(n) == 1 { print "one"; } }', "--", str(binary),
                     env={**os.environ, "GS_CGEN_SLEEPABLE": sleepable})
    assert result.returncode == 0, result.stderr
    assert ("sleepable uprobes unavailable" in result.stderr) == (sleepable == "off")
    assert result.stdout.splitlines() == ["one", "six 3", "big 120"]
