"""What every section of the bench shares: paths, CPU pinning, running and
stopping processes, code-byte and tracefs checks that nothing is left behind.

Standard library only; gs-cgen runs from the repository's .venv.
"""
from __future__ import annotations

import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
GS = os.path.join(REPO, ".venv", "bin", "gs-cgen")
TRACEFS = "/sys/kernel/tracing"
GROUP = "gsbench"                    # perf probe / raw ftrace event group
GDB = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
ENV = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
ENV["PYTHONUNBUFFERED"] = "1"
START = time.monotonic()
NOTES: list[str] = []


class Context:
    """Where this run works and which CPUs its two roles use."""

    def __init__(self, workdir: str, target_cpus: set[int] | None,
                 tracer_cpus: set[int] | None) -> None:
        self.workdir = workdir
        self.target_cpus = target_cpus
        self.tracer_cpus = tracer_cpus

    def pin(self, role: str):
        cpus = self.target_cpus if role == "target" else self.tracer_cpus
        return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)


def note(text: str) -> None:
    NOTES.append(text)
    print(f"  note: {text}", file=sys.stderr, flush=True)


def progress(text: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {text}", file=sys.stderr, flush=True)


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def run(cmd: list[str], timeout: float = 120, env: dict | None = None,
        cwd: str | None = None) -> tuple[float, int, str]:
    """Run cmd to its end: (seconds, exit status, stdout+stderr)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env or ENV, cwd=cwd)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return time.perf_counter() - start, -999, out.decode(errors="replace")
    return time.perf_counter() - start, proc.returncode, out.decode(errors="replace")


def run_rss(cmd: list[str], timeout: float = 300, env: dict | None = None) -> tuple[float, int, str, int]:
    """Like run, but waits with wait4 to get the child's own peak RSS (kB)."""
    out_path = tempfile.mktemp(prefix="gsbench-out-")
    start = time.perf_counter()
    with open(out_path, "wb") as out_f:
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env or ENV)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    with open(out_path, errors="replace") as f:
        out = f.read()
    os.unlink(out_path)
    return seconds, proc.returncode, out, usage.ru_maxrss


def stop(proc: subprocess.Popen | None, sig: int = signal.SIGINT, wait: float = 8.0) -> int | None:
    """End a process this bench started: sig first (SIGINT, as a user would;
    gdb and the tracers clean up on it), SIGKILL if it lingers."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        except ProcessLookupError:
            pass
    return proc.returncode


def read_text(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def evict_from_page_cache(path: str) -> None:
    """Drop one file's pages from the page cache (those no process maps),
    so a 'cold' run reads it from disk without disturbing anyone else."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm_file(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


# --------------------------------------------------------------------------
# ELF: where a function is in the file, to watch its bytes in a live process


def load_segments(path: str) -> list[tuple[int, int, int]]:
    """PT_LOAD segments as (vaddr, file offset, file size); ELF64 LE only."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
            raise RuntimeError(f"{path}: not a little-endian ELF64 file")
        phoff, = struct.unpack_from("<Q", ident, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", ident, 0x36)
        f.seek(phoff)
        headers = f.read(phentsize * phnum)
    segments = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", headers, i * phentsize)
        if p_type == 1:
            segments.append((p_vaddr, p_offset, p_filesz))
    return segments


def file_offset(path: str, vaddr: int) -> int:
    for seg_vaddr, seg_off, seg_size in load_segments(path):
        if seg_vaddr <= vaddr < seg_vaddr + seg_size:
            return vaddr - seg_vaddr + seg_off
    raise RuntimeError(f"{path}: 0x{vaddr:x} is in no loadable segment")


def symbol(path: str, name: str) -> tuple[int, int]:
    """(virtual address, size) of a defined function symbol, via nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name and parts[2] in "tTiW":
            return int(parts[0], 16), int(parts[1], 16)
    raise RuntimeError(f"{name} not found in {path}")


class CodeWatch:
    """A function's bytes in a live process against the file's: a uprobe
    (or a gdb breakpoint) shows as 0xCC in /proc/PID/mem."""

    def __init__(self, path: str, func: str) -> None:
        self.path = os.path.realpath(path)
        vaddr, self.size = symbol(self.path, func)
        self.offset = file_offset(self.path, vaddr)
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            self.original = f.read(self.size)

    def _address(self, pid: int) -> int | None:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) < 6 or parts[5].strip() != self.path:
                    continue
                start, end = (int(x, 16) for x in parts[0].split("-"))
                off = int(parts[2], 16)
                if off <= self.offset < off + (end - start):
                    return start + self.offset - off
        return None

    def current(self, pid: int) -> bytes | None:
        try:
            address = self._address(pid)
            if address is None:
                return None
            with open(f"/proc/{pid}/mem", "rb") as mem:
                mem.seek(address)
                return mem.read(self.size)
        except OSError:
            return None

    def armed(self, pid: int) -> bool:
        now = self.current(pid)
        return now is not None and any(a != b and a == 0xCC for a, b in zip(now, self.original))

    def restored(self, pid: int) -> bool | None:
        now = self.current(pid)
        return None if now is None else now == self.original


def wait_armed(watch: CodeWatch, pid: int, proc: subprocess.Popen | None, t0: float,
               limit: float = 60) -> float | None:
    """Seconds from t0 until the probe shows in pid's code; None if the
    tracer (proc; None: no process, raw ftrace) ended first or it took
    longer than limit."""
    while not watch.armed(pid):
        ended = proc is not None and proc.poll() is not None
        if ended or time.perf_counter() - t0 > limit:
            return None
        time.sleep(0.002)
    return time.perf_counter() - t0


def leftover_uprobes() -> list[str]:
    text = read_text(os.path.join(TRACEFS, "uprobe_events"))
    return [line for line in text.splitlines() if GROUP in line or "gsbench" in line]


def perf_probe_cleanup() -> None:
    if have("perf"):
        subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True, env=ENV)


def check_clean(watch: CodeWatch, pid: int, who: str, deadline: float = 3.0) -> bool:
    """After a tracer ended: the (still running) target's code is the
    file's again and no gsbench uprobe is left in tracefs."""
    end = time.monotonic() + deadline
    restored = watch.restored(pid)
    while restored is False and time.monotonic() < end:
        time.sleep(0.05)
        restored = watch.restored(pid)
    left = leftover_uprobes()
    if left:
        note(f"{who}: uprobes left in tracefs: {left}")
    if restored is False:
        note(f"{who}: {os.path.basename(watch.path)} code still patched in pid {pid} after the tracer ended")
    return restored is not False and not left
