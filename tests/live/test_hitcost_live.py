"""Per-hit cost (issue #10), live: which instructions the running kernel
emulates, probes that decide before they build, and function probes at
the entry instruction. Every value is checked against gdb at the same
breakpoints (tests/fixtures/hitcost.c)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gs_cgen.elf.uprobe_insn import UprobeHandling, uprobe_handling
from tests.live.conftest import REPO, compile_fixture, gs_cgen

KINDS = ("nop", "nop5", "nop6", "endbr", "push", "push_r12", "jmp", "mov")


@pytest.fixture(scope="module")
def optimized(build_dir) -> Path:
    return compile_fixture(build_dir, "hitcost.c", "-g -O2 -fPIE -pie", "hitcost_O2")


@pytest.fixture(scope="module")
def unoptimized(build_dir) -> Path:
    return compile_fixture(build_dir, "hitcost.c", "-g -O0 -fPIE -pie", "hitcost_O0")


def symbol(binary: Path, name: str) -> int:
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    return int(next(line.split()[0] for line in out.splitlines() if line.endswith(" " + name)), 16)


def gdb_values(binary: Path, spec: str, fmt: str, exprs: str, args: str) -> list[str]:
    """What gdb prints with `printf fmt, exprs` at every stop of `break spec`."""
    commands = (f"set pagination off\nbreak {spec}\ncommands\nsilent\n"
                f'printf "GS {fmt}\\n", {exprs}\ncontinue\nend\nrun {args}\n')
    script = binary.parent / f"{binary.name}.gdb"
    script.write_text(commands)
    out = subprocess.run(["gdb", "-nx", "-batch", "-x", str(script), str(binary)],
                         capture_output=True, text=True, timeout=120).stdout
    return [line[3:] for line in out.splitlines() if line.startswith("GS ")]


def gdb_break_address(binary: Path, spec: str) -> int:
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"break {spec}", str(binary)],
                         capture_output=True, text=True, timeout=60).stdout
    return int(re.search(r"Breakpoint 1 at 0x([0-9a-f]+)", out).group(1), 16)


def trace_lines(binary: Path, script: str, args: str) -> list[str]:
    result = gs_cgen("trace", "-s", script, "--output", "plain", "--", str(binary), *args.split())
    assert result.returncode == 0, result.stderr
    own = ("ready ", "ns ")            # the target's own output, on the same stdout
    return [line for line in result.stdout.splitlines() if line and not line.startswith(own)]


def dry_run(binary: Path, script: str) -> str:
    result = gs_cgen("trace", "-t", str(binary), "-s", script, "--dry-run")
    assert result.returncode == 0, result.stderr
    return result.stdout


# ----------------------------------------------- the kernel's emulation table

def trace_running(binary: Path, script: str, kind: str, calls: int, *options: str,
                  env=None, inspect=None) -> list[str]:
    """Trace `hitcost KIND CALLS` by -p once gs-cgen says it is tracing;
    the trace lines, and `inspect(pid)` called before the target exits."""
    target = subprocess.Popen([str(binary), kind, str(calls)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    tracer = None
    try:
        assert target.stdout.readline().startswith("ready ")
        tracer = subprocess.Popen([sys.executable, "-m", "gs_cgen.cli", "trace", "-p",
                                   str(target.pid), "-s", script, "--output", "plain", *options],
                                  cwd=REPO, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # Its "tracing" line, not the int3 alone: libbcc may fall back to a
        # tracefs event after a first attempt armed the int3 for a moment.
        for line in tracer.stderr:
            if line.startswith("gs-cgen: tracing"):
                break
        else:
            raise AssertionError(f"gs-cgen never attached (rc {tracer.wait()})")
        # The "tracing" line comes before the reader opens its perf
        # buffers: an event sent in between is lost (on main too).
        time.sleep(1)
        target.stdin.write("go\n")
        target.stdin.flush()
        assert target.stdout.readline().startswith(f"ns {calls} ")
        if inspect is not None:
            inspect(target.pid)
    finally:
        target.stdin.close()
        target.wait(30)
    out, err = tracer.communicate(timeout=30)     # it ends when the target does
    assert tracer.returncode == 0, err
    return [line for line in out.splitlines() if line]


def _xol_area_after_hits(binary: Path, kind: str) -> bool:
    """Hit on_KIND 20 times under a gs-cgen probe; True when the kernel
    made the XOL area ("[uprobes]"), which only single-stepping needs."""
    seen = []
    trace_running(binary, f"trace on_{kind} {{ if x == 999999 {{ print x; }} }}", kind, 20,
                  inspect=lambda pid: seen.append(
                      "[uprobes]" in Path(f"/proc/{pid}/maps").read_text()))
    return seen[0]


def test_emulation_table_matches_the_running_kernel(optimized):
    """elf/uprobe_insn.py says which instructions are emulated; the
    kernel agrees when a probe's hits on them create no XOL area."""
    image = optimized.read_bytes()
    seen = {}
    for kind in KINDS:
        entry = symbol(optimized, f"on_{kind}")
        predicted = uprobe_handling(image[entry:entry + 15])
        seen[kind] = (predicted, _xol_area_after_hits(optimized, kind))
    assert {k: p for k, (p, _) in seen.items()} == {
        "nop": UprobeHandling.EMULATED, "nop5": UprobeHandling.EMULATED,
        "nop6": UprobeHandling.EMULATED, "endbr": UprobeHandling.SINGLE_STEPPED,
        "push": UprobeHandling.EMULATED, "push_r12": UprobeHandling.EMULATED,
        "jmp": UprobeHandling.EMULATED, "mov": UprobeHandling.SINGLE_STEPPED}
    for kind, (predicted, xol) in seen.items():
        assert xol == (predicted is UprobeHandling.SINGLE_STEPPED), kind


