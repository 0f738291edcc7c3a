"""`make bench`: gs-cgen beside bpftrace, perf probe, raw ftrace uprobes,
gdb and a BCC empty program (the floor), on the same instruction of the
same process, in one run; prints issue #10's table as markdown, with ratios
and each goal met or not, then the detail tables.

    .venv/bin/python -m bench [--quick] [--only hit,count,decide,values,python,info,events,growth]

Root.  The full run takes about 4-8 minutes, --quick under 2.  Workloads run
on the last CPU, tracers on the others.  A benchmark, not a test: it never
fails because a number is bad, only when it cannot measure.
"""
from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from bench import counting, decide, events, growth, hit, info, sites, values
from bench.common import (ENV, GS, NOTES, evict_from_page_cache, REPO, START, CodeWatch, Context, leftover_uprobes, median,
                          note, perf_probe_cleanup, progress)
from bench.loops import traced
from bench.report import Report
from bench.tracers import (Bpftrace, BccEmpty, GsCgen, GsCgenJson, PerfProbe, RawFtrace, usable)


def gs_cache_root() -> str:
    return os.path.join(ENV.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gs-cgen")

SECTIONS = ("hit", "count", "decide", "values", "python", "info", "events", "growth")


class Plan:
    """How much each section does: --quick or the full run."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.rounds = 2 if quick else 5
        # per hit: rounds differ by ±10 % on this VM; the median of more is steadier
        self.hit_rounds = 2 if quick else 9
        self.n_nop, self.n_mov, self.n_python = (100_000, 20_000, 100_000) if quick else \
            (200_000, 50_000, 200_000)
        self.warm, self.cold = (2, 1) if quick else (5, 3)
        self.n_flood, self.event_rounds = (200_000, 1) if quick else (500_000, 3)
        self.probe_counts = [1, 10] if quick else [1, 10, 100]
        self.n_values = 20_000 if quick else 50_000


def versions() -> str:
    found = []
    for argv in (["bpftrace", "--version"], ["perf", "--version"], ["gdb", "--version"]):
        if shutil.which(argv[0]):
            first = subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()[:1]
            found.append(first[0].strip() if first else argv[0])
    return ", ".join(found)


def gs_revision() -> str:
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", REPO, *argv], capture_output=True, text=True).stdout.strip()
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    return f"{git('rev-parse', '--abbrev-ref', 'HEAD')} at {git('rev-parse', '--short', 'HEAD')}{dirty}"


def run_hit(ctx: Context, plan: Plan, report: Report, binary: str, target_sites) -> None:
    watch = CodeWatch(binary, "hot")
    tracers = usable([GsCgen(), Bpftrace(), PerfProbe(), RawFtrace(), BccEmpty()])
    for label, n in (("nop", plan.n_nop), ("mov", plan.n_mov)):
        site = target_sites[label]
        report.hit[label] = hit.measure(ctx, label, [binary, "loop", str(n)], n, site, watch,
                                        tracers, plan.hit_rounds)
        report.hit_site[label] = site


def run_decide(ctx: Context, plan: Plan, report: Report, binary: str, target_sites) -> None:
    site = target_sites["nop"]
    report.decide = decide.measure(ctx, binary, site, plan.n_nop, plan.hit_rounds)
    report.decide_site = site


def run_values(ctx: Context, plan: Plan, report: Report) -> None:
    report.values = values.measure(ctx, ctx.workdir, plan.n_values, plan.rounds)


def run_count(ctx: Context, plan: Plan, report: Report, binary: str, target_sites) -> None:
    site = target_sites["nop"]
    report.count = counting.measure(ctx, binary, site, plan.n_nop, plan.rounds)
    report.count_site = site


def run_python(ctx: Context, plan: Plan, report: Report) -> None:
    found = sites.find_python311()
    if not found:
        note("no python3.11 with a shared libpython3.11.so.1.0 carrying DWARF: python rows skipped")
        return
    interpreter, library = found
    report.libpython = library
    site = sites.python_site(library)
    watch = CodeWatch(library, "PyDict_SetItem")
    argv = [interpreter, os.path.join(sites.HERE, "dict_loop.py"), str(plan.n_python)]
    tracers = usable([GsCgen(), Bpftrace(), BccEmpty()])
    report.python = hit.measure(ctx, "python3.11", argv, plan.n_python, site, watch, tracers,
                                plan.rounds)
    report.python_cold = _python_attach(ctx, plan, interpreter, argv[1], library, watch, site,
                                        first_ever=False)
    report.python_first = _python_attach(ctx, plan, interpreter, argv[1], library, watch, site,
                                         first_ever=True)


def _python_attach(ctx: Context, plan: Plan, interpreter: str, loop_script: str, library: str,
                   watch: CodeWatch, site, first_ever: bool) -> float | None:
    """Median attach on python3.11 with libpython's pages evicted. Cold (as
    perf probe's cold): gs-cgen's cache files evicted too, but kept. First
    ever: an empty cache, so the DWARF index is built and BCC compiles."""
    kind = "first ever" if first_ever else "cold"
    attaches = []
    for r in range(plan.cold):
        progress(f"python3.11: gs-cgen attach, {kind} {r + 1}/{plan.cold}")
        with tempfile.TemporaryDirectory(prefix="gsbench-cache-") as cache:
            evict_from_page_cache(library)
            if first_ever:
                tracer = GsCgen(env=dict(ENV, XDG_CACHE_HOME=cache))
            else:
                for path in glob.glob(os.path.join(gs_cache_root(), "**", "*"), recursive=True):
                    if os.path.isfile(path):
                        evict_from_page_cache(path)
                tracer = GsCgen()
            loop = traced(ctx, [interpreter, loop_script, "1000"], watch, tracer, site, "hit",
                          f"py{kind.replace(' ', '')}-{r}")
        if loop.attach is None:
            note(f"python3.11 {kind} attach: {loop.error}")
        attaches.append(loop.attach)
    return median(attaches)


def run_info(plan: Plan, report: Report, binary: str, target_sites) -> None:
    if report.libpython is None:
        found = sites.find_python311()
        report.libpython = found[1] if found else None
    if report.libpython:
        report.info["lib function"] = info.measure_lookup(
            report.libpython, "function", "PyDict_SetItem", ["key", "value"], plan.warm, plan.cold)
        report.info["lib line"] = info.measure_lookup(
            report.libpython, "line", "Objects/dictobject.c:1875", ["key", "value"], plan.warm,
            plan.cold)
    report.info["small function"] = info.measure_lookup(binary, "function", "hot",
                                                        ["a", "b", "total"], plan.warm, 0)
    report.python_start = info.measure_python_start(plan.warm)
    report.import_floor = info.measure_import_floor(plan.warm)
    report.dry_run = info.measure_dry_run(binary, GsCgen.script(target_sites["nop"], "hit"),
                                          plan.warm)


def run_events(ctx: Context, plan: Plan, report: Report, binary: str, target_sites) -> None:
    site = target_sites["tick"]
    watch = CodeWatch(binary, "tick")
    runs = [(t.name, t, kind) for t, kind in ((GsCgen(), "print"), (GsCgenJson(), "json"),
                                              (GsCgen(), "bt"), (Bpftrace(), "print"),
                                              (PerfProbe(), "print"))
            if not t.available()]
    runs = [(name + (" bt" if kind == "bt" else ""), t, kind) for name, t, kind in runs]
    report.events = events.measure(ctx, binary, plan.n_flood, site, watch, runs, plan.event_rounds)
    report.events_n = plan.n_flood
    report.event_sizes = events.event_sizes(binary, site)


def run_growth(plan: Plan, report: Report) -> None:
    if report.libpython:
        report.inlined = growth.measure_inlined(report.libpython)
    report.growth_external = growth.external_curve(plan.quick)
    if report.growth_external is None and report.libpython:
        report.growth = growth.measure(report.libpython, plan.probe_counts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, shorter loops (< 2 min)")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections: {', '.join(SECTIONS)}")
    ap.add_argument("--no-pin", action="store_true", help="do not pin workloads and tracers")
    args = ap.parse_args()
    sections = set(args.only.split(","))
    if os.geteuid() != 0:
        print("make bench attaches uprobes: run it as root", file=sys.stderr)
        return 1
    if not os.path.exists(GS):
        print(f"{GS} is missing: run scripts/setup.sh", file=sys.stderr)
        return 1
    plan = Plan(args.quick)
    cpus = sorted(os.sched_getaffinity(0))
    pinned = not args.no_pin and len(cpus) >= 2
    workdir = tempfile.mkdtemp(prefix="gsbench-")
    ctx = Context(workdir, {cpus[-1]} if pinned else None, set(cpus[:-1]) if pinned else None)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))      # no core files from crashing peers
    load_start = os.getloadavg()
    report = Report(quick=plan.quick)
    try:
        perf_probe_cleanup()
        binary = sites.build_target(workdir)
        target_sites = sites.target_sites(binary)
        if "hit" in sections:
            run_hit(ctx, plan, report, binary, target_sites)
        if "count" in sections:
            run_count(ctx, plan, report, binary, target_sites)
        if "decide" in sections:
            run_decide(ctx, plan, report, binary, target_sites)
        if "values" in sections:
            run_values(ctx, plan, report)
        if "python" in sections:
            run_python(ctx, plan, report)
        if "info" in sections:
            run_info(plan, report, binary, target_sites)
        if "events" in sections:
            run_events(ctx, plan, report, binary, target_sites)
        if "growth" in sections:
            run_growth(plan, report)
    finally:
        perf_probe_cleanup()
        left = leftover_uprobes()
        if left:
            note(f"uprobes left in tracefs at the end: {left}")
        shutil.rmtree(workdir, ignore_errors=True)
    load_end = os.getloadavg()
    print(f"machine: Linux {os.uname().release}, {os.cpu_count()} CPUs"
          f"{f'; workloads on CPU {cpus[-1]}, tracers on {cpus[:-1]}' if pinned else ', unpinned'}; "
          f"load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end; "
          f"{time.monotonic() - START:.0f} s{' (--quick)' if plan.quick else ''}")
    print(f"gs-cgen: {gs_revision()}; peers: {versions()}")
    print()
    print(report.render())
    report.cleanup_line(NOTES)
    if NOTES:
        print("\nnotes:")
        for text in NOTES:
            print(f"- {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
