"""`bt` on real uprobes: frames named from DWARF, checked against gdb's
view of the fixture (add is called from main's loop)."""
from __future__ import annotations

import re

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, marker_line

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
