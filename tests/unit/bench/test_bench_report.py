"""The bench's pure parts: where its probe sites are in target.c, how it
checks delivered values, and how the summary decides a goal is met."""
from __future__ import annotations

from bench import events, sites
from bench.events import EventRow
from bench.hit import HitRow
from bench.report import Report, table
from bench.tracers import Bpftrace, GsCgen, Site


def _site(function: bool = False) -> Site:
    return Site(binary="/x/t", symbol="at_nop", address=0x11ae, offset=0x11ae,
                source_line="target.c:31", local="total", bp_offset=-4, instruction="nop",
                function=function)


def test_every_marked_line_holds_one_probe_site():
    lines = sites.marker_lines()
    assert set(lines) == set(sites.MARKS)
    source = open(sites.SOURCE).read().splitlines()
    for mark, number in lines.items():
        assert "PROBE_SITE(" in source[number - 1], (mark, source[number - 1])


def test_delivered_values_must_be_distinct_and_in_range():
    assert events.check_values(["tick 0", "tick 2", "tick 1"], 3)
    assert not events.check_values(["tick 0", "tick 0"], 3)
    assert not events.check_values(["tick 3"], 3)


def test_tracers_read_the_same_local_with_the_same_never_true_test():
    site = _site()
    assert GsCgen.script(site, "hit") == "trace target.c:31 { if total == -1 { print total; } }"
    assert Bpftrace.program(site, "hit") == (
        'uprobe:/x/t:at_nop / *(int32*)(reg("bp") + (-4)) == -1 / '
        '{ printf("%d\\n", *(int32*)(reg("bp") + (-4))); }')


def _hits(gs: float, bpf: float, floor: float) -> dict[str, HitRow]:
    return {"gs-cgen": HitRow("gs-cgen", [gs]), "bpftrace": HitRow("bpftrace", [bpf]),
            "BCC empty program": HitRow("BCC empty program", [floor])}


def test_per_hit_goal_needs_the_floor_ratio_and_bpftrace():
    report = Report(quick=True, hit={"nop": _hits(1.05, 1.2, 1.0), "mov": _hits(1.05, 1.0, 1.0)})
    nop = report._hit_summary("nop", "nop")
    mov = report._hit_summary("mov", "mov")
    assert nop[1] == "1.05 (1.05× floor, 0.88× bpftrace)" and nop[-1] == "yes"
    assert mov[-1] == "**no**"          # within 1.1x the floor but above bpftrace


def test_per_hit_ratios_pair_the_tracers_of_one_round():
    # The machine is twice as slow in rounds 3-5: every tracer's median is
    # a slow round's, at different points; the per-round ratios all say 1.05.
    rows = {"gs-cgen": HitRow("gs-cgen", [1.05, 1.05, 2.1, 2.1, 2.1]),
            "bpftrace": HitRow("bpftrace", [1.1, 1.1, 2.2, 2.2, 2.2]),
            "BCC empty program": HitRow("BCC empty program", [1.0, 1.0, 2.0, 2.0, 2.0])}
    nop = Report(quick=True, hit={"nop": rows})._hit_summary("nop", "nop")
    assert nop[1] == "2.10 (1.05× floor, 0.95× bpftrace)" and nop[-1] == "yes"


def test_events_goal_needs_exact_accounting():
    row = EventRow("gs-cgen", rates=[4e5], exact=False)
    report = Report(quick=True, events={"gs-cgen": row, "bpftrace": EventRow("bpftrace", [2e5])})
    summary = report._events_summary()[0]
    assert "delivered + lost ≠ produced" in summary[1] and summary[-1] == "**no**"


def test_table_is_markdown():
    assert table(["a", "b"], [["1", "2"]]).splitlines() == ["| a | b |", "| --- | --- |",
                                                             "| 1 | 2 |"]


def test_std_value_goal_pairs_the_vec_with_the_c_array():
    from bench import values
    rows = {"C array": {"gs-cgen": HitRow("gs-cgen", [1.0, 2.0]),
                        "BCC empty program": HitRow("BCC empty program", [0.5, 1.0])},
            "Rust Vec": {"gs-cgen": HitRow("gs-cgen", [1.4, 2.8])}}
    row = Report(quick=True, values=rows).summary().splitlines()[-1]
    assert "(1.40× the C array)" in row and row.endswith("| yes |")
    for source in ("values_target.c", "values_target.rs"):      # the nop each probe sits on
        line = values.probe_line(f"{values.HERE}/{source}")
        assert "nop" in open(f"{values.HERE}/{source}").read().splitlines()[line - 1]
