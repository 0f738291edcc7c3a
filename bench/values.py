"""What printing a language's std value costs per hit (issues #23, #24):
a 16-element Rust Vec<u64>, its data read behind its pointer in the probe
(plan/follows.py), against a 16-element C array of the same bytes read
in place; a 16-element C++ std::map<int, int>, its red-black tree walked
in the probe node by node, against a 16-element C array of the same
{int, int} pairs; `print *values;` on each, the BCC empty program as the
floor. The Vec and its array are measured as the per-hit rows are
(bench/hit.py: interleaved rounds, the median of (traced - untraced) /
N). The map and its pairs by the time spent in the probe (the kernel's
BPF run-time statistics, `gs-cgen --stats`), in runs of PROBE_CALLS hits:
so few that the ring buffer takes every event (a tight loop of hits
fills it with 12 KB map events, and a hit whose event is lost costs the
probe only its failed reservation: a loop's time would show the cost of
losing events). The goals: the Vec costs at most 1.5x its array, the map
at most 3x its pairs."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

from bench import hit
from bench.common import GS, CodeWatch, Context, note
from bench.tracers import BccEmpty, GsCgen, Site, usable

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL = 1.5
MAP_GOAL = 3.0
PROBE_CALLS = 400
IN_PROBE = "gs-cgen in probe"

# label -> (source, the function probed, the marker of its nop's line, arguments after N)
WORKLOADS = {
    "C array": ("values_target.c", "take_values", "LINE:probe", ()),
    "Rust Vec": ("values_target.rs", "take_values", "LINE:probe", ()),
    "C pairs": ("values_target.c", "take_pairs", "LINE:pairs", ("pairs",)),
    "C++ map": ("values_target.cpp", "take_pairs", "LINE:pairs", ()),
}


class GsCgenPrint(GsCgen):
    @staticmethod
    def script(site: Site, kind: str) -> str:
        return f"trace {site.source_line} {{ print *values; }}"


def probe_line(source: str, marker: str = "LINE:probe") -> int:
    """The line marked `marker` (the nop the probe sits on)."""
    with open(source) as f:
        return next(n for n, text in enumerate(f, 1) if marker in text)


def build(workdir: str) -> dict[str, str]:
    """{workload label: binary}; a language whose compiler is missing is
    left out, with a note."""
    built = {}
    c_out = os.path.join(workdir, "values_target")
    subprocess.run(["gcc", "-O0", "-g", "-o", c_out, os.path.join(HERE, "values_target.c")],
                   check=True)
    built["C array"] = built["C pairs"] = c_out
    if shutil.which("g++") is None:
        note("values: g++ not found; the C++ map row is left out")
    else:
        cpp_out = os.path.join(workdir, "values_target_cpp")
        subprocess.run(["g++", "-O0", "-g", "-o", cpp_out,
                        os.path.join(HERE, "values_target.cpp")], check=True)
        built["C++ map"] = cpp_out
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
    built = build(workdir)
    spent = {label: hit.HitRow(IN_PROBE) for label in ("C pairs", "C++ map") if label in built}
    for _ in range(rounds if len(spent) == 2 else 0):     # interleaved, as paired() wants
        for label, row in spent.items():
            found = _in_probe_us(built[label], label)
            if found is None:
                row.failed = "events lost or no statistics"
            else:
                row.added_us.append(found)
    for label, row in spent.items():
        rows[label] = {IN_PROBE: row}
    for label, binary in built.items():
        if label in spent:
            continue
        name, function, marker, arguments = WORKLOADS[label]
        source = os.path.join(HERE, name)
        line = f"{name}:{probe_line(source, marker)}"
        site = Site(binary, function, 0, 0, line, "values", 0, "nop")
        watch = CodeWatch(binary, function)
        tracers = usable([GsCgenPrint(), BccEmpty()])
        rows[label] = hit.measure(ctx, f"values {label}", [binary, str(n), *arguments], n, site,
                                  watch, tracers, rounds)
    return rows


def _in_probe_us(binary: str, label: str) -> float | None:
    """µs per hit spent in the probe of `print *values;` on workload
    `label`, from `--stats`; None unless every one of PROBE_CALLS events
    was delivered."""
    name, function, marker, arguments = WORKLOADS[label]
    line = f"{name}:{probe_line(os.path.join(HERE, name), marker)}"
    proc = subprocess.Popen([GS, "trace", "--stats", "--output", "plain", "-s",
                             f"trace {line} {{ print *values; }}", "--", binary,
                             str(PROBE_CALLS), *arguments],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        while "tracing" not in (proc.stderr.readline() or "tracing"):
            pass
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(1)
        proc.stdin.write("end\n")
        proc.stdin.close()
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # `probe where hits avg-ns/hit sent lost`
    found = re.search(rf"\s{PROBE_CALLS}\s+(\d+)\s+{PROBE_CALLS}\s+0\s*$", err, re.M)
    if found is None:
        note(f"values {label}: {err.strip()[-300:]}")
        return None
    return int(found[1]) / 1000


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


def map_summary_row(rows, us, paired, times, met) -> list[str] | None:
    if not rows or "C++ map" not in rows or "C pairs" not in rows:
        return None
    tree, pairs = rows["C++ map"].get(IN_PROBE), rows["C pairs"].get(IN_PROBE)
    ratio = paired(tree, pairs)
    # A hit's whole cost: the uprobe's own (the BCC empty program's, at the
    # same nop) and the time in the probe.
    floor = rows.get("C array", {}).get(BccEmpty.name)
    whole = None
    if floor is not None and floor.us is not None and tree.us is not None and pairs.us:
        whole = (floor.us + tree.us) / (floor.us + pairs.us)
    return ["printing a std value: C++ `std::map<int, int>` of 16 (its tree walked in the "
            "probe) vs a C array of 16 `{int, int}` pairs, `print *values;`, µs per hit in the "
            f"probe (BPF run-time statistics, {PROBE_CALLS} hits, none lost); a hit's whole cost "
            "adds the uprobe's own",
            f"{us(tree.us if tree else None)} ({times(ratio)} the C pairs; a whole hit "
            f"{times(whole)})",
            f"C pairs {us(pairs.us if pairs else None)}",
            f"{BccEmpty.name} {us(floor.us if floor else None)}",
            f"a whole hit ≤ {MAP_GOAL:g}× the C pairs'",
            met(None if whole is None else whole <= MAP_GOAL)]
