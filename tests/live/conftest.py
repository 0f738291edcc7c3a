"""Live tests: real BCC, real uprobes, real processes.

Outside CI they skip when not root or BCC is missing; with CI=true they
fail instead, so a green CI run always means the probes really fired.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.prerequisites import require

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def _live_problem() -> str | None:
    if os.geteuid() != 0:
        return "live tests need root"
    try:
        import bcc  # noqa: F401
    except ImportError as exc:
        return f"BCC not importable: {exc}"
    if not Path("/sys/kernel/btf/vmlinux").exists() and not Path("/sys/kernel/tracing").exists():
        return "no BPF tracing support"
    return None


@pytest.fixture(scope="session", autouse=True)
def live_environment():
    require(_live_problem())


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("live-bin")


def compile_fixture(build_dir: Path, source: str, flags: str = "-g -O0 -fPIE -pie",
                    output: str | None = None) -> Path:
    out = build_dir / (output or Path(source).stem)
    if not out.exists():
        subprocess.run(["gcc", *flags.split(), "-o", str(out), str(FIXTURES / source)],
                       check=True)
    return out


def clang_fixture(build_dir: Path, source: str, flags: str = "-g -O2") -> Path:
    """A fixture built by clang (its DWARF 5 differs from gcc's)."""
    clang = shutil.which("clang")
    if clang is None:
        require("clang is not installed (apt-get install clang)")
    out = build_dir / Path(source).stem
    if not out.exists():
        subprocess.run([clang, *flags.split(), "-o", str(out), str(FIXTURES / source)], check=True)
    return out


def marker_line(source: str, marker: str) -> int:
    for number, text in enumerate((FIXTURES / source).read_text().splitlines(), 1):
        if f"LINE:{marker}" in text:
            return number
    raise KeyError(marker)


class RunningTarget:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def start_target():
    started: list[RunningTarget] = []

    def start(binary: Path, *args: str) -> RunningTarget:
        target = RunningTarget([str(binary), *args])
        started.append(target)
        return target
    yield start
    for target in started:
        target.stop()


def gs_cgen(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gs_cgen.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, **kwargs)


def gs_cgen_popen(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gs_cgen.cli", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def our_uprobes(tracer_pid: int | None = None) -> list[str]:
    """uprobe_events lines that belong to gs-cgen (legacy tracefs path):
    to the tracer `tracer_pid` (its events are gs_<pid>_<probe>) when
    given, for tests that run beside other tracers."""
    path = Path("/sys/kernel/tracing/uprobe_events")
    if not path.exists():
        return []
    mark = "gs_" if tracer_pid is None else f"gs_{tracer_pid}_"
    return [line for line in path.read_text().splitlines() if mark in line]


def uprobe_perf_events_open(pid: int) -> int:
    """perf-event fds a process holds (uprobe PMU probes are these)."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if "perf_event" in os.readlink(fd):
                count += 1
        except OSError:
            pass
    return count


def traced_values(binary, probes, count: int, as_gdb) -> list[tuple[str, list[str]]]:
    """(pattern, values rendered by `as_gdb`) for the first `count` events
    of `gs-cgen trace -- binary` with one print per (pattern, exprs) probe:
    the gs-cgen side of tests/gdb_oracle.gdb_values."""
    script = "\n".join(f"trace {spec} {{ print \"{' '.join('{}' for _ in exprs)}\", "
                       f"{', '.join(exprs)}; }}" for spec, exprs in probes)
    result = gs_cgen("trace", "--output", "json", "--max-events", str(count), "-s", script,
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return [(event["trace"], [as_gdb(v) for v in event["values"]]) for event in events]
