"""Issue 10, live: a script with 100 probes attaches, prints what gdb prints
at each function, and detaches fast with every uprobe gone — as BPF links
(the default where the kernel has uprobe_multi links) and as perf events
(GS_CGEN_UPROBE_MULTI=off)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.live.conftest import REPO, compile_fixture, our_uprobes
from tests.prerequisites import require

SOURCE = "many_functions.c"
FUNCTIONS = [f"many_{n}" for n in range(100)]
INT3 = 0xCC


@pytest.fixture(scope="module")
def many_bin(build_dir):
    require(None if _gdb_works() else "gdb is not installed")
    return compile_fixture(build_dir, SOURCE)


def _gdb_works() -> bool:
    try:
        return subprocess.run(["gdb", "--version"], capture_output=True).returncode == 0
    except OSError:
        return False


def gdb_parameter_values(binary: Path, functions: list[str]) -> dict[str, str]:
    """What gdb prints for `a` at `break F` of each function, in one run."""
    commands = []
    for name in functions:
        commands += ["-ex", f"break {name}"]
    commands += ["-ex", "run"]
    for _ in functions:
        commands += ["-ex", "print a", "-ex", "continue"]
    result = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off",
                             *commands, str(binary)], capture_output=True, text=True,
                            timeout=60)
    hits = re.findall(r"Breakpoint \d+, (many_\d+) \(a=\d+\).*?\n(?:.*\n)*?\$\d+ = (-?\d+)",
                      result.stdout)
    return dict(hits)


def runtime_addresses(binary: Path, pid: int, dry_run_output: str) -> dict[str, int]:
    """Each function's probe address in `pid` (PIE: mapped at file offset 0)."""
    real = os.path.realpath(binary)
    base = next(int(line.split()[0].split("-")[0], 16)
                for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                if line.split()[-1] == real and int(line.split()[2], 16) == 0)
    return {name: base + int(vaddr, 16)
            for name, vaddr in re.findall(r": (many_\d+) -> .*? 0x([0-9a-f]+), file offset",
                                          dry_run_output)}


def text_bytes(pid: int, addresses: dict[str, int]) -> dict[str, int]:
    with open(f"/proc/{pid}/mem", "rb") as mem:
        found = {}
        for name, address in addresses.items():
            mem.seek(address)
            found[name] = mem.read(1)[0]
        return found


def script(functions: list[str]) -> str:
    return "\n".join(f"trace {name} {{ print a; }}" for name in functions)


def cli(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([str(REPO / ".venv" / "bin" / "python"), "-m", "gs_cgen.cli", *args],
                            cwd=REPO, env={**os.environ, **(env or {})}, text=True, **popen)


@pytest.mark.parametrize("links", ["default", "off"])
def test_many_probes_print_gdbs_values_and_detach_fast(many_bin, links):
    functions = FUNCTIONS if links == "default" else FUNCTIONS[:8]
    env = {} if links == "default" else {"GS_CGEN_UPROBE_MULTI": "off"}
    expected = gdb_parameter_values(many_bin, functions)
    assert len(expected) == len(functions)
    target = subprocess.Popen([str(many_bin)], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        dry = cli("trace", "-p", str(target.pid), "-s", script(functions), "--dry-run",
                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dry_out, dry_err = dry.communicate(timeout=120)
        assert dry.returncode == 0, dry_err
        addresses = runtime_addresses(many_bin, target.pid, dry_out)
        assert len(addresses) == len(functions)
        original = text_bytes(target.pid, addresses)
        assert INT3 not in original.values()

        tracer = cli("trace", "-p", str(target.pid), "-s", script(functions),
                     "--output", "json", env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
        printed = {}           # function -> the values its events carried
        while len(printed) < len(functions):
            line = tracer.stdout.readline()
            assert line, tracer.stderr.read()
            event = json.loads(line)
            printed.setdefault(event["trace"], set()).add(str(event["values"][0]["value"]))
            if sum(map(len, printed.values())) >= 3 * len(functions):
                break
        assert set(text_bytes(target.pid, addresses).values()) == {INT3}
        asked = time.monotonic()
        tracer.send_signal(signal.SIGINT)
        assert tracer.wait(timeout=60) == 0
        teardown = time.monotonic() - asked
        stderr = tracer.stderr.read()
        assert "Traceback" not in stderr
        # Every function's value, as gdb printed it at the same `break F`,
        # in that function's events: the probes share one program (their
        # code is the same) and each knows its site by its attach cookie.
        assert printed == {name: {value} for name, value in expected.items()}
        assert text_bytes(target.pid, addresses) == original
        assert our_uprobes(tracer.pid) == []
        emitted = cli("trace", "-p", str(target.pid), "-s", script(functions), "--emit-c",
                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE).communicate()[0]
        assert len(re.findall(r"^int gs_probe_\d+\(", emitted, re.M)) == \
            (1 if links == "default" else len(functions))
        if links == "default":
            # Perf-event uprobes took ~110 ms each to close (12 s for 100).
            assert teardown < 4.0, f"100 probes took {teardown:.1f} s to detach"
    finally:
        target.kill()
        target.wait()


_STACK_OVERFLOW_C = r"""
#include <uapi/linux/ptrace.h>
int gs_probe_0(struct pt_regs *ctx)
{
    volatile char big[1024];
    for (int i = 0; i < 1024; i += 64)
        big[i] = ctx->di + i;
    return big[ctx->si & 1023];
}
"""


def test_a_fatal_clang_error_is_shown_not_a_silent_exit():
    """clang exits the process from inside BCC when a probe overflows the
    BPF stack; the user must still read why (it used to be status 1 and
    nothing at all)."""
    code = ("from gs_cgen.runtime.session import TraceSession\n"
            "from tests.unit.emit.test_golden import generate_plan\n"
            f"TraceSession(generate_plan('basic'), {_STACK_OVERFLOW_C!r}).load()\n"
            "print('not reached')\n")
    result = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c", code],
                            capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "error: BPF compilation failed: clang stopped gs-cgen with a fatal error in the "
        "C generated for the trace block at line 2, column 1 ('handle') (no probe was "
        "attached)\nhint: "), result.stderr
    assert "Looks like the BPF stack limit of 512 bytes is exceeded" in result.stderr
    assert "Traceback" not in result.stderr