# ------------------------------------------------- decide before building

BUILDS = {   # the three event builders: ring reservation, per-CPU scratch, perf array
    "sleepable ring": ((), {}),
    "ring, not sleepable": ((), {"GS_CGEN_SLEEPABLE": "off"}),
    "perf": (("--event-map", "perf"), {}),
}
CONDITIONS = {
    "registers only": "x == 5",
    "a global": "x == g_limit - 2",
    # compares target bytes: the work area after the event is taken first
    "target bytes": 'x == 5 && memcmp(&g_limit, hex("07 00 00 00 00 00 00 00"), 8)',
}


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("condition", CONDITIONS)
def test_condition_sends_only_the_true_hit(optimized, build, condition):
    """Ten hits, one true: one event, with gdb's values at that hit."""
    options, env = BUILDS[build]
    lines = trace_running(optimized, f'trace on_nop {{ if {CONDITIONS[condition]} {{ '
                          'print "x={} y={} calls={}", x, y, g_calls; } }', "nop", 10,
                          *options, env={**os.environ, **env})
    expected = gdb_values(optimized, "on_nop if x == 5", "x=%d y=%ld calls=%ld",
                          "x, y, g_calls", "nop 10 nowait")
    assert expected == ["x=5 y=15 calls=6"]
    assert lines == expected


def test_failed_condition_still_reports_its_expr_error(optimized):
    """A condition whose read fails is an event of its own (soft abort),
    built after the decision: the address is gdb's unreadable one."""
    lines = trace_lines(optimized, 'trace on_nop { if *cast(y, "int *") == 1 { print "one"; } '
                        'else { print "x={}", x; } }', "nop 3 nowait")
    assert lines == ["ExprError: *cast(y, \"int *\") == 1 (null pointer dereference at 0x0)",
                     "ExprError: *cast(y, \"int *\") == 1 (read error at 0x3)",
                     "ExprError: *cast(y, \"int *\") == 1 (read error at 0x6)"]
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", "break on_nop if x == 1",
                          "-ex", "run nop 3 nowait", "-ex", "print y",
                          "-ex", "print *(int *)y", str(optimized)],
                         capture_output=True, text=True, timeout=60)
    assert "$1 = 3" in out.stdout and "Cannot access memory at address 0x3" in out.stderr


# ---------------------------------------------------------------- placement

def test_O2_function_probe_is_gdbs_entry_and_reads_gdbs_values(optimized):
    """-O2: gdb's `break on_push` is the entry (`push %rbx`, emulated);
    the probe goes there and prints what gdb prints at `break *on_push`
    and at `break on_push`."""
    entry = symbol(optimized, "on_push")
    assert gdb_break_address(optimized, "on_push") == entry
    listing = dry_run(optimized, "trace on_push { print x; }")
    assert f"0x{entry:x}, file offset 0x{entry:x}, emulated]" in listing
    lines = trace_lines(optimized, 'trace on_push { print "x={} y={}", x, y; }', "push 3 nowait")
    at_entry = gdb_values(optimized, "*on_push", "x=%d y=%ld", "x, y", "push 3 nowait")
    at_break = gdb_values(optimized, "on_push", "x=%d y=%ld", "x, y", "push 3 nowait")
    assert at_entry == at_break == ["x=0 y=0", "x=1 y=3", "x=2 y=6"]
    assert lines == at_entry


def test_O0_block_of_globals_moves_to_the_emulated_entry(unoptimized):
    """-O0: gdb stops after the prologue's spills (a `mov`, single-
    stepped); a block reading only globals is probed at `push %rbp`
    (emulated) and prints gdb's values at both places."""
    entry = symbol(unoptimized, "on_nop")
    after_prologue = gdb_break_address(unoptimized, "on_nop")
    assert after_prologue > entry
    listing = dry_run(unoptimized, 'trace on_nop { print "{} {}", g_calls, g_limit; }')
    assert f"[{unoptimized} 0x{entry:x}, file offset 0x{entry:x}, emulated]" in listing
    assert f"placed at the function's entry, not after its prologue (0x{after_prologue:x}" in listing
    lines = trace_lines(unoptimized, 'trace on_nop { print "calls={} limit={}", g_calls, g_limit; }',
                        "nop 4 nowait")
    at_entry = gdb_values(unoptimized, "*on_nop", "calls=%ld limit=%ld", "g_calls, g_limit",
                          "nop 4 nowait")
    at_break = gdb_values(unoptimized, "on_nop", "calls=%ld limit=%ld", "g_calls, g_limit",
                          "nop 4 nowait")
    assert at_entry == at_break == [f"calls={i} limit=7" for i in range(1, 5)]
    assert lines == at_break


def test_O0_block_of_parameters_stays_where_gdb_stops(unoptimized):
    """Parameters at -O0 live in the frame, valid only after the
    prologue: the probe stays at gdb's address and prints gdb's values."""
    after_prologue = gdb_break_address(unoptimized, "on_nop")
    listing = dry_run(unoptimized, "trace on_nop { print x; }")
    assert f"0x{after_prologue:x}, file offset 0x{after_prologue:x}, single-stepped]" in listing
    assert "placed" not in listing
    lines = trace_lines(unoptimized, 'trace on_nop { print "x={} y={}", x, y; }', "nop 3 nowait")
    assert lines == gdb_values(unoptimized, "on_nop", "x=%d y=%ld", "x, y", "nop 3 nowait")
