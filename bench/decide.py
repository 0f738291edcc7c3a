"""Per-hit cost of probes with several `if`s whose conditions are never
true (issue 25): how a probe notes its decision (emit/probe.py) shows in
what every hit pays before it knows nothing is sent. 1, 2 and 21 `if`s on
the `nop` of target.c's hot loop, and one `if` comparing the local's
bytes (memcmp: a comparison in the work area), each in the default (sleepable) build
and in the non-sleepable one (GS_CGEN_SLEEPABLE=off), beside the BCC
empty program; measured as the per-hit rows are (bench/hit.py).

    .venv/bin/python -m bench.decide [LABEL=GS_CGEN_EXECUTABLE ...]

measures other builds of gs-cgen in the same rounds, beside this one
(e.g. main's, from an export of it), so that their rows pair up."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

from bench import hit, sites
from bench.common import ENV, GS, CodeWatch, Context, note
from bench.report import Report
from bench.tracers import NEVER, BccEmpty, GsCgen, Site, usable

IF_COUNTS = (1, 2, 21)
MEMCMP = 0          # the count that stands for the one memcmp `if`


class GsCgenIfs(GsCgen):
    """`count` independent `if`s, each testing the local against a value
    it never has (NEVER and below)."""

    def __init__(self, count: int, sleepable: bool, build: str = "", gs: str = GS) -> None:
        super().__init__(None if sleepable else {**ENV, "GS_CGEN_SLEEPABLE": "off"})
        self.count, self.gs = count, gs
        what = "1 memcmp if" if count == MEMCMP else f"{count} if{'s' * (count > 1)}"
        self.name = f"gs-cgen{f' {build}' if build else ''} {what}, " + \
            ("sleepable" if sleepable else "non-sleepable")

    def script(self, site: Site, kind: str) -> str:
        if self.count == MEMCMP:       # total's 4 bytes are never NEVER's
            never = " ".join(f"{b:02x}" for b in NEVER.to_bytes(4, "little", signed=True))
            body = (f'if memcmp(&{site.local}, hex("{never}"), 4) '
                    f"{{ print {site.local}; }}")
        else:
            body = " ".join(f"if {site.local} == {NEVER - i} {{ print {site.local}; }}"
                            for i in range(self.count))
        return f"trace {site.source_line} {{ {body} }}"

    def start(self, ctx, site, pid, kind, tag):
        cmd = [self.gs, "trace", "-p", str(pid), "-s", self.script(site, kind),
               "--output", "plain"]
        return self.spawn(ctx, cmd, tag, self.env)


def measure(ctx: Context, binary: str, site: Site, n: int, rounds: int,
            builds: dict[str, str] | None = None) -> dict[str, hit.HitRow]:
    """`builds`: label -> gs-cgen executable, measured beside this one."""
    watch = CodeWatch(binary, "hot")
    tracers = [GsCgenIfs(count, sleepable, label, gs)
               for label, gs in {"": GS, **(builds or {})}.items()
               for sleepable in (True, False) for count in (*IF_COUNTS, MEMCMP)]
    return hit.measure(ctx, "decide", [binary, "loop", str(n)], n, site, watch,
                       usable(tracers + [BccEmpty()]), rounds)


def main(argv: list[str]) -> int:
    builds = dict(arg.split("=", 1) for arg in argv)
    cpus = sorted(os.sched_getaffinity(0))
    workdir = tempfile.mkdtemp(prefix="gsbench-")
    pinned = len(cpus) >= 2
    ctx = Context(workdir, {cpus[-1]} if pinned else None, set(cpus[:-1]) if pinned else None)
    try:
        binary = sites.build_target(workdir)
        site = sites.target_sites(binary)["nop"]
        report = Report(quick=False, decide=measure(ctx, binary, site, 200_000, 9, builds),
                        decide_site=site)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n\n".join(report.details()))
    left_behind: list[str] = []
    report.cleanup_line(left_behind)
    for text in left_behind:
        note(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
