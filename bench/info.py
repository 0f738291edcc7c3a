"""DWARF look-up speed: `gs-cgen info` beside `perf probe -V` and gdb's
`info scope` on the same function or line, warm (median of several runs)
and cold (the file's pages evicted from the page cache with
POSIX_FADV_DONTNEED, which touches no one else's files, and an empty
gs-cgen index cache); `--dry-run` on the small binary; Python's own start.
Each command's output must name the variables expected there, else the row
says so instead of a time.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tempfile

from bench.common import ENV, GDB, GS, VENV_PY, evict_from_page_cache, have, median, progress, run


@dataclasses.dataclass
class Timed:
    label: str
    warm: float | None = None
    cold: float | None = None
    problem: str | None = None


def _check(out: str, rc: int, expect: list[str]) -> str | None:
    if rc != 0:
        return f"rc={rc}: {out.strip().splitlines()[-1:] if out.strip() else ''}"
    words = set(re.findall(r"[A-Za-z_]\w*", out))
    missing = [e for e in expect if e not in words]
    return f"output lacks {', '.join(missing)}" if missing else None


def time_command(label: str, cmd: list[str], expect: list[str], warm_runs: int,
                 cold_runs: int, files: list[str]) -> Timed:
    row = Timed(label)
    if cold_runs:
        colds = []
        for _ in range(cold_runs):
            with tempfile.TemporaryDirectory(prefix="gsbench-cache-") as cache:
                for path in files:
                    evict_from_page_cache(path)
                env = dict(ENV, XDG_CACHE_HOME=cache)
                seconds, rc, out = run(cmd, env=env)
            row.problem = row.problem or _check(out, rc, expect)
            colds.append(seconds)
        row.cold = median(colds)
    warms = []
    run(cmd)                                # fill caches (page cache, gs-cgen's index)
    for _ in range(warm_runs):
        seconds, rc, out = run(cmd)
        row.problem = row.problem or _check(out, rc, expect)
        warms.append(seconds)
    row.warm = median(warms)
    return row


def commands(binary: str, what: str, where: str) -> list[tuple[str, list[str]]]:
    """(label, argv) of each tool that lists the variables at FUNCTION or
    FILE:LINE (what: "function" or "line")."""
    found = []
    if os.path.exists(GS):
        found.append(("gs-cgen", [GS, "info", "-t", binary, what, where]))
    if have("perf"):
        found.append(("perf probe -V", ["perf", "probe", "-x", binary, "-V", where]))
    if have("gdb"):
        found.append(("gdb", GDB + ["-ex", f"info scope {where}", binary]))
    return found


def measure_lookup(binary: str, what: str, where: str, expect: list[str], warm_runs: int,
                   cold_runs: int) -> dict[str, Timed]:
    rows = {}
    for label, cmd in commands(binary, what, where):
        progress(f"info: {label} {what} {where} on {os.path.basename(binary)}")
        rows[label] = time_command(label, cmd, expect, warm_runs, cold_runs, [binary])
    return rows


def measure_dry_run(binary: str, script: str, warm_runs: int) -> Timed:
    progress("info: gs-cgen --dry-run on the small binary")
    return time_command("gs-cgen --dry-run", [GS, "trace", "-t", binary, "-s", script, "--dry-run"],
                        ["verified"], warm_runs, 0, [binary])


def measure_python_start(warm_runs: int) -> Timed:
    return time_command("python -c pass", [VENV_PY, "-c", "pass"], [], warm_runs, 0, [])


IMPORT_FLOOR = "import click, elftools.elf.elffile"


def measure_import_floor(warm_runs: int) -> Timed:
    """The two libraries every `info` imports, and nothing else: the
    floor a small binary's `info` is held to (within 0.03 s)."""
    return time_command(f"python -c '{IMPORT_FLOOR}'", [VENV_PY, "-c", IMPORT_FLOOR], [],
                        warm_runs, 0, [])
