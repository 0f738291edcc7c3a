#!/usr/bin/env python3
"""Benchmark gs-cgen against perf probe, bpftrace and gdb on this machine.

Not a test: it measures and prints tables, and never fails because a number
is bad.  Three sections:

  1. resolve   how long it takes to find a function's probe site and where its
               variables live (small -O0 target, and -O3 libpython3.11)
  2. first     from launching the tracer to the first printed event, on a
               target that calls add() about every 1 ms
  3. per-hit   time added per probe hit, on a target calling add() N times
               in a tight loop and timing itself

Every peer is optional (skipped with a note when missing).  Probes are removed
after each run and checked: the traced function's code bytes must be the
original ones again (a uprobe or gdb breakpoint shows as 0xCC in
/proc/PID/mem) and no `gsbench` uprobe may be left in tracefs.

    python3 bench/compare.py [--quick] [--only resolve,first,hit] [--drop-caches]
                             [--rev HEAD] [--no-pin] [--n 200000]

Per-hit runs pin the target to the last CPU and the tracers to the others,
and tracers write to files, so this script's own reading costs the target
nothing.  Numbers on a shared machine are noisy: the load average is printed.

Needs root for sections 2 and 3.  Uses only the standard library; gs-cgen is
run from the repository's .venv.  No network: DEBUGINFOD_URLS is cleared and
gdb's debuginfod is switched off.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GS = os.path.join(REPO, ".venv", "bin", "gs-cgen")
GS_PY = os.path.join(REPO, ".venv", "bin", "python")
TRACEFS = "/sys/kernel/tracing"
PERF_GROUP = "gsbench"
GDB = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
ENV = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
ENV["PYTHONUNBUFFERED"] = "1"
WORKDIR = tempfile.gettempdir()     # cwd of every child; set to our temp dir in main()
PIN: dict[str, set[int]] = {}       # "target"/"tracer" -> CPUs (per-hit section only)


def pinned(role: str):
    cpus = PIN.get(role)
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None

EVENT_RE = {
    "gs-cgen": re.compile(r"^add a=-?\d+ b=-?\d+$"),
    "bpftrace": re.compile(r"^add a=-?\d+ b=-?\d+$"),
    "gdb dprintf": re.compile(r"^add a=-?\d+ b=-?\d+$"),
    "perf trace": re.compile(r"gsbench:add\(.*a: -?\d+, b: -?\d+"),
}
EVENT_RE["gs-cgen --event-map perf"] = EVENT_RE["gs-cgen"]
EVENT_RE["bpftrace, empty probe"] = re.compile(r"^add a=")   # prints nothing: the uprobe floor

NOTES: list[str] = []
START = time.monotonic()


def note(text: str) -> None:
    NOTES.append(text)
    print(f"  note: {text}", file=sys.stderr, flush=True)


def progress(text: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# small helpers


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def timed(cmd: list[str], timeout: float = 60.0) -> tuple[float, int, str]:
    """Run cmd; return (seconds, exit status, stdout+stderr)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True, timeout=timeout, env=ENV,
                              cwd=WORKDIR)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return time.perf_counter() - start, -999, out
    return time.perf_counter() - start, proc.returncode, proc.stdout


