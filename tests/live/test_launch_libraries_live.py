"""Live: probes in libraries that are not mapped yet when the probes attach.

`-- COMMAND` holds the command right after execve, when only the program
and ld.so are mapped: patterns resolve in the libraries ld.so will load
(the program's library closure), and the probes sit on those files until
they map. `-t LIB -p PID` probes a library the process dlopen()s later.

Expected values are gdb's:
  shlib app (GSDEMO_ITERATIONS=3), `break lib_setup`: lib_bss = 0,
    lib_data = 1234, lib_file_static = 55, module_tag = 2, app_bss = 88,
    app_data = 2024; `break lib_work`: iteration = 0, 1, 2, lib_bss = 5150;
    `break app_step`: iteration = 0, 1, 2, lib_data = 1234.
  python3.11 launch_dict.py, `break PyDict_SetItem if key->ob_type ==
    &PyUnicode_Type && $_streq((char *)((PyASCIIObject *)key + 1),
    "gs-cgen-key")`: one hit, ((PyASCIIObject *)key)->length = 11,
    ((PyDictObject *)op)->ma_used = 2, ((PyLongObject *)value)->ob_digit[0] = 42.
  dlopen host after SIGUSR1, `break plugin_work`: factor = 3,
    plugin_total = 5000, plugin_label = "late plugin", host_generation = 77;
    `break host_tick` after the dlopen: plugin_total = 5000; `host PLUGIN 3`
    (dlopen at once): iteration = 0, 1, 2 with the same values, exit 0.
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

from tests.live.conftest import FIXTURES, compile_fixture, gs_cgen, gs_cgen_popen, our_uprobes, require
from tests.live.test_shared_libs_live import build_shlib
from tests.live.test_target_modes_live import info_probe_address

OFFSETS_UNAVAILABLE = "plugin_total = <error: offsets unavailable>"
KNOWN = "plugin_total = 5000"


@pytest.fixture(scope="module")
def shlib(build_dir):
    return build_shlib(build_dir)


@pytest.fixture(scope="module")
def dlopen_host(build_dir) -> tuple[Path, Path]:
    """(host, libgsplugin.so): host dlopen()s the plugin on SIGUSR1."""
    plugin = build_dir / "dlopen" / "libgsplugin.so"
    if not plugin.exists():
        plugin.parent.mkdir(exist_ok=True)
        subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(plugin),
                        str(FIXTURES / "dlopen" / "plugin.c")], check=True)
    host = compile_fixture(build_dir, "dlopen/host.c", flags="-g -O0 -fPIE -pie -ldl",
                           output="dlopen_host")
    return host, plugin


def launch(*args: str, **env: str) -> subprocess.CompletedProcess:
    result = gs_cgen("trace", "--output", "plain", *args, env={**os.environ, **env})
    assert "Traceback" not in result.stderr, result.stderr
    return result


def trace_lines(result: subprocess.CompletedProcess) -> list[str]:
    """Trace output without the launched program's own lines."""
    return [line for line in result.stdout.splitlines() if line not in ("ready", "loaded")]


# -- COMMAND -------------------------------------------------------------------


def test_launch_probes_a_library_function_called_right_at_start(shlib):
    lib, app = shlib
    script = ('trace lib_setup { print "setup {} {} {} {} {} {}", lib_bss, lib_data, '
              'lib_file_static, module_tag, app_bss, app_data; }\n'
              'trace lib_work { print "work {} {}", iteration, lib_bss; }\n'
              'trace app_step { print "step {} {}", iteration, lib_data; }')
    result = launch("-s", script, "--", str(app), GSDEMO_ITERATIONS="3")
    assert result.returncode == 0, result.stderr
    # the program's probe reads the library's global exactly from its first
    # call: the library was mapped, and its offsets filled, before main ran
    assert trace_lines(result) == ["setup 0 1234 55 2 88 2024",
                                   "step 0 1234", "work 0 5150", "step 1 1234", "work 1 5150",
                                   "step 2 1234", "work 2 5150"]
    assert "command exited with status 0" in result.stderr
    assert our_uprobes() == []


