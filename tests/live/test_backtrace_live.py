"""`bt` on real uprobes: frames named from DWARF, checked against gdb's
view of the fixture (add is called from main's loop)."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.gdb_backtrace import parse_bt
from tests.live.conftest import compile_fixture, gs_cgen, gs_cgen_popen, marker_line

SOURCE = "live_basic.c"


@pytest.fixture(scope="module")
def basic_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


def call_line_of_add() -> int:
    lines = (compile_fixture.__globals__["FIXTURES"] / SOURCE).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if "add(3, 39);" in text)


def test_backtrace_names_functions_lines_and_modules(basic_bin, start_target):
    target = start_target(basic_bin)
    result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace add { print a; bt; }",
                     "--max-events", "1", "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "a = 3"
    header = re.fullmatch(r"backtrace: (complete), (\d+) frames", lines[1])
    assert header and int(header.group(2)) == len(lines) - 2 >= 2
    entry_line = marker_line(SOURCE, "after_total") - 1        # gdb: Breakpoint at line 27
    assert re.fullmatch(rf"  #0 add at \S+/{SOURCE}:{entry_line} \[live_basic\+0x[0-9a-f]+\]",
                        lines[2])
    assert re.fullmatch(rf"  #1 main at \S+/{SOURCE}:{call_line_of_add()} "
                        r"\[live_basic\+0x[0-9a-f]+\]", lines[3])


def test_backtrace_inside_a_condition_and_json(basic_bin, start_target):
    target = start_target(basic_bin)
    result = gs_cgen("trace", "-p", str(target.pid), "-s",
                     "trace add { if a == 3 { bt; } else { print \"never\"; } }",
                     "--max-events", "1", "--output", "json")
    assert result.returncode == 0, result.stderr
    import json
    event = json.loads(result.stdout.splitlines()[0])
    assert event["lines"][0].startswith("backtrace: ")
    assert event["lines"][1].startswith("  #0 add at ")
    assert event["values"] == []


def test_backtrace_of_a_process_that_has_exited(build_dir):
    """-t PATH and a process that exits within a millisecond of the hit:
    its maps are gone before the event is named, so the probe's own module
    is placed by the probe's address (before: `no unwind info`, `#0 ??`).
    gdb's `bt` at the same function is the oracle."""
    binary = compile_fixture(build_dir, "short_lived.c")
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-ex", "break early", "-ex", "run", "-ex", "bt",
                          "--args", str(binary), "a", "b"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    expected = [(f.function, f.line) for f in parse_bt(gdb)]
    tracer = gs_cgen_popen("trace", "-t", str(binary), "-s", "trace early { bt; }",
                           "--output", "plain", "--max-events", "1", "--duration", "20")
    try:
        while "tracing" not in (said := tracer.stderr.readline()):
            assert said, "the tracer ended before attaching"
        subprocess.run([str(binary), "a", "b"], timeout=10)
        out, err = tracer.communicate(timeout=30)
    finally:
        tracer.kill()
    lines = out.splitlines()
    assert lines[0] == f"backtrace: complete, {len(expected)} frames", (out, err)
    frames = [re.fullmatch(r"  #\d+ (\S+) at \S+:(\d+) \[short_lived\+0x[0-9a-f]+\]", line)
              for line in lines[1:]]
    assert all(frames) and [(m.group(1), int(m.group(2))) for m in frames] == expected, out