def stop(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, wait: float = 5.0) -> None:
    """End a process this script started: sig first, SIGKILL if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    except ProcessLookupError:
        pass


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_ratio(value: float | None, ref: float | None) -> str:
    if value is None or ref is None or ref <= 0:
        return "-"
    return f"{value / ref:.2f}x"


def table(title: str, header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths)), line]
    for row in rows:
        last = len(row) - 1
        out.append("  ".join(str(c).ljust(w) if i in (0, last) else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(out)


def drop_caches() -> None:
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm_file(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


# --------------------------------------------------------------------------
# ELF bits: where add() is in the file, so we can see probes in /proc/PID/mem


def load_segments(path: str) -> list[tuple[int, int, int]]:
    """PT_LOAD segments as (vaddr, file offset, file size); ELF64 LE only."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
            raise RuntimeError(f"{path}: not a little-endian ELF64 file")
        phoff, = struct.unpack_from("<Q", ident, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", ident, 0x36)
        f.seek(phoff)
        table_bytes = f.read(phentsize * phnum)
    segments = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", table_bytes, i * phentsize)
        if p_type == 1:
            segments.append((p_vaddr, p_offset, p_filesz))
    return segments


def function_span(path: str, name: str) -> tuple[int, int]:
    """(file offset, size) of a defined function symbol, via nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name and parts[2] in "tT":
            vaddr, size = int(parts[0], 16), int(parts[1], 16)
            for seg_vaddr, seg_off, seg_size in load_segments(path):
                if seg_vaddr <= vaddr < seg_vaddr + seg_size:
                    return vaddr - seg_vaddr + seg_off, size
    raise RuntimeError(f"{name} not found in {path}")


class CodeWatch:
    """Compares a function's bytes in a live process with the file's."""

    def __init__(self, path: str, func: str) -> None:
        self.path = os.path.realpath(path)
        self.offset, self.size = function_span(self.path, func)
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


def leftover_uprobes() -> list[str]:
    try:
        with open(os.path.join(TRACEFS, "uprobe_events")) as f:
            return [line.strip() for line in f if PERF_GROUP in line or "gsbench_target" in line]
    except OSError:
        return []


def perf_cleanup() -> None:
    if have("perf"):
        subprocess.run(["perf", "probe", "-q", "-d", f"{PERF_GROUP}:*"], capture_output=True, env=ENV)


# --------------------------------------------------------------------------
# target and libpython


def build_target(workdir: str) -> str:
    out = os.path.join(workdir, "gsbench_target")
    subprocess.run(["gcc", "-O0", "-g", "-o", out, os.path.join(HERE, "target.c")], check=True)
    return out


def find_libpython() -> str | None:
    dirs = []
    if have("python3.11"):
        res = subprocess.run(["python3.11", "-c", "import sysconfig;print(sysconfig.get_config_var('LIBDIR'))"],
                             capture_output=True, text=True)
        dirs.append(res.stdout.strip())
    dirs.append("/usr/lib/x86_64-linux-gnu")
    for d in dirs:
        path = os.path.join(d, "libpython3.11.so.1.0")
        if d and os.path.exists(path):
            with open(path, "rb"):
                pass
            sections = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
            if ".debug_info" in sections:
                return os.path.realpath(path)
    return None


# --------------------------------------------------------------------------
# 1. resolve

API_SNIPPET = r"""
import sys, time
t0 = time.perf_counter()
from gs_cgen.dwarf import open_module
t1 = time.perf_counter()
m = open_module(sys.argv[1])
sites = m.find_functions(sys.argv[2])
names = [v.name for s in sites for v in m.variables_at(s.probe_address, s.frame_die)]
t2 = time.perf_counter()
print("API", f"{t1 - t0:.6f}", f"{t2 - t1:.6f}", " ".join(names))
"""


def resolve_tools(binary: str, func: str) -> list[tuple[str, list[str]]]:
    tools = []
    if os.path.exists(GS):
        tools.append(("gs-cgen info -t", [GS, "info", "-t", binary, "function", func]))
        tools.append(("gs-cgen API (in-proc)", [GS_PY, "-c", API_SNIPPET, binary, func]))
    if have("perf"):
        tools.append(("perf probe -V", ["perf", "probe", "-x", binary, "-V", func]))
        tools.append(("perf probe -L", ["perf", "probe", "-x", binary, "-L", func]))
    if have("gdb"):
        tools.append(("gdb info scope", GDB + ["-ex", f"info scope {func}", binary]))
    return tools


def resolve_once(label: str, cmd: list[str], expect: list[str]) -> tuple[float | None, str]:
    seconds, rc, out = timed(cmd, timeout=60)
    if label.startswith("gs-cgen API"):
        m = re.search(r"^API (\S+) (\S+) ?(.*)$", out, re.M)
        if rc != 0 or not m:
            return None, f"failed rc={rc}: {out.strip().splitlines()[-1:]}"
        names = m.group(3).split()
        status = "ok" if all(e in names for e in expect) else f"missing {expect}"
        return float(m.group(2)), status
    if rc != 0:
        last = out.strip().splitlines()[-1].strip() if out.strip() else ""
        return seconds, f"rc={rc} ({last[:40]})"
    if label.startswith("perf probe -L"):
        return seconds, "ok"        # source listing: no variables to check
    words = set(re.findall(r"[A-Za-z_]\w*", out))
    missing = [e for e in expect if e not in words]
    return seconds, "ok" if not missing else f"missing {','.join(missing)}"


def bench_resolve(targets: list[tuple[str, str, str, list[str]]], warm_runs: int,
                  cold_drop: bool) -> str:
    sections = []
    for title, binary, func, expect in targets:
        progress(f"resolve: {title}")
        warm_file(binary)
        rows, ref = [], None
        results = []
        for label, cmd in resolve_tools(binary, func):
            if cold_drop:
                drop_caches()
            cold, status = resolve_once(label, cmd, expect)
            warm = []
            for _ in range(warm_runs):
                sec, st = resolve_once(label, cmd, expect)
                if sec is not None:
                    warm.append(sec)
                if st != "ok":
                    status = st
            med = statistics.median(warm) if warm else None
            results.append((label, cold, med, status))
            if label == "gs-cgen info -t":
                ref = med
        for label, cold, med, status in results:
            rows.append([label, fmt_s(cold), fmt_s(med), fmt_ratio(med, ref), status])
        cold_name = "cold (caches dropped)" if cold_drop else "first run"
        sections.append(table(f"{title}: {binary} :: {func}",
                              ["tool", cold_name, f"warm (median of {warm_runs})",
                               "time / gs-cgen info's", "output"], rows))
    return "\n\n".join(sections)


# --------------------------------------------------------------------------
# tracer commands shared by sections 2 and 3


GS_SCRIPT = 'trace add { print "add a={} b={}", a, b; }'


def tracer_cmds(binary: str, pid: int, first_only: bool,
                variants: bool = False) -> list[tuple[str, list[str], bool]]:
    """(name, argv, stderr merged into stdout).  perf runs through a shell
    because the probe has to be defined first.  variants: also gs-cgen with
    perf buffers, and bpftrace with an empty probe body (the uprobe floor)."""
    cmds = []
    if os.path.exists(GS):
        cmd = [GS, "trace", "-p", str(pid), "-s", GS_SCRIPT, "--output", "plain"]
        if first_only:
            cmd += ["--max-events", "1"]
        cmds.append(("gs-cgen", cmd, False))
        if variants:
            cmds.append(("gs-cgen --event-map perf", cmd + ["--event-map", "perf"], False))
    if have("bpftrace"):
        body = 'printf("add a=%d b=%d\\n", arg0, arg1);' + (" exit();" if first_only else "")
        cmds.append(("bpftrace", ["bpftrace", "-B", "line", "-p", str(pid), "-e",
                                  f"uprobe:{binary}:add {{ {body} }}"], False))
        if variants:
            cmds.append(("bpftrace, empty probe", ["bpftrace", "-p", str(pid), "-e",
                                                   f"uprobe:{binary}:add {{ }}"], False))
    if have("perf"):
        script = (f"perf probe -q -x {binary} -a '{PERF_GROUP}:add=add a b' && "
                  f"exec perf trace --no-syscalls -e {PERF_GROUP}:add -p {pid}")
        cmds.append(("perf trace", ["sh", "-c", script], True))
    if have("gdb"):
        cmds.append(("gdb dprintf", GDB + ["-p", str(pid), "-ex", 'dprintf add,"add a=%d b=%d\\n",a,b',
                                           "-ex", "continue"], False))
    return cmds


class LineReader(threading.Thread):
    """Reads a tracer's stdout: time of the first event line, count of events."""

    def __init__(self, stream, pattern: re.Pattern, t0: float, keep: int = 20) -> None:
        super().__init__(daemon=True)
        self.stream, self.pattern, self.t0 = stream, pattern, t0
        self.first: float | None = None
        self.events = 0
        self.other: list[str] = []
        self.keep = keep
        self.got_first = threading.Event()

    def run(self) -> None:
        for line in self.stream:
            line = line.rstrip("\n")
            if self.pattern.search(line):
                if self.first is None:
                    self.first = time.perf_counter() - self.t0
                    self.got_first.set()
                self.events += 1
            elif len(self.other) < self.keep:
                self.other.append(line)


class StderrReader(threading.Thread):
    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream, self.lines = stream, []

    def run(self) -> None:
        for line in self.stream:
            if len(self.lines) < 200:
                self.lines.append(line.rstrip("\n"))


def launch(name: str, cmd: list[str], merged: bool, t0: float):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=ENV, start_new_session=True,
                            cwd=WORKDIR)
    reader = LineReader(proc.stdout, EVENT_RE[name], t0)
    reader.start()
    err = None
    if not merged:
        err = StderrReader(proc.stderr)
        err.start()
    return proc, reader, err


