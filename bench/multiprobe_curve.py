#!/usr/bin/env python3
"""How gs-cgen's start-up cost grows with the number of probes (issue #10).

Not a test: it measures and prints a table. For N in --counts (default
1, 10, 100) it builds the script `trace F { print P; }` for the first N
exported PyDict_/PyList_/PyUnicode_ functions of libpython3.11 that have
a parameter P (the first one, by DWARF), and measures, as medians of
--runs runs:

  dry-run    wall time of `gs-cgen trace -t LIB --dry-run` (resolve,
             compile, verifier-load, attach nothing), its CPU time (user +
             sys: steadier than wall time on a shared machine) and its peak
             RSS (the tracer process, clang inside BCC included)
  attach     a running python3.11: from launch to "tracing N probe(s)"
             on stderr (every uprobe attached), the peak RSS, and from
             SIGINT to exit (detach and teardown)

After every attach run it checks that no uprobe of gs-cgen's is left in
tracefs. Needs root for both sections; uses only the standard library.

    python3 bench/multiprobe_curve.py [--counts 1,10,100] [--runs 3]
                                      [--only dry-run,attach] [--json]

From another script: `from bench.multiprobe_curve import curve` and call
`curve(counts=(1, 10, 100), runs=3)`, which returns one dict per count.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GS_PY = os.path.join(REPO, ".venv", "bin", "python")
GS_CLI = os.path.join(REPO, "cli.py")
PREFIXES = ("PyDict_", "PyList_", "PyUnicode_")
TRACEFS_UPROBES = "/sys/kernel/tracing/uprobe_events"
# Keeps libpython's hot paths busy so the attached probes really fire.
TARGET_LOOP = ("import time\n"
               "while True:\n"
               "    d = {'a': [1, 2]}; d['b'] = str(len(d)); time.sleep(0.001)\n")
CACHE = os.path.join(REPO, "build", "multiprobe_functions.json")


def python311() -> str:
    """The interpreter itself: `python3.11` may be a pyenv shim (a shell
    script that is not yet python when the tracer looks)."""
    return subprocess.check_output(["python3.11", "-c", "import sys; print(sys.executable)"],
                                   text=True).strip()


def libpython() -> str:
    libdir = subprocess.check_output(
        ["python3.11", "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
        text=True).strip()
    return os.path.realpath(os.path.join(libdir, "libpython3.11.so"))


def pick_functions(lib: str, count: int) -> list[tuple[str, str]]:
    """(function, first parameter) for the first `count` exported functions
    named with PREFIXES (in that prefix order, names sorted) that have one;
    cached in build/, keyed by the library's path and mtime."""
    key = f"{lib}:{os.stat(lib).st_mtime_ns}"
    cached = _read_cache(key)
    if len(cached) < count:
        cached = _first_parameters(lib, count)
        os.makedirs(os.path.dirname(CACHE), exist_ok=True)
        with open(CACHE, "w") as out:
            json.dump({"key": key, "functions": cached}, out)
    return [tuple(pair) for pair in cached[:count]]


def _read_cache(key: str) -> list:
    try:
        with open(CACHE) as cache:
            data = json.load(cache)
    except (OSError, ValueError):
        return []
    return data["functions"] if data.get("key") == key else []


def _first_parameters(lib: str, count: int) -> list[list[str]]:
    """Asks gs-cgen's own DWARF reader (in a child, from the repo's venv)."""
    code = f"""
import json, sys
from gs_cgen.dwarf.model import VariableKind
from gs_cgen.dwarf.module import open_module
from gs_cgen.errors import GsError
module = open_module({lib!r})
names = sorted(n for n in module._dynamic_names
                if n.startswith({PREFIXES!r}) and module.exports_function(n))
names.sort(key=lambda n: [n.startswith(p) for p in {PREFIXES!r}].index(True))
found = []
for name in names:
    try:
        sites = module.find_functions(name)
    except GsError:
        continue
    if len(sites) != 1 or sites[0].no_variables:
        continue
    frame = module.frame_at(sites[0].probe_address, sites[0].frame_die)
    params = [v.name for v in frame.variables if v.kind is VariableKind.PARAMETER]
    if params:
        found.append([name, params[0]])
    if len(found) >= {count}:
        break
json.dump(found, sys.stdout)
"""
    out = subprocess.check_output([GS_PY, "-c", code], cwd=REPO, text=True)
    return json.loads(out)


def script_for(functions: list[tuple[str, str]]) -> str:
    return "\n".join(f"trace {name} {{ print {param}; }}" for name, param in functions)


def _run_measured(argv: list[str], **popen) -> tuple[subprocess.Popen, float]:
    return subprocess.Popen(argv, cwd=REPO, **popen), time.monotonic()


