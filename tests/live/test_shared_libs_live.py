"""Live, real-world targets: a shared library the target has loaded
(tests/fixtures/shlib). Functions, lines and globals of the library in -p
mode, the probe on the library file, globals through the library's load
offsets, `compute` defined in both the executable and the library (ambiguous
unless -t names the module), and global name lookup across modules.

Every expected value was read by gdb at a breakpoint in the running app
(`break libgsdemo.c:20`, `break libgsdemo.c:33`, `break app.c:19`):
  lib compute (x=6, y=7): product = 126, scale = 3, lib_data = 1234,
  lib_bss = 5150, lib_rodata = 4321, lib_name = "gsdemo\\000",
  lib_file_static = 55, 'libgsdemo.c'::module_tag = 2, app_data = 2024,
  app_bss = 88; lib_work: result = 181, lib_calls = iteration + 1;
  app compute (a=2, b=5): sum = 8, 'app.c'::module_tag = 1.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from tests.live.conftest import FIXTURES, gs_cgen, gs_cgen_popen, marker_line, our_uprobes
from tests.live.test_lifecycle_errors import INT3, probe_runtime_address, text_byte

LIB_SOURCE = "shlib/libgsdemo.c"
APP_SOURCE = "shlib/app.c"


def build_shlib(build_dir: Path) -> tuple[Path, Path]:
    """libgsdemo.so (-fPIC -shared) and the PIE app linked against it."""
    folder = build_dir / "shlib"
    lib, app = folder / "libgsdemo.so", folder / "app"
    if not app.exists():
        folder.mkdir(exist_ok=True)
        subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(lib),
                        str(FIXTURES / LIB_SOURCE)], check=True)
        subprocess.run(["gcc", "-g", "-O0", "-fPIE", "-pie", "-o", str(app),
                        str(FIXTURES / APP_SOURCE), f"-L{folder}", "-lgsdemo",
                        f"-Wl,-rpath,{folder}", "-ldl"], check=True)
    return lib, app


@pytest.fixture(scope="module")
def shlib(build_dir):
    return build_shlib(build_dir)


@pytest.fixture(scope="module")
def lib_copy(shlib, build_dir) -> Path:
    """The same library under another name: a second module with the same globals."""
    copy = build_dir / "shlib-copy" / "libgsdemo_copy.so"
    copy.parent.mkdir(exist_ok=True)
    shutil.copy2(shlib[0], copy)
    return copy


def run_lines(*args: str, events: int = 2) -> list[str]:
    result = gs_cgen("trace", *args, "--max-events", str(events), "--output", "plain")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def user_error(*args: str) -> str:
    result = gs_cgen("trace", *args)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def test_library_line_locals_and_globals_by_pid(shlib, start_target):
    lib, app = shlib
    target = start_target(app)
    line = marker_line(LIB_SOURCE, "lib_product")
    names = ["x", "y", "product", "scale", "lib_data", "lib_bss", "lib_rodata", "lib_name",
             "lib_file_static", "module_tag", "app_data", "app_bss"]
    script = f"trace libgsdemo.c:{line} {{ " + " ".join(f"print {n};" for n in names) + " }"
    expected = ["x = 6", "y = 7", "product = 126", "scale = 3", "lib_data = 1234",
                "lib_bss = 5150", "lib_rodata = 4321", 'lib_name = "gsdemo"',
                "lib_file_static = 55",
                "module_tag = 2",          # the probe's own module first
                "app_data = 2024", "app_bss = 88"]    # then the other modules
    assert run_lines("-p", str(target.pid), "-s", script) == expected * 2


def test_library_function_and_static_local_by_pid(shlib, start_target):
    lib, app = shlib
    target = start_target(app)
    line = marker_line(LIB_SOURCE, "lib_work_return")
    script = ('trace lib_work { print "enter {} {}", iteration, $pid; }\n'
              f'trace libgsdemo.c:{line} {{ print "line {{}} {{}} {{}} {{}}", iteration, '
              'lib_calls, result, module_tag; }')
    lines = run_lines("-p", str(target.pid), "-s", script, events=6)
    assert len(lines) == 6
    enters = [line for line in lines if line.startswith("enter ")]
    returns = [line for line in lines if line.startswith("line ")]
    assert len(enters) >= 2 and len(returns) >= 2
    for text in enters:
        _, iteration, pid = text.split()
        assert int(pid) == target.pid
    for text in returns:
        _, iteration, calls, result, tag = text.split()
        assert (int(calls), result, tag) == (int(iteration) + 1, "181", "2")
    # one enter/return pair per iteration, in order
    iterations = [int(text.split()[1]) for text in lines]
    assert iterations == sorted(iterations)


def test_same_function_in_executable_and_library_is_ambiguous(shlib, start_target):
    lib, app = shlib
    target = start_target(app)
    err = user_error("-p", str(target.pid), "-s", 'trace compute { print "hit"; }')
    assert "'compute'" in err
    assert os.path.realpath(app) in err and os.path.realpath(lib) in err


def test_target_library_resolves_in_that_library(shlib, start_target):
    lib, app = shlib
    target = start_target(app)
    script = 'trace compute { print "{} {} {} {}", x, y, module_tag, app_data; }'
    assert run_lines("-t", str(lib), "-p", str(target.pid), "-s", script) == ["6 7 2 2024"] * 2


def test_target_executable_resolves_in_the_executable(shlib, start_target):
    lib, app = shlib
    target = start_target(app)
    line = marker_line(APP_SOURCE, "app_sum")
    script = ('trace compute { print "{} {} {} {}", a, b, module_tag, lib_rodata; }\n'
              f'trace app.c:{line} {{ print "sum {{}} {{}} {{}}", sum, app_bss, lib_bss; }}')
    lines = run_lines("-t", str(app), "-p", str(target.pid), "-s", script, events=5)
    # the two probes attach one after the other: either may fire first
    assert len(lines) == 5 and set(lines) == {"2 5 1 4321", "sum 8 88 5150"}


def test_target_executable_alone_reads_its_libraries_globals(shlib, start_target):
    """-t APP without -p: every process running APP maps its library closure,
    so the libraries' globals resolve there as they do with -p (GhostScope's
    globals scripts trace the executable and print a library's globals)."""
    lib, app = shlib
    start_target(app)
    line = marker_line(APP_SOURCE, "app_sum")
    script = f'trace app.c:{line} {{ print "{{}} {{}} {{}}", sum, lib_bss, lib_rodata; }}'
    assert run_lines("-t", str(app), "-s", script, events=2) == ["8 5150 4321"] * 2


