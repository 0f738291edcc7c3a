"""Per-hit cost of probes with several `if`s whose conditions are never
true (issue 25): how a probe notes its decision (emit/probe.py) shows in
what every hit pays before it knows nothing is sent. 1, 2 and 21 `if`s on
the `nop` of target.c's hot loop, each in the default (sleepable) build
and in the non-sleepable one (GS_CGEN_SLEEPABLE=off), beside the BCC
empty program; measured as the per-hit rows are (bench/hit.py)."""
from __future__ import annotations

from bench import hit
from bench.common import ENV, CodeWatch, Context
from bench.tracers import NEVER, BccEmpty, GsCgen, Site, usable

IF_COUNTS = (1, 2, 21)


class GsCgenIfs(GsCgen):
    """`count` independent `if`s, each testing the local against a value
    it never has (NEVER and below)."""

    def __init__(self, count: int, sleepable: bool) -> None:
        super().__init__(None if sleepable else {**ENV, "GS_CGEN_SLEEPABLE": "off"})
        self.count = count
        self.name = f"gs-cgen {count} if{'s' * (count > 1)}, " + \
            ("sleepable" if sleepable else "non-sleepable")

    def script(self, site: Site, kind: str) -> str:
        body = " ".join(f"if {site.local} == {NEVER - i} {{ print {site.local}; }}"
                        for i in range(self.count))
        return f"trace {site.source_line} {{ {body} }}"


def measure(ctx: Context, binary: str, site: Site, n: int, rounds: int) -> dict[str, hit.HitRow]:
    watch = CodeWatch(binary, "hot")
    tracers = usable([GsCgenIfs(count, sleepable) for sleepable in (True, False)
                      for count in IF_COUNTS] + [BccEmpty()])
    return hit.measure(ctx, "decide", [binary, "loop", str(n)], n, site, watch, tracers, rounds)
