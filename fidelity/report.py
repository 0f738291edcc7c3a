"""Tables per optimization level, grouped reasons, every wrong value, and
the JSON report (build/fidelity/report.json) that runs can be compared by."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from fidelity import compare
from fidelity.measure import TargetResult, ValueResult, reason_group

TOP_REASONS = 12
_COLUMNS = ("visible", "gdb reads", "ceiling") + compare.VERDICTS + ("match/gdb",)


def level_counts(results: list[TargetResult]) -> dict[tuple[str, str], dict]:
    """(suite, level) -> counts of every verdict, values visible, values gdb reads."""
    table: dict[tuple[str, str], dict] = {}
    for result in results:
        row = table.setdefault((result.suite, result.level), _empty_row())
        row["unstable"] += len(result.unstable)
        row["diverged sites"] += len(result.diverged_sites)
        row["lost events"] += result.lost_events
        row["sites"] += result.sites_hit
        for value in result.values:
            row[value.verdict] += 1
            row["visible"] += 1
            row["gdb reads"] += compare.gdb_reads(value.gdb)
    return table


def _empty_row() -> dict:
    return dict.fromkeys(("visible", "gdb reads", "unstable", "diverged sites", "lost events",
                          "sites") + compare.VERDICTS, 0)


def format_tables(results: list[TargetResult]) -> str:
    table = level_counts(results)
    lines = []
    for suite in dict.fromkeys(suite for suite, _ in table):
        lines.append(f"{suite}:")
        header = f"  {'level':<6}{'sites':>6}" + "".join(f"{c:>{max(len(c), 6) + 2}}" for c in _COLUMNS)
        lines.append(header)
        for (row_suite, level), row in sorted(table.items()):
            if row_suite == suite:
                lines.append(f"  {'-' + level:<6}{row['sites']:>6}" + _cells(row))
        lines.append("")
    return "\n".join(lines)


def _cells(row: dict) -> str:
    ceiling = _percent(row["gdb reads"], row["visible"])
    matched = _percent(row[compare.MATCH], row["gdb reads"])
    cells = [row["visible"], row["gdb reads"], ceiling] + [row[v] for v in compare.VERDICTS] \
        + [matched]
    return "".join(f"{cell:>{max(len(name), 6) + 2}}" for name, cell in zip(_COLUMNS, cells))


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def format_footnotes(results: list[TargetResult]) -> str:
    lines = []
    for result in results:
        where = f"{result.program} -{result.level}"
        if result.unstable:
            lines.append(f"  {where}: {len(result.unstable)} values differ between two gdb runs "
                         f"(not compared): {', '.join(result.unstable[:5])}")
        if result.diverged_sites:
            lines.append(f"  {where}: $sp differs from gdb's at {len(result.diverged_sites)} "
                         f"sites (not compared): {', '.join(result.diverged_sites[:5])}")
        lines.extend(_not_compared(where, result.not_compared))
        lines.extend(f"  {where}: {note}" for note in result.notes)
    return "\n".join(lines)


def _not_compared(where: str, entries: list[str]) -> list[str]:
    """One line per variable and reason: `values::G_NAME at 18 sites (why)`."""
    groups: dict[tuple[str, str], int] = Counter(
        tuple(entry.split(" ", 1)[1].split(": ", 1)) for entry in entries)
    return [f"  {where}: {name} not compared at {count} sites: {why}"
            for (name, why), count in groups.items()]


def grouped_reasons(values: list[ValueResult], verdict: str) -> list[tuple[int, str, ValueResult]]:
    """(count, group, an example) for the values with `verdict`, biggest first.
    `<OPTIMIZED_OUT>` alone says little: its group adds gs-cgen's location."""
    groups: dict[str, list[ValueResult]] = defaultdict(list)
    for value in values:
        if value.verdict != verdict:
            continue
        key = f"[{value.kind}] " + reason_group(value.reason)
        if value.reason in ("<OPTIMIZED_OUT>", None) or "members unavailable" in key:
            key += " @ " + reason_group(value.location)
        groups[key].append(value)
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
    return [(len(members), key, members[0]) for key, members in ranked]


def format_reasons(results: list[TargetResult]) -> str:
    values = [v for r in results for v in r.values]
    lines = []
    for verdict in (compare.TRACER_UNAVAILABLE, compare.TRACER_ERROR):
        groups = grouped_reasons(values, verdict)
        if not groups:
            continue
        lines.append(f"top reasons of {verdict} ({sum(g[0] for g in groups)} values, "
                     f"{len(groups)} groups):")
        for count, key, example in groups[:TOP_REASONS]:
            lines.append(f"  {count:>5}  {key}")
            lines.append(f"         e.g. {_where(example)} {example.name}: "
                         + _shorten(example.reason))
            if example.location and example.location not in (example.reason or ""):
                lines.append(f"              gs-cgen info: {_shorten(example.location)}")
        if len(groups) > TOP_REASONS:
            rest = sum(g[0] for g in groups[TOP_REASONS:])
            lines.append(f"  {rest:>5}  in {len(groups) - TOP_REASONS} more groups (report.json)")
        lines.append("")
    return "\n".join(lines)


def format_bugs(results: list[TargetResult]) -> str:
    lines = []
    for verdict in (compare.MISMATCH, compare.TRACER_ONLY):
        bad = [v for r in results for v in r.values if v.verdict == verdict]
        lines.append(f"{verdict}: {len(bad)}")
        for value in bad:
            lines.append(f"  {_where(value)} {value.name} ({value.type}): "
                         f"gdb {json.dumps(value.gdb)} | gs-cgen {json.dumps(value.tracer)}"
                         + (f" [{', '.join(value.paths[:4])}]" if value.paths != [""] else ""))
    return "\n".join(lines)


def _shorten(text: str | None, width: int = 160) -> str:
    text = text or ""
    return text if len(text) <= width else text[:width - 1] + "…"


def _where(value: ValueResult) -> str:
    return (f"{value.program} -{value.level} {value.function} {value.site} "
            f"({value.file}:{value.line})")


def write_json(results: list[TargetResult], path: Path, seconds: float,
               compiler: str = "gcc") -> None:
    table = level_counts(results)
    values = [v for r in results for v in r.values]
    report = {
        "seconds": round(seconds, 1),
        "compiler": compiler,                    # of the C and C++ corpus
        "levels": [{"suite": s, "level": lvl, **row} for (s, lvl), row in sorted(table.items())],
        "reasons": {verdict: [{"count": c, "group": key, "example": _where(e) + " " + e.name}
                              for c, key, e in grouped_reasons(values, verdict)]
                    for verdict in (compare.TRACER_UNAVAILABLE, compare.TRACER_ERROR)},
        "targets": [r.as_json() for r in results],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))


def verdict_counts(results: list[TargetResult]) -> Counter:
    return Counter(v.verdict for r in results for v in r.values)