def _wait_rusage(proc: subprocess.Popen) -> tuple[int, float, float]:
    """(exit status, peak RSS in MB, CPU seconds) of a child we started."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def dry_run(lib: str, script: str) -> dict:
    proc, started = _run_measured([GS_PY, GS_CLI, "trace", "-t", lib, "-s", script, "--dry-run",
                                   "--output", "plain"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read()
    status, rss, cpu = _wait_rusage(proc)
    wall = time.monotonic() - started
    if status != 0:
        raise RuntimeError(f"dry run failed ({status}): {stderr.decode()[-2000:]}")
    return {"wall_s": wall, "rss_mb": rss, "cpu_s": cpu}


def attach(script: str, probes: int) -> dict:
    target = subprocess.Popen([python311(), "-c", TARGET_LOOP])
    try:
        time.sleep(0.3)                         # libpython mapped, loop running
        proc, started = _run_measured(
            [GS_PY, GS_CLI, "trace", "-p", str(target.pid), "-s", script, "--output", "plain"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ready = _wait_for_line(proc, b"tracing %d probe(s)" % probes, timeout=120)
        attached = time.monotonic() - started
        time.sleep(0.5)                         # some events flow
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        status, rss, _ = _wait_rusage(proc)
        teardown = time.monotonic() - asked
        leftover = _leftover_uprobes(proc.pid)
        if not ready or status != 0:
            raise RuntimeError(f"attach run failed (status {status}, ready {ready})")
        if leftover:
            raise RuntimeError(f"uprobes left behind: {leftover}")
        return {"attach_s": attached, "teardown_s": teardown, "rss_mb": rss}
    finally:
        target.kill()
        target.wait()


def _wait_for_line(proc: subprocess.Popen, needle: bytes, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    seen = b""
    fd = proc.stderr.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            if proc.poll() is not None:
                return False
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        seen += chunk
        if needle in seen:
            _drain_in_background(proc)
            return True
    return False


def _drain_in_background(proc: subprocess.Popen) -> None:
    """Keep reading stderr so the tracer never blocks on a full pipe."""
    import threading  # noqa: PLC0415
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()


def _leftover_uprobes(tracer_pid: int) -> list[str]:
    """tracefs uprobes named by that tracer (gs_<pid>_<probe>; other
    tracers on the machine have their own)."""
    try:
        with open(TRACEFS_UPROBES) as events:
            return [line.strip() for line in events if f"gs_{tracer_pid}_" in line]
    except OSError:
        return []


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def curve(counts=(1, 10, 100), runs: int = 3, sections=("dry-run", "attach")) -> list[dict]:
    lib = libpython()
    functions = pick_functions(lib, max(counts))
    rows = []
    for count in counts:
        script = script_for(functions[:count])
        row = {"probes": count}
        if "dry-run" in sections:
            measured = [dry_run(lib, script) for _ in range(runs)]
            row["dry_run_s"] = _median(measured, "wall_s")
            row["dry_run_cpu_s"] = _median(measured, "cpu_s")
            row["dry_run_rss_mb"] = _median(measured, "rss_mb")
        if "attach" in sections:
            measured = [attach(script, count) for _ in range(runs)]
            row["attach_s"] = _median(measured, "attach_s")
            row["teardown_s"] = _median(measured, "teardown_s")
            row["attach_rss_mb"] = _median(measured, "rss_mb")
        rows.append(row)
    return rows


def _table(rows: list[dict]) -> str:
    columns = [("probes", "probes", "{}"), ("dry_run_s", "dry-run s", "{:.2f}"),
               ("dry_run_cpu_s", "dry-run CPU", "{:.2f}"),
               ("dry_run_rss_mb", "dry-run MB", "{:.0f}"), ("attach_s", "attach s", "{:.2f}"),
               ("teardown_s", "teardown s", "{:.2f}"), ("attach_rss_mb", "attach MB", "{:.0f}")]
    shown = [c for c in columns if any(c[0] in row for row in rows)]
    lines = ["  ".join(f"{title:>10}" for _, title, _ in shown)]
    for row in rows:
        lines.append("  ".join(f"{fmt.format(row[key]):>10}" if key in row else f"{'-':>10}"
                               for key, _, fmt in shown))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="1,10,100")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="dry-run,attach")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("multiprobe_curve: needs root (BPF load and uprobes)", file=sys.stderr)
        return 2
    counts = tuple(int(n) for n in args.counts.split(","))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
          f"median of {args.runs} runs", file=sys.stderr)
    rows = curve(counts, args.runs, tuple(args.only.split(",")))
    print(json.dumps(rows, indent=1) if args.json else _table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
