"""Counting a hot function in the kernel (issue #12): per-call µs that
gs-cgen's `count calls;` adds to the target, beside bpftrace's
`@calls = count();` and the BCC empty program (the floor), at the same
instruction of target.c's hot loop (the emulated `nop`), measured as the
per-hit rows are (bench/hit.py: rounds interleave the tracers, median of
(traced - untraced) / N; ratios are medians of per-round ratios). Each
tracer prints its map when stopped; the bench reads nothing while the loop
is timed."""
from __future__ import annotations

from bench import hit
from bench.common import CodeWatch, Context
from bench.tracers import BccEmpty, Bpftrace, GsCgen, Site, usable

FLOOR = "BCC empty program"


class GsCgenCount(GsCgen):
    @staticmethod
    def script(site: Site, kind: str) -> str:
        return f"trace {site.source_line} {{ count calls; }}"


class BpftraceCount(Bpftrace):
    @staticmethod
    def program(site: Site, kind: str) -> str:
        return f"uprobe:{site.binary}:{site.symbol} {{ @calls = count(); }}"


def measure(ctx: Context, binary: str, site: Site, n: int, rounds: int) -> dict[str, hit.HitRow]:
    watch = CodeWatch(binary, "hot")
    tracers = usable([GsCgenCount(), BpftraceCount(), BccEmpty()])
    return hit.measure(ctx, "count", [binary, "loop", str(n)], n, site, watch, tracers, rounds)


def summary_row(rows: dict[str, hit.HitRow] | None, us, paired, times, met) -> list[str] | None:
    """The summary table's row: the goal is to cost no more than bpftrace
    (paired: the median of per-round ratios, as bench/report.py computes them)."""
    if not rows:
        return None
    gs, bpf, floor = rows.get("gs-cgen"), rows.get("bpftrace"), rows.get(FLOOR)
    gs_us, bpf_us, floor_us = (r.us if r else None for r in (gs, bpf, floor))
    to_bpftrace = paired(gs, bpf)
    ok = None if to_bpftrace is None else to_bpftrace <= 1.0
    return ["counting a hot function in the kernel: `count calls;` vs bpftrace "
            "`@calls = count();`, added µs per call",
            f"{us(gs_us)} ({times(paired(gs, floor))} floor, {times(to_bpftrace)} bpftrace)",
            f"bpftrace {us(bpf_us)} ({times(paired(bpf, floor))})", f"{FLOOR} {us(floor_us)}",
            "≤ bpftrace", met(ok)]
