"""What printing a language's std value costs per hit (issue #23): a
16-element Rust Vec<u64>, its data read behind its pointer in the probe
(plan/follows.py), against a 16-element C array of the same bytes read
in place; `print *values;` on each, the BCC empty program as the floor.
Measured as the per-hit rows are (bench/hit.py: interleaved rounds, the
median of (traced - untraced) / N). The goal: the Vec costs at most 1.5x
the array."""
from __future__ import annotations

import os
import shutil
import subprocess

from bench import hit
from bench.common import CodeWatch, Context, note
from bench.tracers import BccEmpty, GsCgen, Site, usable

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL = 1.5


class GsCgenPrint(GsCgen):
    @staticmethod
    def script(site: Site, kind: str) -> str:
        return f"trace {site.source_line} {{ print *values; }}"


def probe_line(source: str) -> int:
    """The line marked `LINE:probe` (the nop the probe sits on)."""
    with open(source) as f:
        return next(n for n, text in enumerate(f, 1) if "LINE:probe" in text)


def build(workdir: str) -> dict[str, str]:
    """{"C array": binary, "Rust Vec": binary}; a language whose compiler
    is missing is left out, with a note."""
    built = {}
    c_out = os.path.join(workdir, "values_target")
    subprocess.run(["gcc", "-O0", "-g", "-o", c_out, os.path.join(HERE, "values_target.c")],
                   check=True)
    built["C array"] = c_out
    rustc = shutil.which("rustc") or shutil.which("rustc", path=os.path.expanduser("~/.cargo/bin"))
    if rustc is None:
        note("values: rustc not found; the Rust Vec row is left out")
        return built
    rs_out = os.path.join(workdir, "values_target_rs")
    subprocess.run([rustc, "--edition", "2021", "-g", "-C", "opt-level=0", "-o", rs_out,
                    os.path.join(HERE, "values_target.rs")], check=True, capture_output=True)
    built["Rust Vec"] = rs_out
    return built


def measure(ctx: Context, workdir: str, n: int, rounds: int) -> dict[str, dict[str, hit.HitRow]]:
    rows = {}
    for label, binary in build(workdir).items():
        source = os.path.join(HERE, "values_target.rs" if label == "Rust Vec" else
                              "values_target.c")
        line = f"{os.path.basename(source)}:{probe_line(source)}"
        site = Site(binary, "take_values", 0, 0, line, "values", 0, "nop")
        watch = CodeWatch(binary, "take_values")
        tracers = usable([GsCgenPrint(), BccEmpty()])
        rows[label] = hit.measure(ctx, f"values {label}", [binary, str(n)], n, site, watch,
                                  tracers, rounds)
    return rows


def summary_row(rows, us, paired, times, met) -> list[str] | None:
    if not rows or "Rust Vec" not in rows or "C array" not in rows:
        return None
    vec, array = rows["Rust Vec"].get("gs-cgen"), rows["C array"].get("gs-cgen")
    ratio = paired(vec, array)
    floor = rows["C array"].get(BccEmpty.name)
    return ["printing a std value: Rust `Vec<u64>` of 16 (read behind its pointer) vs a C "
            "`uint64_t[16]`, `print *values;`, added µs per hit",
            f"{us(vec.us if vec else None)} ({times(ratio)} the C array)",
            f"C array {us(array.us if array else None)}",
            f"{BccEmpty.name} {us(floor.us if floor else None)}",
            f"≤ {GOAL}× the C array", met(None if ratio is None else ratio <= GOAL)]
