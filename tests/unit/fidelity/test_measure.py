"""How the harness joins gdb's hits and gs-cgen's events (fidelity/measure.py,
gdb_recorder.unstable_values), on hand-made records."""
from __future__ import annotations

from fidelity.corpus import Site
from fidelity.gdb_recorder import GdbRun, unstable_values
from fidelity.measure import NO_EVENT, TargetResult, _classify_site
from fidelity.tracer_recorder import Probe, TraceRun

SITE = Site("/bin/prog", 0x1159, "f", "f.c", 3, (), "0x1159")


def hit(sp=0x7FF0, **values):
    return {"id": SITE.key, "pc": 0x555555555159, "sp": sp, "function": "f",
            "variables": [{"name": n, "kind": "local", "type": "int", "raw": {"k": "int", "v": v}}
                          for n, v in values.items()]}


def event(sp=0x7FF0, **values):
    entries = [{"expr": "$sp", "value": sp, "status": "ok"}]
    entries += [{"expr": n, "type": "int", "value": v, "status": "ok"} for n, v in values.items()]
    return {"trace": "0x1159", "values": entries}


def classify(gdb_hit, tracer_event, probe=None, unstable=frozenset()) -> TargetResult:
    result = TargetResult("corpus", "prog", "O0", 1, 1, [], [], [], 0, [])
    probe = probe or Probe("0x1159", [SITE], [v["name"] for v in gdb_hit["variables"]])
    events = {SITE.key: tracer_event} if tracer_event else {}
    _classify_site(result, SITE, gdb_hit, TraceRun(events, {SITE.key: probe}, 0, 0, ""),
                   set(unstable))
    return result


def test_values_are_joined_by_name():
    result = classify(hit(a=1, b=2), event(a=1, b=3))
    assert [(v.name, v.verdict) for v in result.values] == [("a", "MATCH"), ("b", "MISMATCH")]


def test_a_site_where_the_stacks_differ_is_not_compared():
    result = classify(hit(a=1), event(sp=0x7FE0, a=1))
    assert result.values == [] and result.diverged_sites == [SITE.key]


def test_refused_names_and_missing_events_are_tracer_errors():
    probe = Probe("0x1159", [SITE], ["a"], errors={"b": "no variable 'b' at f (0x1159)"})
    result = classify(hit(a=1, b=2), event(a=1), probe)
    assert [(v.name, v.verdict, v.reason) for v in result.values] == [
        ("a", "MATCH", None), ("b", "TRACER_ERROR", "no variable 'b' at f (0x1159)")]
    result = classify(hit(a=1), None)
    assert [(v.verdict, v.reason) for v in result.values] == [("TRACER_ERROR", NO_EVENT)]


def test_a_synthetic_pointer_is_read_through():
    synthetic = hit()
    synthetic["variables"] = [{"name": "p", "kind": "local", "type": "int *",
                               "raw": {"k": "synthetic", "pointee": {"k": "int", "v": 21}}}]
    reason = "synthetic pointer: it points to an object that has no address"
    tracer = event()
    tracer["values"] += [{"expr": "p", "value": None, "status": "unavailable", "reason": reason},
                         {"expr": "*p", "value": 21, "status": "ok"}]
    result = classify(synthetic, tracer, Probe("0x1159", [SITE], ["p", "*p"]))
    assert [(v.name, v.verdict) for v in result.values] == [("p", "MATCH")]


def test_values_that_differ_between_gdb_runs_are_left_out():
    first = GdbRun({SITE.key: hit(a=1, b=2)}, {}, 0, "")
    second = GdbRun({SITE.key: hit(a=1, b=5)}, {}, 0, "")
    assert unstable_values(first, second) == {SITE.key: {"b"}}
    result = classify(hit(a=1, b=2), event(a=1, b=2), unstable={"b"})
    assert [v.name for v in result.values] == ["a"] and result.unstable == [f"{SITE.key} b"]
    moved = GdbRun({SITE.key: hit(sp=0x1000, a=1, b=2)}, {}, 0, "")
    assert unstable_values(first, moved) == {SITE.key: {"*"}}


def test_two_reports_differ_value_by_value():
    from fidelity.diff import diff
    key = ("prog", "O2", "prog:0x10", "i")

    def value(verdict):
        return {"verdict": verdict, "gdb": 0, "tracer": 3}
    text = diff({key: value("TRACER_UNAVAILABLE")}, {key: value("MISMATCH")})
    assert text.splitlines() == ["     1  TRACER_UNAVAILABLE -> MISMATCH",
                                 "new MISMATCH: prog O2 prog:0x10 i: gdb 0 | gs-cgen 3"]
