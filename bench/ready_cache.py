#!/usr/bin/env python3
"""What the compiled-program cache saves (issue #10): script -> probes
attached, with and without it.

Not a test: it measures and prints a table. For a small binary
(tests/fixtures/live_basic.c, `add`) and for python3.11 (PyDict_SetItem in
libpython), a running target is traced with `gs-cgen trace -p PID` and the
time from launch to "tracing N probe(s)" on stderr is taken, with the
tracer's CPU time (user + sys, up to its exit right after: steadier than
wall time on a shared machine). Medians of --runs runs, in four modes:

  hit         the program cache holds this program (and the DWARF caches are warm)
  compile     the same, GS_CGEN_PROGRAM_CACHE=off: compiled by BCC as before the cache
  cold hit    as hit, with the target module, libbcc and every gs-cgen cache
              file evicted from the page cache first (posix_fadvise; pages a
              process maps stay)
  first ever  an empty cache directory: nothing derived before

    python3 bench/ready_cache.py [--runs 5] [--only small,python] [--json]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GS = [os.path.join(REPO, ".venv", "bin", "python"), "-m", "gs_cgen.cli"]
LIBBCC = "/usr/lib/x86_64-linux-gnu/libbcc.so.0"
PY_LOOP = ("import time\n"
           "while True:\n"
           "    d = {'a': [1, 2]}; d['b'] = str(len(d)); time.sleep(0.001)\n")
MODES = ("hit", "compile", "cold hit", "first ever")


def _evict(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _ready(pid: int, script: str, env: dict) -> tuple[float, float]:
    """(launch -> 'tracing' seconds, CPU seconds) of one trace run."""
    started = time.monotonic()
    proc = subprocess.Popen([*GS, "trace", "-p", str(pid), "-s", script, "--output", "plain"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said = b""
    while b"tracing " not in said:
        ready, _, _ = select.select([proc.stderr], [], [], 120)
        line = proc.stderr.readline() if ready else b""
        if not line:
            proc.kill()
            raise RuntimeError(f"no 'tracing' line: {said.decode()[-2000:]}")
        said += line
    attached = time.monotonic() - started
    proc.send_signal(signal.SIGINT)
    proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"trace exited {status}")
    return attached, usage.ru_utime + usage.ru_stime


def measure(target_argv: list[str], module: str, script: str, runs: int) -> dict:
    target = subprocess.Popen(target_argv, stdout=subprocess.DEVNULL)
    cache = tempfile.mkdtemp(prefix="gsbench-progcache-")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    env.pop("GS_CGEN_PROGRAM_CACHE", None)
    env.pop("GS_CGEN_NO_CACHE", None)
    try:
        time.sleep(0.5)
        row = {}
        _ready(target.pid, script, env)                 # fill every cache once
        for mode in MODES:
            samples = []
            for _ in range(runs):
                run_env = env
                if mode == "compile":
                    run_env = dict(env, GS_CGEN_PROGRAM_CACHE="off")
                elif mode == "cold hit":
                    for path in [module, LIBBCC, *glob.glob(f"{cache}/**/*", recursive=True)]:
                        _evict(path)
                elif mode == "first ever":
                    run_env = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="gsbench-empty-"))
                samples.append(_ready(target.pid, script, run_env))
            row[mode] = {"ready_s": statistics.median(s[0] for s in samples),
                         "cpu_s": statistics.median(s[1] for s in samples)}
        return row
    finally:
        target.kill()
        target.wait()


def _small() -> tuple[list[str], str, str]:
    binary = os.path.join(REPO, "build", "ready_cache_basic")
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    subprocess.run(["gcc", "-g", "-O0", "-fPIE", "-pie", "-o", binary,
                    os.path.join(REPO, "tests", "fixtures", "live_basic.c")], check=True)
    return [binary], binary, "trace add { if a == 0 { print a; } }"


def _python() -> tuple[list[str], str, str]:
    interpreter = subprocess.check_output(
        ["python3.11", "-c", "import sys; print(sys.executable)"], text=True).strip()
    libdir = subprocess.check_output(
        [interpreter, "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
        text=True).strip()
    library = os.path.join(libdir, "libpython3.11.so.1.0")
    return [interpreter, "-c", PY_LOOP], library, \
        "trace PyDict_SetItem { if key == 0 { print key; } }"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="small,python")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("ready_cache: needs root (BPF load and uprobes)", file=sys.stderr)
        return 2
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
          f"median of {args.runs} runs", file=sys.stderr)
    rows = {name: measure(*{"small": _small, "python": _python}[name](), args.runs)
            for name in args.only.split(",")}
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'target':>8}  " + "  ".join(f"{mode:>16}" for mode in MODES))
    for name, row in rows.items():
        print(f"{name:>8}  " + "  ".join(
            f"{row[m]['ready_s']:7.2f}s ({row[m]['cpu_s']:.2f}s)" for m in MODES))
    print("each: ready (CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
