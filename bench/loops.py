"""One timed loop of a workload (target.c's loop/flood, dict_loop.py),
untraced or under one tracer.

The protocol: the workload prints "ready PID" and waits; the tracer is
started on PID and the bench waits until the probe shows in the workload's
code (0xCC), which is the tracer's attach time; then "go", the workload
loops and prints "elapsed_ns N NS" and waits again; the tracer is stopped
(SIGINT) while the workload still runs, so the bench can check its code is
restored and no uprobe is left; then the workload is told to exit.

Tracers write to files, never to a pipe this script reads while the
workload is timed (2 CPUs: our reading would be the target's cost).
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time

from bench.common import CodeWatch, Context, check_clean, note, stop, wait_armed
from bench.tracers import Handle, Site, Tracer


@dataclasses.dataclass
class Loop:
    ns: int | None = None               # the workload's own timing of its loop
    attach: float | None = None         # tracer start -> probe in the workload's code
    clean: bool = True
    go: float = 0.0                     # perf_counter at "go"
    last_output: float | None = None    # perf_counter when the tracer's output last grew
    handle: Handle | None = None
    error: str | None = None


class Workload:
    def __init__(self, ctx: Context, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=ctx.workdir, preexec_fn=ctx.pin("target"))
        line = self.proc.stdout.readline()
        m = re.match(r"ready (\d+)", line)
        if not m:
            stop(self.proc)
            raise RuntimeError(f"{argv[0]} said {line!r}")
        self.pid = int(m.group(1))

    def say(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def run_loop(self) -> int | None:
        self.say("go")
        m = re.match(r"elapsed_ns (\d+) (\d+)", self.proc.stdout.readline())
        return int(m.group(2)) if m else None

    def end(self) -> None:
        if self.proc.poll() is None:
            try:
                self.say("exit")
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        stop(self.proc)


def untraced(ctx: Context, argv: list[str]) -> int | None:
    work = Workload(ctx, argv)
    try:
        return work.run_loop()
    finally:
        work.end()


def traced(ctx: Context, argv: list[str], watch: CodeWatch, tracer: Tracer, site: Site,
           kind: str, tag: str, output_file: str | None = None) -> Loop:
    """One loop under tracer.  Unless kind is hit (nothing printed), wait
    for the tracer's output (output_file, default its stdout) to stop
    growing, and note when it last grew: the last event's delivery."""
    result = Loop()
    work = Workload(ctx, argv)
    handle = None
    try:
        t0 = time.perf_counter()
        try:
            handle = tracer.start(ctx, site, work.pid, kind, tag)
        except (OSError, RuntimeError) as exc:
            result.error = f"{tracer.name}: {exc}"
            return result
        result.handle = handle
        result.attach = wait_armed(watch, work.pid, handle.proc, t0)
        if result.attach is None:
            tail = (open(handle.err_path, errors="replace").read()[-300:]).strip()
            result.error = f"{tracer.name}: never armed (rc={handle.proc and handle.proc.poll()}; {tail})"
            return result
        time.sleep(0.2)                 # let the tracer finish starting (its reader loop)
        result.go = time.perf_counter()
        result.ns = work.run_loop()
        if kind != "hit" and handle.proc is not None:
            result.last_output = settle(output_file or handle.out_path, handle.proc)
    finally:
        if handle is not None:
            handle.end()
            result.clean = check_clean(watch, work.pid, tracer.name)
        work.end()
    return result


def settle(path: str, proc: subprocess.Popen, quiet: float = 0.5, limit: float = 60) -> float:
    """Wait until path stops growing (or proc ends); when it last grew."""
    end = time.monotonic() + limit
    last_size, last_growth = -1, time.perf_counter()
    while time.monotonic() < end and proc.poll() is None:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if size != last_size:
            last_size, last_growth = size, time.perf_counter()
        elif time.perf_counter() - last_growth >= quiet:
            break
        time.sleep(0.01)
    if time.monotonic() >= end:
        note(f"{path}: still growing after {limit} s")
    return last_growth
