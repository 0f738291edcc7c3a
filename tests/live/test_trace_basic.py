"""Issue 2, live: functions, lines, integer params/locals/globals, special
variables, output modes and stop conditions on real uprobes."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, marker_line

SOURCE = "live_basic.c"


@pytest.fixture(scope="module")
def basic_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


def trace_lines(pid: int, script: str, events: int = 2, *extra: str) -> list[str]:
    result = gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", str(events),
                     "--output", "plain", *extra)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_function_parameters(basic_bin, start_target):
    target = start_target(basic_bin)
    lines = trace_lines(target.pid, 'trace add { print "a={} b={}", a, b; }', 3)
    assert lines == ["a=3 b=39"] * 3


def test_line_probe_prints_local(basic_bin, start_target):
    target = start_target(basic_bin)
    line = marker_line(SOURCE, "after_total")
    lines = trace_lines(target.pid, f"trace {SOURCE}:{line} {{ print total; }}")
    assert lines == ["total = 42"] * 2


def test_integer_widths_and_signs(basic_bin, start_target):
    target = start_target(basic_bin)
    line = marker_line(SOURCE, "widths_return")
    script = (f"trace {SOURCE}:{line} {{ print sc; print uc; print s; print us; print i; "
              "print u; print l; print ul; print flag; print typed; print sum; }")
    assert trace_lines(target.pid, script, 1) == [
        "sc = -100", "uc = 200", "s = -30000", "us = 60000", "i = -2000000000",
        "u = 4000000000", "l = -9000000000000", "ul = 18000000000000000000",
        "flag = true", "typed = 4242", f"sum = {_widths_sum()}"]


def _widths_sum() -> int:
    # the C expression wraps in 64-bit signed arithmetic
    total = -100 + 200 - 30000 + 60000 - 2000000000 + 4000000000 - 9000000000000
    total += 18000000000000000000 - 2**64 + 1 + 4242
    return total


def test_globals_of_every_width(basic_bin, start_target):
    target = start_target(basic_bin)
    names = ["g_int", "g_long", "g_uint", "g_short", "g_uchar", "g_char", "g_bool",
             "g_llong", "g_ulong", "g_const", "g_color", "g_bss", "s_file"]
    script = "trace add { " + " ".join(f"print {n};" for n in names) + " }"
    assert trace_lines(target.pid, script, 1) == [
        "g_int = -42", "g_long = 9000000000", "g_uint = 4000000000", "g_short = -7",
        "g_uchar = 250", "g_char = 122", "g_bool = true", "g_llong = -1234567890123",
        "g_ulong = 18000000000000000000", "g_const = 123", "g_color = color::GREEN",
        "g_bss = 77", "s_file = 11"]


def test_static_local_and_relations(basic_bin, start_target):
    target = start_target(basic_bin)
    line = marker_line(SOURCE, "counter_return")
    script = f'trace {SOURCE}:{line} {{ print "{{}} {{}} {{}}", iteration, doubled, calls; }}'
    for text in trace_lines(target.pid, script, 3):
        iteration, doubled, calls = map(int, text.split())
        assert doubled == 2 * iteration and calls == iteration + 1


def test_special_variables(basic_bin, start_target):
    target = start_target(basic_bin)
    script = 'trace add { print "{} {} {} {} {}", $pid, $tid, $host_pid, $input_pid, $timestamp; }'
    stamps = []
    for text in trace_lines(target.pid, script, 3):
        pid, tid, host_pid, input_pid, stamp = map(int, text.split())
        assert pid == tid == host_pid == input_pid == target.pid
        stamps.append(stamp)
    assert stamps == sorted(stamps) and stamps[0] > 0


def test_pc_and_sp_are_what_gdb_shows_at_the_probe(basic_bin, start_target):
    """$pc / $sp: the probed thread's instruction and stack pointer. main
    calls add() from the same frame every time, so gdb's `break add` stops
    with the same values."""
    target = start_target(basic_bin)
    (line,) = trace_lines(target.pid, 'trace add { print "{:x} {:x}", $pc, $sp; }', events=1)
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-p", str(target.pid), "-ex", "break add",
                          "-ex", "continue", "-ex", "p/x $pc", "-ex", "p/x $sp"],
                         capture_output=True, text=True, timeout=60).stdout
    pc, sp = re.findall(r"^\$\d+ = 0x([0-9a-f]+)$", gdb, re.M)
    assert line == f"{pc} {sp}", gdb


def test_several_trace_blocks(basic_bin, start_target):
    target = start_target(basic_bin)
    script = ('trace add { print "add {}", a; }\n'
              'trace widths { print "widths {}", typed; }')
    lines = trace_lines(target.pid, script, 8)
    assert set(lines) == {"add 3", "widths 4242"}
    # Probes attach one after the other; once both are in, calls alternate.
    both = lines[lines.index("widths 4242") - 1:] if lines[0] == "add 3" else lines
    assert all(a != b for a, b in zip(both, both[1:])), lines


def test_hex_format(basic_bin, start_target):
    target = start_target(basic_bin)
    lines = trace_lines(target.pid, 'trace add { print "{:x} {:X} {:x}", b, b, g_int; }', 1)
    assert lines == ["27 27 ffffffd6"]


def test_json_output(basic_bin, start_target):
    target = start_target(basic_bin)
    lines = trace_lines(target.pid, 'trace add { print "a={}", a; print g_int; }', 1,
                        "--output", "json")
    lines = [line for line in lines if line.strip()]
    event = json.loads(lines[0])
    assert event["trace"] == "add" and event["pid"] == target.pid and event["tid"] == target.pid
    assert event["timestamp_ns"] > 0
    assert event["lines"] == ["a=3", "g_int = -42"]
    assert event["values"] == [
        {"expr": "a", "type": "int", "value": 3, "status": "ok"},
        {"expr": "g_int", "type": "int", "value": -42, "status": "ok"}]


def test_perf_event_map(basic_bin, start_target):
    target = start_target(basic_bin)
    lines = trace_lines(target.pid, 'trace add { print a; }', 2, "--event-map", "perf")
    assert lines == ["a = 3"] * 2


def test_duration_ends_with_zero(basic_bin, start_target):
    target = start_target(basic_bin)
    result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace add { print a; }",
                     "--duration", "1", "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) >= 5 and set(lines) == {"a = 3"}


def test_dry_run_attaches_nothing(basic_bin, start_target):
    target = start_target(basic_bin)
    result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace add { print a; }", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"probe 0: add -> add at \S*live_basic\.c:\d+ \[\S+ 0x[0-9a-f]+, "
                        r"file offset 0x[0-9a-f]+, (?:emulated|single-stepped)\] "
                        r"\(1 value\(s\), \d+-byte event\) verified\n",
                        result.stdout)


def test_target_path_mode(basic_bin, start_target):
    target = start_target(basic_bin)
    result = gs_cgen("trace", "-t", str(basic_bin), "-s", 'trace add { print "{} {}", a, g_int; }',
                     "--max-events", "2", "--output", "plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["3 -42"] * 2
    assert target.proc.poll() is None
