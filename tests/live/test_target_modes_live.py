"""Live, real-world targets: `-t PATH` (every process running it, also ones
started after gs-cgen attached; with -p only that PID), launch mode
(`-- COMMAND ARGS`) on a program that lives about a millisecond, and address
probes (`0xADDR`, `module_suffix:0xADDR`) with their errors.

Expected values are gdb's: live_basic.c (see test_trace_basic.py) at
`break add` a=3 b=39, at the after_total line total=42, g_int=-42;
short_lived.c (run with two arguments) at `break before_main` code=5, at
`break main` argc=3, at `break early` a=7 b=-13,
g_early=77, s_ctor_arg=5, exit status 3; libgsdemo.c at its lib_product line
x=6 y=7 product=126 lib_data=1234. Addresses come from
`gdb -batch -ex 'info line FILE:N' BINARY` and `gs-cgen info ... function F`.
"""
from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, gs_cgen_popen, marker_line, our_uprobes
from tests.live.test_shared_libs_live import LIB_SOURCE, build_shlib

SOURCE = "live_basic.c"
OFFSETS_UNAVAILABLE = "<error: offsets unavailable>"


@pytest.fixture(scope="module")
def basic_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture(scope="module")
def short_lived_bin(build_dir):
    return compile_fixture(build_dir, "short_lived.c")


@pytest.fixture(scope="module")
def shlib(build_dir):
    return build_shlib(build_dir)


