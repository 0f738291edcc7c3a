"""The markdown the bench prints: issue #10's summary table (gs-cgen, the
best peer, the floor, the goal and whether it is met), then one detail
table per section with every tracer and its ratio."""
from __future__ import annotations

import dataclasses
import statistics

from bench import counting, values
from bench.events import EventRow
from bench.growth import GrowthRow, InlinedRow
from bench.hit import HitRow
from bench.info import Timed
from bench.tracers import Site

FLOOR = "BCC empty program"
GS = "gs-cgen"


def us(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def sec(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3f} s" if value < 1 else f"{value:.2f} s")


def rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}".replace("e+0", "e").replace("e+", "e")


def ratio(value: float | None, ref: float | None) -> str:
    return "-" if value is None or not ref else f"{value / ref:.2f}×"


def paired(row, ref) -> float | None:
    """The median over rounds of row's cost / ref's cost in the same round:
    the tracers of one round run back to back, so a change in the machine's
    speed between rounds cancels out (the medians of each alone do not)."""
    if row is None or ref is None or not row.added_us or len(row.added_us) != len(ref.added_us):
        return None
    ratios = [a / b for a, b in zip(row.added_us, ref.added_us) if b > 0]
    return statistics.median(ratios) if ratios else None


def times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}×"


def met(ok: bool | None) -> str:
    return "?" if ok is None else ("yes" if ok else "**no**")


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


