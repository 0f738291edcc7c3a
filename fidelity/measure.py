"""One target, both tools, every value classified."""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field

from fidelity import compare, gdb_recorder, tracer_recorder
from fidelity.corpus import Site, Target

NO_EVENT = "no event at this site (the probe did not fire, or its event was lost)"
NO_VALUE = "gs-cgen's event at this site has no value for it"


@dataclass
class ValueResult:
    suite: str
    program: str
    level: str
    function: str
    site: str                        # MODULE:0xADDR
    pattern: str                     # how the probe was named
    file: str
    line: int
    name: str
    kind: str                        # parameter, local, global
    type: str | None
    verdict: str
    gdb: object = None               # canonical values (compare.py)
    tracer: object = None
    reason: str | None = None        # gs-cgen's own words, for TRACER_UNAVAILABLE / _ERROR
    location: str | None = None      # `gs-cgen info` location description
    paths: list[str] = field(default_factory=list)   # members that decided the verdict


@dataclass
class TargetResult:
    suite: str
    program: str
    level: str
    sites: int                       # sites of the build
    sites_hit: int                   # sites gdb hit (compared)
    values: list[ValueResult]
    unstable: list[str]              # "SITE NAME" of values that differ between two gdb runs
    diverged_sites: list[str]        # gs-cgen's $sp differs from gdb's there
    lost_events: int
    notes: list[str]
    seconds: dict[str, float] = field(default_factory=dict)   # per phase
    measured: bool = True            # False: the harness failed on it (see notes)
    # "SITE NAME: why" of values left out of the comparison on purpose
    not_compared: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return asdict(self)


def measure(target: Target) -> TargetResult:
    clock = _Clock()
    first, second = gdb_recorder.record(target), gdb_recorder.record(target)
    unstable = gdb_recorder.unstable_values(first, second)
    clock.lap("gdb")
    names = {key: _expressions(hit, target.raw_layout) for key, hit in first.hits.items()}
    run = tracer_recorder.record(target, names, first.bases)
    clock.lap("gs-cgen")
    clock.seconds["of which checks"] = round(run.check_seconds, 1)
    result = TargetResult(target.suite, target.name, target.level, len(target.sites),
                          len(first.hits), [], [], [], run.lost_events, _notes(first, run),
                          clock.seconds)
    for site in target.sites:
        hit = first.hits.get(site.key)
        if hit is not None:
            _classify_site(result, site, hit, run, unstable.get(site.key, set()),
                           target.raw_layout)
    _add_locations(result, target)
    clock.lap("info")
    return result


class _Clock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last = time.monotonic()

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds[phase] = round(now - self.last, 1)
        self.last = now


def _expressions(hit: dict, raw_layout: bool) -> list[str]:
    """What gs-cgen prints at a site: each variable gdb lists, and `*NAME`
    for a synthetic pointer (what it points to is all there is to compare);
    as `raw(...)` when the target is compared by DWARF layout (Rust)."""
    names = [v["name"] for v in hit.get("variables", []) if v["raw"]["k"] != "absent"]
    names += [f"*{v['name']}" for v in hit.get("variables", []) if v["raw"]["k"] == "synthetic"]
    return [tracer_expression(name, raw_layout) for name in names]


def tracer_expression(name: str, raw_layout: bool) -> str:
    return f"raw({name})" if raw_layout else name


def failed(target: Target, error: Exception) -> TargetResult:
    """A target the harness could not measure: no values, and why."""
    return TargetResult(target.suite, target.name, target.level, len(target.sites), 0, [], [], [],
                        0, [f"not measured: {type(error).__name__}: {error}"], measured=False)


def _notes(first: gdb_recorder.GdbRun, run: tracer_recorder.TraceRun) -> list[str]:
    notes = []
    if first.exit_code != 0:
        notes.append(f"under gdb the program ended: {first.last_stop}")
    if run.strays:
        notes.append(f"gs-cgen events at PCs gdb has no site for: {', '.join(run.strays[:8])}")
    if run.lost_events:
        notes.append(f"gs-cgen lost {run.lost_events} events: sites without an event are "
                     "TRACER_ERROR")
    return notes