def gdb_line_address(binary: Path, location: str) -> int:
    """Module virtual address where gdb says `location` (FILE:LINE) starts."""
    out = subprocess.run(["gdb", "-batch", "-ex", f"info line {location}", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    match = re.search(r"starts at address 0x([0-9a-f]+)", out)
    assert match, out
    return int(match.group(1), 16)


def info_probe_address(binary: Path, function: str) -> int:
    info = gs_cgen("info", "-t", str(binary), "function", function)
    assert info.returncode == 0, info.stderr
    return int(re.search(r"probe address 0x([0-9a-f]+)", info.stdout).group(1), 16)


def instruction_starts(binary: Path, start: int, length: int = 32) -> set[int]:
    out = subprocess.run(["objdump", "-d", f"--start-address={start:#x}",
                          f"--stop-address={start + length:#x}", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    return {int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\t", out, re.M)}


def nm_address(binary: Path, symbol: str) -> int:
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) for line in out.splitlines()
                if line.split()[-1] == symbol)


def run_lines(*args: str, events: int = 2) -> list[str]:
    result = gs_cgen("trace", *args, "--max-events", str(events), "--output", "plain")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def user_error(*args: str) -> str:
    result = gs_cgen("trace", *args)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def mentions_address(text: str, address: int) -> bool:
    return re.search(rf"0x0*{address:x}\b", text, re.I) is not None


# -t PATH ------------------------------------------------------------------


def test_target_path_traces_processes_started_later(basic_bin, start_target):
    first = start_target(basic_bin)
    tracer = gs_cgen_popen("trace", "-t", str(basic_bin), "-s",
                           'trace add { print "{} {} {}", $pid, a, g_int; }',
                           "--output", "plain")
    try:
        assert tracer.stdout.readline().strip() == f"{first.pid} 3 -42"   # attached
        late = start_target(basic_bin)
        seen: dict[int, list[str]] = {first.pid: [], late.pid: []}
        deadline = time.monotonic() + 20
        while len([v for v in seen[late.pid] if v == "-42"]) < 5:
            assert time.monotonic() < deadline, seen[late.pid]
            text = tracer.stdout.readline()
            assert text, tracer.stderr.read()
            pid, a, value = text.rstrip("\n").split(" ", 2)
            assert a == "3", text
            seen[int(pid)].append(value)
    finally:
        tracer.send_signal(signal.SIGINT)
        status = tracer.wait(timeout=20)
    assert status == 0
    assert set(seen[first.pid]) <= {"-42"}
    # a process whose offsets are not known yet never shows a wrong number,
    # and once they are known they stay known
    late_values = seen[late.pid]
    assert set(late_values) <= {"-42", OFFSETS_UNAVAILABLE}, late_values
    known = late_values.index("-42")
    assert OFFSETS_UNAVAILABLE not in late_values[known:], late_values


def test_target_path_with_pid_shows_only_that_pid(basic_bin, start_target):
    chosen, other = start_target(basic_bin), start_target(basic_bin)
    script = 'trace add { print "{} {} {}", $pid, b, g_int; }'
    lines = run_lines("-t", str(basic_bin), "-p", str(chosen.pid), "-s", script, events=6)
    assert lines == [f"{chosen.pid} 39 -42"] * 6
    assert other.proc.poll() is None


# launch mode ----------------------------------------------------------------


def test_launch_mode_catches_the_first_millisecond(short_lived_bin):
    script = ('trace before_main { print "ctor {}", code; }\n'
              'trace main { print "main {}", argc; }\n'
              'trace early { print "early {} {}", a, b; print g_early; print s_ctor_arg; }')
    result = gs_cgen("trace", "-s", script, "--output", "plain", "--", str(short_lived_bin),
                     "one", "two")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert re.search(r"exited with status 3\b", result.stderr), result.stderr
    lines = result.stdout.splitlines()
    # held before its first instruction: even the constructor's call is caught
    assert lines[:3] == ["ctor 5", "main 3", "early 7 -13"], lines
    assert lines[3:] == ["g_early = 77", "s_ctor_arg = 5"]
    assert our_uprobes() == []


def test_launched_command_ends_with_the_trace(basic_bin):
    """--max-events ends the trace before the (endless) command: the command
    is stopped too, not left running as an orphan."""
    result = gs_cgen("trace", "-s", "trace add { print a; }", "--max-events", "2",
                     "--output", "plain", "--", str(basic_bin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["a = 3", "a = 3"]
    assert "trace ended; command killed by SIGTERM" in result.stderr
    running = subprocess.run(["pgrep", "-f", f"^{basic_bin}$"], capture_output=True, text=True)
    assert running.stdout == ""


def test_launch_mode_missing_command_is_a_user_error():
    missing = "/nonexistent/gs-cgen-no-such-program"
    err = user_error("-s", "trace add { print a; }", "--", missing)
    assert missing in err


# address probes ---------------------------------------------------------------


def test_address_of_a_line_with_pid(basic_bin, start_target):
    target = start_target(basic_bin)
    line = marker_line(SOURCE, "after_total")
    address = gdb_line_address(basic_bin, f"{SOURCE}:{line}")
    script = f"trace {address:#x} {{ print total; print a; print b; print g_int; }}"
    assert run_lines("-p", str(target.pid), "-s", script) == [
        "total = 42", "a = 3", "b = 39", "g_int = -42"] * 2


def test_probe_address_of_a_function_with_target(basic_bin, start_target):
    start_target(basic_bin)
    address = info_probe_address(basic_bin, "add")
    script = f'trace {address:#x} {{ print "{{}} {{}} {{}}", a, b, g_int; }}'
    assert run_lines("-t", str(basic_bin), "-s", script) == ["3 39 -42"] * 2


@pytest.mark.parametrize("mode", ["module_suffix_with_pid", "default_module_of_target"])
def test_library_address(shlib, start_target, mode):
    lib, app = shlib
    target = start_target(app)
    line = marker_line(LIB_SOURCE, "lib_product")
    address = gdb_line_address(lib, f"libgsdemo.c:{line}")
    body = '{ print "{} {} {} {} {}", x, y, product, lib_data, app_data; }'
    if mode == "module_suffix_with_pid":
        args = ["-p", str(target.pid), "-s", f"trace libgsdemo.so:{address:#x} {body}"]
    else:
        args = ["-t", str(lib), "-p", str(target.pid), "-s", f"trace {address:#x} {body}"]
    assert run_lines(*args) == ["6 7 126 1234 2024"] * 2


def test_address_inside_an_instruction_is_rejected(basic_bin):
    probe = info_probe_address(basic_bin, "add")
    starts = instruction_starts(basic_bin, probe)
    assert probe in starts and probe + 1 not in starts     # objdump: a multi-byte instruction
    err = user_error("-t", str(basic_bin), "-s", f"trace {probe + 1:#x} {{ print a; }}")
    assert "instruction" in err.lower(), err
    assert mentions_address(err, probe + 1), err


def test_data_address_is_rejected(basic_bin):
    address = nm_address(basic_bin, "g_int")                # in .data
    err = user_error("-t", str(basic_bin), "-s", f"trace {address:#x} {{ print a; }}")
    assert "code" in err.lower(), err
    assert mentions_address(err, address), err


@pytest.mark.parametrize("transport", ["ringbuf", "perf"])
def test_a_command_that_exits_at_once_loses_no_event(build_dir, transport):
    """The event buffers are open before the probes are attached: with perf
    buffers opened after, a command's first events found no buffer (they
    were counted lost, 0 of 10 printed)."""
    binary = compile_fixture(build_dir, "ten_calls.c")
    result = gs_cgen("trace", "--event-map", transport, "--output", "plain",
                     "-s", "trace f { print a; }", "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"a = {i}" for i in range(10)]
    assert "lost" not in result.stderr


def test_blocks_on_one_function_run_in_script_order(build_dir):
    """The kernel runs the uprobes of one address newest first; blocks on
    the same function still run in the order the script gives them, entry
    and return alike (bpftrace's uprobe_order / uretprobe_order tests)."""
    binary = compile_fixture(build_dir, "ten_calls.c")
    script = ('trace f { print "first {}", a; } trace f { print "second {}", a; } '
              'trace f:return { print "rfirst {}", $retval; } '
              'trace f:return { print "rsecond {}", $retval; }')
    result = gs_cgen("trace", "--output", "plain", "-s", script, "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        line for i in range(10)
        for line in (f"first {i}", f"second {i}", f"rfirst {2 * i}", f"rsecond {2 * i}")]