def test_launch_same_function_in_program_and_library_is_ambiguous(shlib):
    lib, app = shlib
    result = launch("-s", 'trace compute { print "hit"; }', "--", str(app))
    assert result.returncode == 1
    assert "function 'compute' is defined in several modules: " \
        f"{os.path.realpath(app)}, {os.path.realpath(lib)}" in result.stderr


def test_launch_function_found_nowhere_names_the_modules_searched(shlib):
    lib, app = shlib
    result = launch("-s", "trace lib_wrok { print iteration; }", "--", str(app))
    assert result.returncode == 1
    assert f"error: no function 'lib_wrok' in '{os.path.realpath(app)}' or the libraries " \
        "it loads" in result.stderr
    assert "did you mean: lib_work" in result.stderr
    searched = re.search(r"^hint: searched (.*)$", result.stderr, re.M)
    assert searched, result.stderr
    assert searched.group(1).startswith(f"{os.path.realpath(app)}, {os.path.realpath(lib)}")


def test_launch_with_an_unresolvable_library_still_runs(shlib):
    lib, app = shlib
    missing = "libgs-cgen-no-such-preload.so"
    result = launch("-s", 'trace lib_work { print "work {}", iteration; }', "--", str(app),
                    GSDEMO_ITERATIONS="2", LD_PRELOAD=missing)
    assert result.returncode == 0, result.stderr
    assert f"gs-cgen: note: {missing}, needed by LD_PRELOAD, was not found (searched: " \
        in result.stderr
    assert trace_lines(result) == ["work 0", "work 1"]
    assert "command exited with status 0" in result.stderr


def test_launch_follows_a_wrapper_script_to_the_program_it_execs(shlib, tmp_path):
    lib, app = shlib
    wrapper = tmp_path / "run-app"
    wrapper.write_text(f'#!/bin/sh\nGSDEMO_ITERATIONS=2 exec "{app}" "$@"\n')
    wrapper.chmod(0o755)
    result = launch("-s", 'trace lib_work { print "work {} {}", iteration, lib_data; }',
                    "--", str(wrapper))
    assert result.returncode == 0, result.stderr
    assert f"gs-cgen: {wrapper} is a script: following it" in result.stderr
    assert trace_lines(result) == ["work 0 1234", "work 1 1234"]
    assert "command exited with status 0" in result.stderr
    # in the program it runs, a name found nowhere is the usual error at once
    typo = launch("-s", "trace lib_wrok { print iteration; }", "--", str(wrapper))
    assert typo.returncode == 1
    assert f"no function 'lib_wrok' in '{os.path.realpath(app)}'" in typo.stderr
    assert "did you mean: lib_work" in typo.stderr


def test_launch_with_target_library_it_dlopens(dlopen_host):
    host, plugin = dlopen_host
    script = ('trace plugin_work { print "{} {} {} {}", iteration, factor, plugin_total, '
              "host_generation; }")
    result = launch("-t", str(plugin), "-s", script, "--", str(host), str(plugin), "3")
    assert result.returncode == 0, result.stderr
    assert trace_lines(result) == [f"{i} 3 5000 77" for i in range(3)]
    assert "command exited with status 0" in result.stderr