def end_tracer(name: str, proc: subprocess.Popen) -> int | None:
    """Stop a tracer the way a user would: SIGINT.  (gdb 13 dies of an
    internal error on SIGTERM while the inferior runs, leaving int3 behind;
    on SIGINT it stops the inferior, ends the batch script and detaches.)"""
    stop(proc, signal.SIGINT, wait=8)
    if name == "perf trace":
        perf_cleanup()
    return proc.returncode


def check_clean(watch: CodeWatch, pid: int, name: str, deadline: float = 3.0) -> str:
    """Code bytes restored in the (still running) target, no leftover uprobes."""
    end = time.monotonic() + deadline
    restored = watch.restored(pid)
    while restored is False and time.monotonic() < end:
        time.sleep(0.05)
        restored = watch.restored(pid)
    left = leftover_uprobes()
    if left:
        note(f"{name}: uprobes left in tracefs: {left}")
    if restored is None:
        return "target gone"
    if not restored:
        note(f"{name}: add() still patched in pid {pid} after the tracer ended")
    return "yes" if restored and not left else "NO"


def tracer_failed(name: str, proc, reader, err) -> str:
    lines = (err.lines if err else []) + reader.other
    interesting = [line for line in lines if line.strip()][-4:]
    return f"{name}: rc={proc.returncode}; " + " | ".join(interesting)