@dataclasses.dataclass
class Report:
    quick: bool
    hit: dict[str, dict[str, HitRow]] = dataclasses.field(default_factory=dict)
    hit_site: dict[str, Site] = dataclasses.field(default_factory=dict)
    python: dict[str, HitRow] | None = None
    python_cold: float | None = None
    python_first: float | None = None
    libpython: str | None = None
    info: dict[str, dict[str, Timed]] = dataclasses.field(default_factory=dict)
    python_start: Timed | None = None
    import_floor: Timed | None = None
    dry_run: Timed | None = None
    events: dict[str, EventRow] | None = None
    events_n: int = 0
    event_sizes: dict[str, int | None] = dataclasses.field(default_factory=dict)
    growth: list[GrowthRow] | None = None
    growth_external: str | None = None
    inlined: InlinedRow | None = None
    count: dict[str, HitRow] | None = None      # bench/counting.py
    values: dict[str, dict[str, HitRow]] | None = None   # bench/values.py, by workload
    count_site: Site | None = None
    decide: dict[str, HitRow] | None = None      # bench/decide.py
    decide_site: Site | None = None

    # ------------------------------------------------------------------ summary

    def _hit_summary(self, label: str, what: str) -> list[str] | None:
        rows = self.hit.get(label)
        if not rows:
            return None
        gs, floor = rows.get(GS), rows.get(FLOOR)
        gs_us, floor_us = gs and gs.us, floor and floor.us
        peers = [r for name, r in rows.items() if name not in (GS, FLOOR) and r.us is not None]
        best = min(peers, key=lambda r: r.us) if peers else None
        bpf = rows.get("bpftrace")
        to_floor, to_bpftrace = paired(gs, floor), paired(gs, bpf)
        ok = None
        if to_floor is not None:
            ok = to_floor <= 1.1 and (to_bpftrace is None or to_bpftrace <= 1.0)
        return [what, f"{us(gs_us)} ({times(to_floor)} floor"
                      + (f", {times(to_bpftrace)} bpftrace)" if to_bpftrace is not None else ")"),
                f"{best.tracer} {us(best.us)} ({times(paired(best, floor))})" if best else "-",
                f"{FLOOR} {us(floor_us)}", "≤ 1.1× floor, ≤ bpftrace", met(ok)]

    def _ready_summary(self) -> list[str] | None:
        rows = self.hit.get("nop")
        if not rows:
            return None
        gs = rows.get(GS)
        bpf, floor = rows.get("bpftrace"), rows.get(FLOOR)
        ready = gs.ready if gs else None
        return ["script → probes attached, small binary", sec(ready),
                f"bpftrace {sec(bpf.ready)}" if bpf else "-",
                f"{FLOOR} {sec(floor.ready)}" if floor else "-", "≤ 0.40 s",
                met(None if ready is None else ready <= 0.40)]

    def _python_summary(self) -> list[list[str]]:
        if not self.python:
            return []
        gs, bpf, floor = (self.python.get(k) for k in (GS, "bpftrace", FLOOR))

        def both(row: HitRow | None) -> str:
            return "-" if row is None else f"{sec(row.ready)}, +{us(row.us)} µs/call"
        return [["python3.11: attach + per call on PyDict_SetItem (warm cache)", both(gs),
                 f"bpftrace {both(bpf)}", f"{FLOOR} {both(floor)}", "", ""],
                ["python3.11: attach, cold (libpython and gs-cgen's cache files evicted "
                 "from the page cache)", sec(self.python_cold), "", "", "≤ 0.6 s",
                 met(None if self.python_cold is None else self.python_cold <= 0.6)],
                ["python3.11: attach, first ever (empty gs-cgen cache: DWARF index built, "
                 "BCC compiles)", sec(self.python_first), "",
                 f"{FLOOR} {sec(floor.ready) if floor else '-'}", "", ""]]

    def _info_summary(self) -> list[list[str]]:
        out = []
        for key, what, goal_warm, goal_cold in (
                ("lib function", "`info function` on libpython3.11, warm / cold", 0.10, 0.35),
                ("lib line", "`info line` on libpython3.11, warm / cold", 0.10, 0.35)):
            rows = self.info.get(key)
            if not rows:
                continue
            gs = rows.get(GS)
            peers = "; ".join(f"{name} {sec(r.warm)} / {sec(r.cold)}" + (f" ({r.problem})" if r.problem else "")
                              for name, r in rows.items() if name != GS)
            ok = None if gs is None or gs.warm is None or gs.cold is None else \
                gs.warm <= goal_warm and gs.cold <= goal_cold and not gs.problem
            out.append([what, f"{sec(gs.warm)} / {sec(gs.cold)}" + (f" ({gs.problem})" if gs.problem else "")
                        if gs else "-", peers, "", f"≤ {goal_warm} s / {goal_cold} s", met(ok)])
        rows = self.info.get("small function")
        if rows:
            gs, perf = rows.get(GS), rows.get("perf probe -V")
            floor = self.import_floor.warm if self.import_floor else None
            ok = None if not gs or gs.warm is None or floor is None else gs.warm <= floor + 0.03
            out.append(["`info` on a small binary, warm", sec(gs.warm) if gs else "-",
                        f"perf probe {sec(perf.warm)}" if perf else "-",
                        f"import click + pyelftools {sec(floor)}", "≤ that + 0.03 s", met(ok)])
        if self.dry_run:
            out.append(["`--dry-run`, small binary, warm", sec(self.dry_run.warm), "", "", "", ""])
        return out

    def _events_summary(self) -> list[list[str]]:
        if not self.events:
            return []
        gs, js, bpf = (self.events.get(k) for k in (GS, "gs-cgen json", "bpftrace"))
        perf = self.events.get("perf probe")
        peers = "; ".join(p for p in (
            f"bpftrace printf {rate(bpf.rate)}" if bpf else "",
            f"perf record {rate(perf.rate)} (binary, unformatted)" if perf else "") if p)
        out = []
        if gs:
            ok = gs.rate is not None and gs.rate >= 3e5 and gs.exact and gs.values_ok
            out.append(["events delivered per second, one small print per call, flat out",
                        f"{rate(gs.rate)} ({ratio(gs.rate, bpf and bpf.rate)} bpftrace)"
                        f"{'' if gs.exact else '; delivered + lost ≠ produced'}",
                        peers, "", "≥ 3e5, delivered + lost = produced", met(ok)])
        if gs and js:
            ok = None if not gs.rate or not js.rate else gs.rate / js.rate <= 1.5 and js.exact
            out.append(["the same, `--output json`", f"{rate(js.rate)} ({ratio(js.rate, gs.rate)} plain)",
                        "", "", "within 1.5× of plain", met(ok)])
        bt = self.events.get("gs-cgen bt")
        if bt and gs:
            sizes = self.event_sizes
            out.append(["with `bt`: bytes per event, events/s",
                        f"{sizes.get('bt')} B (print alone {sizes.get('print')} B), "
                        f"{rate(bt.rate)}/s ({ratio(bt.rate, gs.rate)} of print alone)", "", "", "", ""])
        return out

    def _inlined_summary(self) -> list[list[str]]:
        row = self.inlined
        if row is None:
            return []
        ours = row.problem or f"{sec(row.seconds)} ({row.sites} sites)"
        gdb = f"gdb `break` {sec(row.gdb_seconds)} ({row.gdb_locations} locations)"
        return [[f"`trace {row.function}` on libpython, every inlined copy: `--dry-run`, "
                 "clang included", ours, gdb, "", "", ""]]

    def _growth_summary(self) -> list[list[str]]:
        if not self.growth:
            return self._inlined_summary()
        cells = ", ".join(f"{g.probes}: {sec(g.seconds)} {g.peak_mb:.0f} MB" if g.seconds else
                          f"{g.probes}: failed" for g in self.growth)
        last = self.growth[-1]
        ok = None if last.probes != 100 or last.seconds is None else \
            last.seconds <= 3 and last.peak_mb <= 250
        return [["cost growth, `--dry-run` on libpython, probes: time, peak RSS", cells, "", "",
                 "100 probes ≤ 3 s, ≤ 250 MB", met(ok)]] + self._inlined_summary()

    def summary(self) -> str:
        rows = [r for r in (
            self._hit_summary("nop", "added µs per hit, one local read + never-true condition, "
                                     "at an emulated instruction (`nop`)"),
            self._hit_summary("mov", "the same at an instruction the kernel single-steps (`mov`)"),
            self._ready_summary()) if r]
        count = counting.summary_row(self.count, us, paired, times, met)
        rows += [count] if count else []
        for summary_row in (values.summary_row, values.map_summary_row):
            printed = summary_row(self.values, us, paired, times, met)
            rows += [printed] if printed else []
        rows += self._python_summary() + self._info_summary() + self._events_summary()
        rows += self._growth_summary()
        return table(["what", "gs-cgen", "best peer", "floor / limit", "goal", "met"], rows)

    # ------------------------------------------------------------------ details

    def _hit_details(self, title: str, rows: dict[str, HitRow]) -> str:
        floor = rows.get(FLOOR)
        gs = rows.get(GS)
        body = []
        for name, row in rows.items():
            spread = f"{min(row.added_us):.2f}–{max(row.added_us):.2f}" if row.added_us else "-"
            body.append([name, us(row.us), spread, times(paired(row, floor)),
                         times(paired(row, gs)), sec(row.ready),
                         "yes" if row.clean else "**NO**", row.failed or ""])
        return f"{title}\n\n" + table(["tracer", "µs added per hit (median)", "min–max",
                                       "× floor (paired)", "× gs-cgen (paired)",
                                       "attach (median)",
                                       "nothing left behind", "failure"], body)

    def details(self) -> list[str]:
        out = []
        for label, rows in self.hit.items():
            site = self.hit_site[label]
            out.append(self._hit_details(
                f"Per hit at `{site.instruction}` ({site.source_line}, 0x{site.address:x}; "
                f"`if {site.local} == -1`)", rows))
        if self.count:
            out.append(self._hit_details(
                f"Counting a hot function at `{self.count_site.instruction}` "
                f"({self.count_site.source_line}; gs-cgen `count calls;`, bpftrace "
                "`@calls = count();`)", self.count))
        if self.decide:
            out.append(self._hit_details(
                f"Probes with several `if`s never true at `{self.decide_site.instruction}` "
                f"({self.decide_site.source_line}; bench/decide.py)", self.decide))
        if self.python:
            out.append(self._hit_details("Per call on PyDict_SetItem, python3.11 "
                                         "(`if value == 0`)", self.python))
        info_rows = []
        for key, rows in self.info.items():
            for name, row in rows.items():
                info_rows.append([key, name, sec(row.warm), sec(row.cold), row.problem or "ok"])
        for extra in (self.python_start, self.import_floor, self.dry_run):
            if extra:
                info_rows.append(["", extra.label, sec(extra.warm), "-", extra.problem or "ok"])
        if info_rows:
            out.append("Look-ups (warm: median; cold: file evicted from the page cache, empty "
                       "gs-cgen cache)\n\n" + table(["what", "tool", "warm", "cold", "output"],
                                                     info_rows))
        if self.events:
            body = [[name, rate(r.rate), "; ".join(r.accounted), "yes" if r.exact else "**no**",
                     "yes" if r.values_ok else "**no**",
                     f"{sum(r.out_bytes) / len(r.out_bytes):.0f}" if r.out_bytes else "-",
                     "yes" if r.clean else "**NO**", r.failed or ""]
                    for name, r in self.events.items()]
            out.append(f"Events, {self.events_n} calls of tick(i) flat out, one print each\n\n" +
                       table(["tracer", "delivered/s (median)", "delivered + lost = total",
                              "= produced", "values right", "output bytes/event",
                              "nothing left behind", "failure"], body))
        if self.growth:
            out.append("Cost growth (`gs-cgen trace --dry-run` on libpython3.11)\n\n" + table(
                ["function probes", "sites", "time", "peak RSS", "problem"],
                [[g.probes, g.sites if g.sites is not None else "-", sec(g.seconds),
                  f"{g.peak_mb:.0f} MB" if g.peak_mb else "-", g.problem or ""]
                 for g in self.growth]))
        if self.growth_external:
            out.append("Cost growth (bench/multiprobe_curve.py)\n\n" + self.growth_external)
        return out

    def render(self) -> str:
        return "\n\n".join([self.summary()] + self.details())

    def cleanup_line(self, notes: list[str]) -> None:
        """A note when any run left something behind (each run was checked)."""
        dirty = [name for rows in list(self.hit.values()) + list((self.values or {}).values()) +
                 [self.python or {}, self.count or {}, self.decide or {}]
                 for name, row in rows.items() if not row.clean]
        dirty += [name for name, row in (self.events or {}).items() if not row.clean]
        if dirty:
            notes.append(f"left a probe behind in some run: {', '.join(sorted(set(dirty)))}")
