"""Per-hit cost: µs a probe adds to each call, one local read and a
condition that is never true, at an emulated instruction (nop) and a
single-stepped one (mov) of target.c, and on PyDict_SetItem in python3.11.

Rounds interleave the tracers (each round: the untraced loop, then every
tracer once, the order rotated by one from round to round) so that a
change in the machine's load hits them alike; the figure is the median
over rounds of (traced - untraced of that round) / N.
The attach times of the same runs are the "script -> probes attached" rows.
"""
from __future__ import annotations

import dataclasses

from bench.common import CodeWatch, Context, median, note, progress
from bench.loops import traced, untraced
from bench.tracers import Site, Tracer


@dataclasses.dataclass
class HitRow:
    tracer: str
    added_us: list[float] = dataclasses.field(default_factory=list)
    attach_s: list[float] = dataclasses.field(default_factory=list)
    clean: bool = True
    failed: str | None = None

    @property
    def us(self) -> float | None:
        return median(self.added_us)

    @property
    def ready(self) -> float | None:
        return median(self.attach_s)


def rotated(tracers: list[Tracer], r: int) -> list[Tracer]:
    """Round r's order: each tracer takes each place in turn, so none is
    always the first after the untraced loop or the last of a round."""
    k = r % len(tracers) if tracers else 0
    return tracers[k:] + tracers[:k]


def measure(ctx: Context, label: str, argv: list[str], n: int, site: Site, watch: CodeWatch,
            tracers: list[Tracer], rounds: int) -> dict[str, HitRow]:
    rows = {t.name: HitRow(t.name) for t in tracers}
    for r in range(rounds):
        progress(f"per hit, {label}: round {r + 1}/{rounds}, untraced")
        base = untraced(ctx, argv)
        if base is None:
            note(f"{label}: untraced loop failed")
            continue
        for tracer in rotated(tracers, r):
            row = rows[tracer.name]
            if row.failed:
                continue
            progress(f"per hit, {label}: round {r + 1}/{rounds}, {tracer.name}")
            loop = traced(ctx, argv, watch, tracer, site, "hit", f"hit-{label}-{r}")
            row.clean &= loop.clean
            if loop.ns is None:
                row.failed = loop.error or "no timing"
                note(f"{label}: {row.failed}")
                continue
            row.added_us.append((loop.ns - base) / n / 1000)
            if loop.attach is not None and tracer.name != "raw ftrace uprobe":
                row.attach_s.append(loop.attach)
    return rows