# --------------------------------------------------------------------------
# 2. time to first event


def bench_first(binary: str, watch: CodeWatch, trials: int, budget_end: float) -> str:
    results: dict[str, dict] = {}
    for trial in range(trials):
        tick = subprocess.Popen([binary, "tick", "60"], stdout=subprocess.DEVNULL, cwd=WORKDIR)
        try:
            time.sleep(0.1)
            for name, cmd, merged in tracer_cmds(binary, tick.pid, first_only=True):
                if time.monotonic() > budget_end:
                    note(f"first-event: time budget used up, skipped {name} trial {trial + 1}")
                    continue
                progress(f"first event: {name} (trial {trial + 1}/{trials})")
                res = results.setdefault(name, {"armed": [], "first": [], "clean": [], "fail": None})
                t0 = time.perf_counter()
                proc, reader, err = launch(name, cmd, merged, t0)
                armed_at = None
                limit = t0 + 30
                while time.perf_counter() < limit and not reader.got_first.is_set():
                    if armed_at is None and watch.armed(tick.pid):
                        armed_at = time.perf_counter() - t0
                    if proc.poll() is not None and not reader.got_first.is_set():
                        reader.join(1)
                        break
                    time.sleep(0.002)
                reader.got_first.wait(0.5)
                if armed_at is None and reader.first is not None:
                    armed_at = reader.first   # ended (and detached) before we looked
                if name in ("gs-cgen", "bpftrace"):
                    try:
                        proc.wait(5)          # both stop by themselves after one event
                    except subprocess.TimeoutExpired:
                        note(f"{name} did not exit by itself after its first event")
                rc = end_tracer(name, proc)
                reader.join(2)
                if reader.first is None:
                    res["fail"] = tracer_failed(name, proc, reader, err)
                    note(f"first-event: no event from {res['fail']}")
                else:
                    res["armed"].append(armed_at)
                    res["first"].append(reader.first)
                res["clean"].append(check_clean(watch, tick.pid, name))
                if name == "gs-cgen" and rc not in (0, None):
                    note(f"gs-cgen exited {rc} after --max-events 1")
        finally:
            stop(tick)
    rows = []
    ref = statistics.median(results["gs-cgen"]["first"]) if results.get("gs-cgen", {}).get("first") else None
    for name, res in results.items():
        first = statistics.median(res["first"]) if res["first"] else None
        armed = [a for a in res["armed"] if a is not None]
        clean = "yes" if res["clean"] and all(c == "yes" for c in res["clean"]) else ",".join(res["clean"])
        rows.append([name, fmt_s(statistics.median(armed)) if armed else "-", fmt_s(first),
                     fmt_ratio(first, ref), clean if res["first"] else "failed"])
    return table(f"time to first event (median of {trials}; target calls add() every ~1 ms)",
                 ["tracer", "probe armed", "first event", "time / gs-cgen's", "cleaned up"], rows)