def _classify_site(result: TargetResult, site: Site, hit: dict, run, unstable: set[str],
                   raw_layout: bool = False) -> None:
    if "*" in unstable:
        result.unstable += [f"{site.key} {v['name']}" for v in hit.get("variables", [])]
        return
    event = run.events.get(site.key)
    if event is not None and _tracer_sp(event) != hit["sp"]:
        result.diverged_sites.append(site.key)
        return
    probe = run.probes.get(site.key)
    values = {v["expr"]: v for v in event["values"]} if event else {}
    for variable in hit.get("variables", []):
        if variable["raw"]["k"] == "absent":
            result.not_compared.append(f"{site.key} {variable['name']}: {variable['raw']['msg']}")
            continue
        if variable["name"] in unstable:
            result.unstable.append(f"{site.key} {variable['name']}")
            continue
        result.values.append(_classify_value(result, site, hit, variable, probe, event, values,
                                             raw_layout))


def _tracer_sp(event: dict) -> int | None:
    sp = next((v for v in event["values"] if v["expr"] == "$sp"), None)
    return sp["value"] if sp else None


def _classify_value(result, site, hit, variable, probe, event, values,
                    raw_layout: bool = False) -> ValueResult:
    gdb_value = compare.from_gdb(variable["raw"])
    value = ValueResult(result.suite, result.program, result.level, hit.get("function") or
                        site.function, site.key, site.pattern, site.file, site.line,
                        variable["name"],
                        variable["kind"], variable["type"], compare.TRACER_ERROR, gdb_value)
    name = tracer_expression(variable["name"], raw_layout)
    pointee = tracer_expression(f"*{variable['name']}", raw_layout)
    refused = probe.errors.get(name) if probe else None
    if refused or (probe and probe.site_error):
        value.reason = refused or probe.site_error
        return value
    if event is None or name not in values:
        value.reason = NO_EVENT if event is None else NO_VALUE
        return value
    entry = values[name]
    value.tracer = _tracer_value(entry, variable["raw"], values.get(pointee))
    value.verdict, value.paths = compare.verdict(gdb_value, value.tracer)
    if value.verdict == compare.TRACER_UNAVAILABLE:
        value.reason = entry.get("reason") or entry.get("error") or \
            f"members unavailable: {', '.join(value.paths[:3])}"
    return value


def _tracer_value(entry: dict, raw: dict, pointee: dict | None):
    """gs-cgen's value in canonical form; a synthetic pointer gs-cgen also
    calls one is compared by its pointee (`*NAME`)."""
    says_synthetic = "synthetic pointer" in (entry.get("reason") or entry.get("error") or "")
    if raw["k"] == "synthetic" and says_synthetic:
        return {"synthetic pointer": compare.from_tracer(pointee, raw["pointee"])
                if pointee else None}
    return compare.from_tracer(entry, raw)


def _add_locations(result: TargetResult, target: Target) -> None:
    """gs-cgen's location description of every value it could not give."""
    sites = {s.key: s for s in target.sites}
    wanted: dict[str, list[ValueResult]] = {}
    for value in result.values:
        if value.verdict in (compare.TRACER_UNAVAILABLE, compare.TRACER_ERROR):
            wanted.setdefault(value.site, []).append(value)
    for key, values in wanted.items():
        locations = tracer_recorder.location_descriptions(sites[key])
        for value in values:
            value.location = locations.get(value.name) or locations.get("*")


def reason_group(text: str | None) -> str:
    """A reason with its addresses, numbers and names taken out, so that
    the same cause at many sites is one group."""
    if not text:
        return "(no reason given)"
    text = re.sub(r",? in \[DW_OP[^\]]*\]", "", text)      # the whole expression: too specific
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r" at [\w.]+ \([^)]*\)", " at …", text)      # "no variable 'x' at main (0x1521)"
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
    text = re.sub(r"\[0x…,0x…\)", "[…)", text)
    return re.sub(r"\b\d+\b", "N", text)
