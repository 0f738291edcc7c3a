"""How gs-cgen's cost grows with the number of probes: --dry-run (resolve,
compile, verifier-load; nothing attached) on libpython3.11 with 1, 10 and
100 function probes, wall time and the process's peak RSS (wait4).

bench/multiprobe_curve.py (the multiprobe work of issue #10) measures this
in depth; when it exists, `make bench` runs it and shows its own output,
and this simple loop is the fallback.
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess

from bench.common import ENV, GDB, GS, HERE, VENV_PY, progress, run, run_rss

CURVE = os.path.join(HERE, "multiprobe_curve.py")


@dataclasses.dataclass
class GrowthRow:
    probes: int
    sites: int | None
    seconds: float | None
    peak_mb: float | None
    problem: str | None = None


def exported_functions(library: str, count: int) -> list[str]:
    """count exported Py* functions, spread over the sorted list (the same
    every run)."""
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True,
                         text=True, check=True).stdout
    names = sorted({p[2] for p in (line.split() for line in out.splitlines())
                    if len(p) == 3 and p[1] == "T" and re.match(r"Py[A-Z]\w*_\w+$", p[2])})
    step = max(1, len(names) // count)
    return names[::step][:count]


def script(functions: list[str]) -> str:
    return "\n".join(f'trace {f} {{ print "{f} {{}}", $pc; }}' for f in functions)


def measure(library: str, counts: list[int]) -> list[GrowthRow]:
    rows = []
    # one untimed run first: the first compile of a session pays for loading
    # clang's and the libraries' pages, which is no cost of the probe count
    run_rss([GS, "trace", "-t", library, "-s", script(exported_functions(library, 1)), "--dry-run"])
    for count in counts:
        progress(f"growth: --dry-run with {count} probe(s) on libpython")
        functions = exported_functions(library, count)
        seconds, rc, out, rss_kb = run_rss([GS, "trace", "-t", library, "-s", script(functions),
                                            "--dry-run"], timeout=600)
        if rc != 0:
            tail = out.strip().splitlines()[-1:] if out.strip() else []
            rows.append(GrowthRow(count, None, None, None, f"rc={rc}: {tail}"))
            continue
        sites = len(re.findall(r"^probe \d+:", out, re.M))
        rows.append(GrowthRow(count, sites, seconds, rss_kb / 1024))
    return rows


@dataclasses.dataclass
class InlinedRow:
    """Every inlined copy of one function: `--dry-run` with clang (the
    compiled-program cache off), beside gdb setting `break` on all."""
    function: str
    sites: int | None
    seconds: float | None
    gdb_locations: int | None
    gdb_seconds: float | None
    problem: str | None = None


INLINED = ("Py_INCREF", "op")


def measure_inlined(library: str) -> InlinedRow:
    function, parameter = INLINED
    progress(f"growth: every inlined copy of {function} on libpython")
    seconds, rc, out, _ = run_rss([GS, "trace", "-t", library, "-s",
                                   f"trace {function} {{ print {parameter}; }}", "--dry-run"],
                                  timeout=900, env=dict(ENV, GS_CGEN_PROGRAM_CACHE="off"))
    sites = len(re.findall(r"^probe \d+:", out, re.M)) if rc == 0 else None
    problem = None if rc == 0 else f"rc={rc}: {out.strip().splitlines()[-1:]}"
    gdb_seconds, gdb_rc, gdb_out = run(GDB + ["-ex", f"break {function}", library])
    found = re.search(r"\((\d+) locations\)", gdb_out)
    return InlinedRow(function, sites, seconds, int(found.group(1)) if found else None,
                      gdb_seconds if gdb_rc == 0 else None, problem)


def external_curve(quick: bool) -> str | None:
    """multiprobe_curve.py's own report, when it is there."""
    if not os.path.exists(CURVE):
        return None
    progress("growth: bench/multiprobe_curve.py")
    res = subprocess.run([VENV_PY, CURVE] + (["--quick"] if quick else []), capture_output=True,
                         text=True, env=ENV, timeout=900)
    text = res.stdout.strip()
    if res.returncode != 0:
        text += f"\n\n(multiprobe_curve.py exited {res.returncode}: {res.stderr.strip()[-300:]})"
    return text