def bench_gs_phases(binary: str) -> str:
    """Where gs-cgen's start-up time goes: plan only, plan+compile+verify."""
    if not os.path.exists(GS):
        return ""
    progress("first event: gs-cgen phases (--emit-c, --dry-run)")
    rows = []
    for label, extra in (("--emit-c (parse+DWARF+C, no BCC)", ["--emit-c"]),
                         ("--dry-run (+ BCC compile + verifier)", ["--dry-run"])):
        sec, rc, out = timed([GS, "trace", "-t", binary, "-s", GS_SCRIPT] + extra, timeout=60)
        rows.append([f"gs-cgen {label}", fmt_s(sec), "ok" if rc == 0 else f"rc={rc}"])
        if rc != 0:
            note(f"gs-cgen {extra[0]} failed: {out.strip()[-200:]}")
    sec, rc, _ = timed([GS, "--help"])
    rows.append(["gs-cgen --help (interpreter + click)", fmt_s(sec), "ok" if rc == 0 else f"rc={rc}"])
    return table("gs-cgen start-up phases (one run each)", ["command", "time", "status"], rows)


# --------------------------------------------------------------------------
# 3. per-hit overhead


def run_loop(binary: str, n: int) -> int | None:
    """Untraced: start `target loop n`, let it loop, return its elapsed ns."""
    target = subprocess.Popen([binary, "loop", str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=WORKDIR,
                              preexec_fn=pinned("target"))
    try:
        if not target.stdout.readline().startswith("ready"):
            return None
        target.stdin.write("go\n")
        target.stdin.flush()
        m = re.match(r"elapsed_ns (\d+) (\d+)", target.stdout.readline())
        return int(m.group(2)) if m else None
    finally:
        stop(target)


def bench_hit(binary: str, watch: CodeWatch, n: int, n_gdb: int, runs: int,
              budget_end: float) -> str:
    progress(f"per-hit: untraced baseline ({runs} runs of {n})")
    base = [run_loop(binary, n) for _ in range(max(runs, 3))]
    base_ns = statistics.median([b for b in base if b is not None]) / n
    rows = [["untraced", f"{n}", f"{base_ns:.1f}", "-", "-", "-", "-", "-"]]
    added: dict[str, float] = {}
    details = {}
    for name, cmd, merged in tracer_cmds(binary, 0, first_only=False, variants=True):
        count = n_gdb if name == "gdb dprintf" else n
        samples, delivered, attach = [], [], []
        for r in range(runs if name != "gdb dprintf" else 1):
            if time.monotonic() > budget_end:
                note(f"per-hit: time budget used up, skipped {name} run {r + 1}")
                continue
            progress(f"per-hit: {name} ({count} calls, run {r + 1})")
            # the pid is only known once the target runs: build the command late
            def make(pid, name=name):
                return next(c for c in tracer_cmds(binary, pid, False, True) if c[0] == name)
            res = run_loop_with(binary, count, watch, make)
            if res.get("ns") is None:
                note(f"per-hit: {name} failed: {res.get('error')}")
                continue
            samples.append(res["ns"] / count)
            delivered.append(res.get("events", 0))
            attach.append(res.get("attach"))
            if res.get("lost") is not None:
                details.setdefault(name, []).append((res["events"], res["lost"], count))
            if name == "perf trace":
                perf_cleanup()
            if leftover_uprobes():
                note(f"per-hit: {name} left uprobes behind: {leftover_uprobes()}")
        if not samples:
            rows.append([name, f"{count}", "failed", "-", "-", "-", "-", "-"])
            continue
        per_hit = statistics.median(samples)
        added[name] = per_hit - base_ns
        spread = (f"{min(samples) - base_ns:.0f}-{max(samples) - base_ns:.0f}"
                  if len(samples) > 1 else "-")
        rows.append([name, f"{count}", f"{per_hit:.0f}", f"{added[name]:.0f}", spread, "",
                     "-" if "empty" in name else f"{statistics.median(delivered):.0f}/{count}",
                     fmt_s(statistics.median([a for a in attach if a is not None]))])
    ref = added.get("gs-cgen")
    for row in rows[1:]:
        if row[0] in added:
            row[5] = fmt_ratio(added[row[0]], ref)
    for name, runs_seen in details.items():
        text = "; ".join(f"printed {e} + reported lost {lost} = {e + lost} of {c} calls"
                         for e, lost, c in runs_seen)
        note(f"per-hit: {name}: {text}")
        if any(e + lost > c for e, lost, c in runs_seen):
            note(f"per-hit: {name} reports more lost events than were dropped "
                 f"(printed + lost > calls)")
    pin = (f"target on CPU {sorted(PIN['target'])}, tracer on CPU {sorted(PIN['tracer'])}"
           if PIN else "unpinned")
    return table(f"per-hit overhead (tight loop; median of {runs} run(s), gdb 1 run; {pin})",
                 ["tracer", "calls", "ns/call", "ns/hit added", "min-max", "added / gs-cgen's",
                  "events printed", "attach"], rows)


def run_loop_with(binary: str, n: int, watch: CodeWatch, make) -> dict:
    """run_loop, but the tracer command is built from the target's pid."""
    target = subprocess.Popen([binary, "loop", str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=WORKDIR,
                              preexec_fn=pinned("target"))
    try:
        ready = target.stdout.readline()
        m = re.match(r"ready (\d+)", ready)
        if not m:
            return {"ns": None, "error": f"target said {ready!r}"}
        name, cmd, merged = make(int(m.group(1)))
        return _traced_loop(target, name, cmd, merged, watch)
    finally:
        stop(target)


def _traced_loop(target, name, cmd, merged, watch: CodeWatch) -> dict:
    """The tracer writes to files, not pipes: this script must not spend CPU
    reading 200k lines while the target is being timed (2 CPUs here)."""
    out: dict = {"ns": None}
    out_path = os.path.join(WORKDIR, "tracer.out")
    err_path = os.path.join(WORKDIR, "tracer.err")
    with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=subprocess.STDOUT if merged else err_f,
                                stdin=subprocess.DEVNULL, env=ENV, start_new_session=True, cwd=WORKDIR,
                                preexec_fn=pinned("tracer"))
    try:
        limit = t0 + 30
        while not watch.armed(target.pid):
            if proc.poll() is not None or time.perf_counter() > limit:
                stop(proc, signal.SIGINT)
                tail = (_read(err_path) + _read(out_path)).strip().splitlines()[-3:]
                out["error"] = f"{name}: rc={proc.returncode}; {' | '.join(tail)} (never armed)"
                return out
            time.sleep(0.005)
        out["attach"] = time.perf_counter() - t0
        time.sleep(0.2)                      # let the tracer finish starting up
        target.stdin.write("go\n")
        target.stdin.flush()
        line = target.stdout.readline()
        m = re.match(r"elapsed_ns (\d+) (\d+)", line)
        if not m:
            out["error"] = f"target said {line!r}"
            return out
        out["ns"] = int(m.group(2))
        target.wait(10)
        try:
            proc.wait(3)                     # gs-cgen and gdb end when the target does
        except subprocess.TimeoutExpired:
            pass
        out["rc"] = end_tracer(name, proc)
        pattern = EVENT_RE[name]
        text = _read(out_path)
        out["events"] = sum(1 for line in text.splitlines() if pattern.search(line))
        lost = re.findall(r"\blost (\d+) events", _read(err_path) + text, re.I)
        out["lost"] = sum(int(x) for x in lost) if lost else None
        return out
    finally:
        end_tracer(name, proc)


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# --------------------------------------------------------------------------


def gs_cgen_source(rev: str | None, workdir: str) -> str:
    """Which gs-cgen is measured; with rev, export it and put it first on PYTHONPATH."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", REPO, *argv], capture_output=True, text=True).stdout.strip()
    if rev is None:
        dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
        return f"working tree at {git('rev-parse', '--short', 'HEAD')}{dirty}"
    src = os.path.join(workdir, "gs-cgen-src")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    ENV["PYTHONPATH"] = src
    return f"commit {git('rev-parse', '--short', rev)} (git archive, --rev {rev})"


def peer_versions() -> str:
    found = []
    for tool, argv in (("perf", ["perf", "--version"]), ("bpftrace", ["bpftrace", "--version"]),
                       ("gdb", ["gdb", "--version"])):
        if have(tool):
            first = subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()[:1]
            found.append(first[0].strip() if first else tool)
    return ", ".join(found) or "none"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs, smaller loops (~1 min)")
    ap.add_argument("--only", default="resolve,first,hit",
                    help="comma-separated sections: resolve, first, hit")
    ap.add_argument("--drop-caches", action="store_true",
                    help="drop the page cache before each cold resolve run (machine-wide)")
    ap.add_argument("--n", type=int, default=None, help="tight-loop calls (default 200000)")
    ap.add_argument("--rev", default=None,
                    help="benchmark gs-cgen as committed at this git revision (git archive into a "
                         "temp dir, run with the .venv's Python) instead of the working tree")
    ap.add_argument("--no-pin", action="store_true",
                    help="per-hit: do not pin the target to the last CPU and tracers to the others")
    args = ap.parse_args()
    sections = set(args.only.split(","))
    warm_runs, trials, runs = (2, 1, 1) if args.quick else (5, 3, 3)
    n = args.n or (50_000 if args.quick else 200_000)
    n_gdb = 500 if args.quick else 2_000
    budget_end = START + (100 if args.quick else 170)

    root = os.geteuid() == 0
    cpus = sorted(os.sched_getaffinity(0))
    if not args.no_pin and len(cpus) >= 2:
        PIN["target"], PIN["tracer"] = {cpus[-1]}, set(cpus[:-1])
    for tool in ("perf", "bpftrace", "gdb"):
        if not have(tool):
            note(f"{tool} not installed: skipped")
    if not os.path.exists(GS):
        note(f"{GS} missing (run scripts/setup.sh): gs-cgen skipped")
    if not have("gcc"):
        print("gcc is needed to build bench/target.c", file=sys.stderr)
        return 1

    out = []
    global WORKDIR
    workdir = WORKDIR = tempfile.mkdtemp(prefix="gsbench-")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # no core files from crashing peers
    try:
        gs_source = gs_cgen_source(args.rev, workdir)
        binary = build_target(workdir)
        watch = CodeWatch(binary, "add")
        perf_cleanup()
        if "resolve" in sections:
            targets = [("small -O0 target", binary, "add", ["a", "b", "total"])]
            libpython = find_libpython()
            if libpython:
                targets.append(("libpython3.11 -O3", libpython, "PyObject_GetAttr", ["v", "name"]))
            else:
                note("no libpython3.11.so.1.0 with DWARF found: libpython resolve skipped")
            if args.drop_caches and not root:
                note("--drop-caches needs root: ignored")
            out.append(bench_resolve(targets, warm_runs, args.drop_caches and root))
        if sections & {"first", "hit"} and not root:
            note("sections 'first' and 'hit' attach probes and need root: skipped")
        elif sections & {"first", "hit"}:
            if "first" in sections:
                out.append(bench_first(binary, watch, trials, budget_end - (40 if "hit" in sections else 0)))
                phases = bench_gs_phases(binary)
                if phases:
                    out.append(phases)
            if "hit" in sections:
                out.append(bench_hit(binary, watch, n, n_gdb, runs, budget_end))
    finally:
        perf_cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(f"machine: {os.uname().release}, {os.cpu_count()} CPUs; "
          f"total {time.monotonic() - START:.0f} s{' (--quick)' if args.quick else ''}")
    print(f"gs-cgen: {gs_source}; peers: {peer_versions()}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"(other work on this machine skews every number)")
    print()
    print("\n\n".join(out))
    if NOTES:
        print("\nnotes:")
        for text in NOTES:
            print(f"  - {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
