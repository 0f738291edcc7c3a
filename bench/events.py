"""Events delivered per second, flat out: target.c's flood calls tick(i)
N times as fast as it can and every tracer prints one small line per call
("tick i") at the same nop.  Rate = events delivered / (time from "go" to
the tracer's output last growing).  Every delivered line must be a distinct
i in [0, N) (the values are right), and delivered + lost must be N exactly
(lost as the tracer reports it).  With `bt` the same for gs-cgen, plus the
event's size (from --dry-run) and output bytes per event.
"""
from __future__ import annotations

import dataclasses
import os
import re

from bench.common import GS, CodeWatch, Context, median, note, progress, run
from bench.loops import traced
from bench.tracers import GsCgen, Site, Tracer


@dataclasses.dataclass
class EventRow:
    tracer: str
    rates: list[float] = dataclasses.field(default_factory=list)
    accounted: list[str] = dataclasses.field(default_factory=list)   # "delivered + lost = N"
    exact: bool = True              # every run: delivered + lost == produced
    values_ok: bool = True
    out_bytes: list[float] = dataclasses.field(default_factory=list)
    clean: bool = True
    failed: str | None = None

    @property
    def rate(self) -> float | None:
        return median(self.rates)


def check_values(lines: list[str], n: int) -> bool:
    seen = set()
    for line in lines:
        i = int(line.split()[1])
        if not 0 <= i < n or i in seen:
            return False
        seen.add(i)
    return True


def measure(ctx: Context, binary: str, n: int, site: Site, watch: CodeWatch,
            runs: list[tuple[str, Tracer, str]], rounds: int) -> dict[str, EventRow]:
    """runs: (row name, tracer, kind)."""
    rows = {name: EventRow(name) for name, _, _ in runs}
    for r in range(rounds):
        for name, tracer, kind in runs:
            row = rows[name]
            if row.failed:
                continue
            progress(f"events/s: {name}, {n} calls, round {r + 1}/{rounds}")
            tag = f"ev-{re.sub(r'[^a-z0-9]+', '_', name.lower())}-{r}"
            data = ctx.path(f"{tag}.data") if tracer.name == "perf probe" else None
            loop = traced(ctx, [binary, "flood", str(n)], watch, tracer, site, kind, tag, data)
            row.clean &= loop.clean
            if loop.ns is None or loop.last_output is None:
                row.failed = loop.error or "no timing"
                note(f"events/s: {name}: {row.failed}")
                continue
            delivered = tracer.delivered(loop.handle)
            lost = tracer.lost(loop.handle)
            if not delivered:
                row.failed = f"no event delivered ({open(loop.handle.err_path).read()[-200:]!r})"
                note(f"events/s: {name}: {row.failed}")
                continue
            row.rates.append(len(delivered) / (loop.last_output - loop.go))
            total = len(delivered) + (lost or 0)
            row.accounted.append(f"{len(delivered)} + {lost if lost is not None else '?'} = {total}")
            row.exact &= lost is not None and total == n or lost is None and len(delivered) == n
            row.values_ok &= check_values(delivered, n)
            row.out_bytes.append(os.path.getsize(data or loop.handle.out_path) / len(delivered))
    return rows


def event_sizes(binary: str, site: Site) -> dict[str, int | None]:
    """Bytes of one event as gs-cgen's --dry-run reports it, per kind."""
    sizes = {}
    for kind in ("print", "bt"):
        _, rc, out = run([GS, "trace", "-t", binary, "-s", GsCgen.script(site, kind), "--dry-run"])
        m = re.search(r"(\d+)-byte event", out)
        sizes[kind] = int(m.group(1)) if rc == 0 and m else None
    return sizes