def python_with_libpython() -> str:
    """The python3.11 on PATH, when the interpreter it runs links
    libpython3.11.so (here: a pyenv shim, so gs-cgen follows it to the real
    interpreter, built from source with DWARF)."""
    if shutil.which("python3.11") is None:
        require("python3.11 is not installed")
    real = subprocess.run(["python3.11", "-c", "import sys; print(sys.executable)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    needed = subprocess.run(["readelf", "-d", real], capture_output=True, text=True).stdout
    if "libpython3.11.so" not in needed:
        require(f"{real} does not link libpython3.11.so")
    return "python3.11"


def test_launch_python_traces_pydict_setitem_in_libpython(tmp_path):
    python = python_with_libpython()
    work = tmp_path / "launch_dict.py"
    # The key is built at run time, so no compile-time constant dict holds it.
    work.write_text('key = "-".join(["gs", "cgen", "key"])\n'
                    'd = {"alpha": 1, "beta": 2}\n'
                    'd[key] = 42\n')
    script = """
    trace PyDict_SetItem {
        if key.ob_type == &PyUnicode_Type {
            let name = cast(cast(key, "PyASCIIObject *") + 1, "char *");
            if name == "gs-cgen-key" {
                print "{} {} {} {}", name, cast(key, "PyASCIIObject *").length,
                      cast(op, "PyDictObject *").ma_used,
                      cast(value, "PyLongObject *").ob_digit[0];
            }
        }
    }"""
    result = launch("-s", script, "--", python, str(work))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['"gs-cgen-key" 11 2 42']
    assert "command exited with status 0" in result.stderr
    assert our_uprobes() == []


# -t LIB -p PID, LIB dlopen()ed after attach ------------------------------------


def start_host(host: Path, plugin: Path) -> subprocess.Popen:
    target = subprocess.Popen([str(host), str(plugin)], stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().strip() == "ready"
    return target


def wait_until_attached(tracer: subprocess.Popen) -> None:
    while "tracing" not in (line := tracer.stderr.readline()):
        assert line, "the tracer ended before attaching"


def maps_plugin(pid: int, plugin: Path) -> bool:
    return str(plugin) in Path(f"/proc/{pid}/maps").read_text()


@pytest.fixture
def host_process(dlopen_host):
    host, plugin = dlopen_host
    target = start_host(host, plugin)
    yield target
    target.kill()
    target.wait()


def test_target_library_dlopened_after_attach(dlopen_host, host_process):
    host, plugin = dlopen_host
    script = ('trace plugin_work { print "{} {} {} {}", factor, plugin_total, plugin_label, '
              "host_generation; }")
    tracer = gs_cgen_popen("trace", "-t", str(plugin), "-p", str(host_process.pid), "-s", script,
                           "--output", "plain", "--max-events", "3")
    wait_until_attached(tracer)
    assert not maps_plugin(host_process.pid, plugin)      # attached to a file not mapped yet
    host_process.send_signal(signal.SIGUSR1)
    out, err = tracer.communicate(timeout=30)
    assert tracer.returncode == 0, err
    assert out.splitlines() == ['3 5000 "late plugin" 77'] * 3
    assert host_process.stdout.readline().strip() == "loaded"
    assert our_uprobes() == []


def test_global_of_a_library_dlopened_long_after_attach(dlopen_host, host_process):
    """A probe in the program reads a global of the plugin: unavailable
    until the dlopen, exact from then on, even when the dlopen comes after
    the tracer's first round of retries gave up."""
    from gs_cgen.runtime.offsets import RETRY_SECONDS
    host, plugin = dlopen_host
    address = info_probe_address(host, "host_tick")
    tracer = gs_cgen_popen("trace", "-t", str(plugin), "-p", str(host_process.pid), "-s",
                           f"trace {host.name}:{address:#x} {{ print plugin_total; }}",
                           "--output", "plain")
    try:
        wait_until_attached(tracer)
        load_at, loaded = time.monotonic() + RETRY_SECONDS + 1.0, False
        lines: list[str] = []
        while lines[-5:] != [KNOWN] * 5:
            now = time.monotonic()
            assert now < load_at + 10, lines[-5:]
            if not loaded and now >= load_at:
                host_process.send_signal(signal.SIGUSR1)
                loaded = True
            line = tracer.stdout.readline()
            assert line, tracer.stderr.read()
            lines.append(line.rstrip("\n"))
    finally:
        tracer.send_signal(signal.SIGINT)
        assert tracer.wait(timeout=20) == 0
    assert lines[0] == OFFSETS_UNAVAILABLE
    known = lines.index(KNOWN)
    assert set(lines[:known]) == {OFFSETS_UNAVAILABLE}
    assert set(lines[known:]) == {KNOWN}
    assert our_uprobes() == []
