"""Issue 2, live: clean ends on SIGINT/SIGTERM/SIGKILL with no uprobe left
behind, and clear errors (exit 1, never a traceback) for bad input."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.live.conftest import (REPO, compile_fixture, gs_cgen, gs_cgen_popen, our_uprobes)

SOURCE = "live_basic.c"


@pytest.fixture(scope="module")
def basic_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


def probe_runtime_address(binary: Path, pid: int, function: str) -> int:
    """Where the uprobe for `function` sits in `pid`'s address space."""
    info = gs_cgen("info", "-t", str(binary), "function", function)
    assert info.returncode == 0, info.stderr
    vaddr = int(re.search(r"probe address 0x([0-9a-f]+)", info.stdout).group(1), 16)
    real = os.path.realpath(binary)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if fields[-1] == real and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16) + vaddr
    raise AssertionError("binary not mapped")


def text_byte(pid: int, address: int) -> int:
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address)
        return mem.read(1)[0]


INT3 = 0xCC


def start_tracing(pid: int) -> subprocess.Popen:
    proc = gs_cgen_popen("trace", "-p", str(pid), "-s", "trace add { print a; }",
                         "--output", "plain")
    assert proc.stdout.readline().strip() == "a = 3"
    return proc


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_signal_ends_cleanly_and_removes_probe(basic_bin, start_target, signum):
    target = start_target(basic_bin)
    address = probe_runtime_address(basic_bin, target.pid, "add")
    original = text_byte(target.pid, address)
    assert original != INT3
    tracer = start_tracing(target.pid)
    assert text_byte(target.pid, address) == INT3      # the uprobe really is there
    tracer.send_signal(signum)
    status = tracer.wait(timeout=20)
    assert status == (0 if signum != signal.SIGKILL else -signal.SIGKILL)
    assert "Traceback" not in tracer.stderr.read()
    deadline = time.monotonic() + 5
    while text_byte(target.pid, address) == INT3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text_byte(target.pid, address) == original
    assert our_uprobes(tracer.pid) == []
    assert target.proc.poll() is None


def test_target_exit_ends_trace(basic_bin, start_target):
    target = start_target(basic_bin)
    tracer = start_tracing(target.pid)
    target.stop()
    assert tracer.wait(timeout=20) == 0
    assert f"process {target.pid} exited" in tracer.stderr.read()


def user_error(*args: str, **kwargs) -> str:
    result = gs_cgen(*args, **kwargs)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def test_syntax_error_names_line_and_column(basic_bin):
    err = user_error("trace", "-t", str(basic_bin), "-s", "trace add {\n  print a b;\n}")
    assert err.startswith("<script>:2:11: error: ")
    assert "  print a b;\n" in err and "          ^" in err


def test_unknown_function_lists_candidates(basic_bin):
    err = user_error("trace", "-t", str(basic_bin), "-s", "trace ad { print a; }")
    assert "<script>:1:7: error: " in err and "'ad'" in err
    assert "did you mean: " in err and "add" in err


def test_unknown_variable_lists_candidates(basic_bin):
    err = user_error("trace", "-t", str(basic_bin), "-s", "trace add { print totl; }")
    assert "<script>:1:19: error: no variable 'totl'" in err
    assert re.search(r"did you mean: .*\btotal\b", err)


def test_unknown_line_file(basic_bin):
    err = user_error("trace", "-t", str(basic_bin), "-s", "trace nosuch.c:10 { print a; }")
    assert "nosuch.c" in err


def test_binary_without_debug_info(build_dir):
    stripped = compile_fixture(build_dir, SOURCE, "-O0 -fPIE -pie", "live_basic_nodebug")
    err = user_error("trace", "-t", str(stripped), "-s", "trace add { print a; }")
    assert "has no DWARF debug info" in err


def test_no_such_pid():
    err = user_error("trace", "-p", "999999999", "-s", "trace add { print a; }")
    assert "no process with PID 999999999" in err


def test_address_inside_an_instruction_is_refused(basic_bin):
    info = gs_cgen("info", "-t", str(basic_bin), "function", "add")
    probe = int(re.search(r"probe address 0x([0-9a-f]+)", info.stdout).group(1), 16)
    err = user_error("trace", "-t", str(basic_bin), "-s", f"trace 0x{probe + 1:x} {{ print a; }}")
    assert f"address 0x{probe + 1:x} is not an instruction boundary" in err


def test_binary_for_another_architecture_is_refused(basic_bin, tmp_path):
    foreign = tmp_path / "arm64_prog"
    data = bytearray(basic_bin.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")         # e_machine = EM_AARCH64
    foreign.write_bytes(bytes(data))
    err = user_error("trace", "-t", str(foreign), "--dry-run", "-s", "trace add { print a; }")
    assert "is 64-bit AARCH64 code: unsupported architecture" in err


def test_script_file_missing(basic_bin):
    err = user_error("trace", "-t", str(basic_bin), "-f", "/nonexistent/x.gs")
    assert "cannot read script file /nonexistent/x.gs" in err


def test_script_file_that_is_a_directory_is_a_user_error(basic_bin, tmp_path):
    err = user_error("trace", "-t", str(basic_bin), "-f", str(tmp_path))
    assert f"cannot read script file {tmp_path}: Is a directory" in err


def test_unreadable_script_file_is_a_user_error(public_copy):
    script = public_copy.parent / "secret.gs"
    script.write_text("trace add { print a; }")
    os.chmod(script, 0o000)
    result = as_nobody("trace", "-t", str(public_copy), "-f", str(script), "--emit-c")
    assert result.returncode == 1, result.stderr
    assert f"cannot read script file {script}: Permission denied" in result.stderr


def test_bad_usage_exits_2(basic_bin):
    result = gs_cgen("trace", "-t", str(basic_bin))
    assert result.returncode == 2


@pytest.fixture
def public_copy(basic_bin, tmp_path_factory):
    """The binary somewhere an unprivileged user can read it, and the
    checkout (gs-cgen and its venv) reachable by that user: a clone in
    `mktemp -d` is mode 0700, so it is opened to others for the test."""
    folder = Path("/tmp") / f"gs-cgen-public-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    os.chmod(folder, 0o755)
    copy = folder / "live_basic"
    shutil.copy2(basic_bin, copy)
    os.chmod(copy, 0o755)
    # Python lists the checkout to import from it (o+r); the rest is crossed (o+x)
    needed = [(REPO, 0o005)] + [(parent, 0o001) for parent in REPO.parents]
    closed = [(d, d.stat().st_mode, bits) for d, bits in needed if d.stat().st_mode & bits != bits]
    for directory, mode, bits in closed:
        os.chmod(directory, mode | bits)
    yield copy
    for directory, mode, _ in closed:
        os.chmod(directory, mode)
    shutil.rmtree(folder, ignore_errors=True)


def as_nobody(*args: str) -> subprocess.CompletedProcess:
    import sys
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           sys.executable, "-m", "gs_cgen.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=60, env={**os.environ, "HOME": "/tmp"})


def test_non_root_is_told_what_privilege_is_missing(public_copy):
    result = as_nobody("trace", "-t", str(public_copy), "-s", "trace add { print a; }")
    assert result.returncode == 1, result.stderr
    assert "needs root" in result.stderr and "CAP_BPF" in result.stderr


def test_emit_c_needs_no_root(public_copy):
    result = as_nobody("trace", "-t", str(public_copy), "-s", "trace add { print a; }",
                       "--emit-c")
    assert result.returncode == 0, result.stderr
    assert "int gs_probe_0(struct pt_regs *ctx)" in result.stdout