def test_target_through_a_symlink_is_the_file_it_names(shlib, start_target, tmp_path):
    """-t ALIAS where ALIAS -> libgsdemo.so: the module is the real file the
    process maps (it said 'no loaded module matches')."""
    lib, app = shlib
    target = start_target(app)
    alias = tmp_path / "libgsdemo_alias.so"
    alias.symlink_to(lib)
    script = 'trace compute { print "{} {} {}", x, y, lib_data; }'
    for mode in (("-p", str(target.pid)), ()):
        assert run_lines("-t", str(alias), *mode, "-s", script) == ["6 7 1234"] * 2


def test_a_module_address_by_the_links_name(shlib, start_target, tmp_path):
    """-t ALIAS [-p PID] and `libgsdemo_alias.so:0xADDR`: the link names
    libgsdemo.so, so does the pattern (it said 'no loaded module matches
    'libgsdemo_alias.so''; GhostScope's globals_target_execution test)."""
    lib, app = shlib
    target = start_target(app)
    alias = tmp_path / "libgsdemo_alias.so"
    alias.symlink_to(lib)
    (compute,) = open_module(str(lib)).find_functions("compute")
    script = (f"trace libgsdemo_alias.so:0x{compute.probe_address:x} "
              '{ print "{} {} {}", x, y, lib_data; }')
    for mode in (("-p", str(target.pid)), ()):
        assert run_lines("-t", str(alias), *mode, "-s", script) == ["6 7 1234"] * 2


def test_global_found_in_several_other_modules_is_an_error(shlib, lib_copy, start_target):
    lib, app = shlib
    target = start_target(app, str(lib_copy))
    err = user_error("-p", str(target.pid), "-s", "trace app_step { print lib_data; }")
    assert "lib_data" in err
    assert os.path.realpath(lib) in err and os.path.realpath(lib_copy) in err
    # the probe's own module wins over the other copy: no ambiguity there
    script = "trace compute { print x; print lib_data; print lib_bss; }"
    assert run_lines("-t", str(lib), "-p", str(target.pid), "-s", script) == [
        "x = 6", "lib_data = 1234", "lib_bss = 5150"] * 2


def test_target_library_traces_every_process_that_maps_it(shlib, start_target):
    lib, app = shlib
    first, second = start_target(app), start_target(app)
    script = 'trace compute { print "{} {} {} {}", $pid, x, lib_data, lib_bss; }'
    lines = run_lines("-t", str(lib), "-s", script, events=12)
    assert len(lines) == 12
    pids = set()
    for text in lines:
        pid, rest = text.split(" ", 1)
        assert rest == "6 1234 5150", text
        pids.add(int(pid))
    assert pids == {first.pid, second.pid}


def test_library_probe_is_removed_when_tracing_ends(shlib, start_target):
    lib, app = shlib
    target = start_target(app)
    address = probe_runtime_address(lib, target.pid, "lib_work")
    original = text_byte(target.pid, address)
    assert original != INT3
    # The condition reads a parameter, so the probe stays at `info`'s
    # post-prologue address (a block of globals only goes to the entry).
    tracer = gs_cgen_popen("trace", "-p", str(target.pid), "-s",
                           "trace lib_work { if iteration >= 0 { print lib_rodata; } }",
                           "--output", "plain")
    assert tracer.stdout.readline().strip() == "lib_rodata = 4321"
    assert text_byte(target.pid, address) == INT3        # the uprobe is on the library
    tracer.send_signal(signal.SIGTERM)
    assert tracer.wait(timeout=20) == 0
    assert "Traceback" not in tracer.stderr.read()
    deadline = time.monotonic() + 5
    while text_byte(target.pid, address) == INT3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text_byte(target.pid, address) == original
    assert our_uprobes() == []
    assert target.proc.poll() is None
