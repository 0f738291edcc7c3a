"""One rendered line per `print`, and the JSON form of an event."""
from __future__ import annotations

import json

from gs_cgen.dwarf.types import type_name
from gs_cgen.plan.model import ExprLine, FormatLine, ProbePlan, SlotRef
from gs_cgen.render.decode import Event, Value, ValueStatus
from gs_cgen.render.text import value_text


def render_lines(event: Event, probe: ProbePlan) -> list[str]:
    return [_line(line, event) for line in probe.lines]


def _line(line, event: Event) -> str:
    match line:
        case ExprLine(text=text, slot=slot):
            return f"{text} = {value_text(event.values[slot])}"
        case FormatLine(pieces=pieces):
            return "".join(p if isinstance(p, str) else value_text(event.values[p.slot], p.kind)
                           for p in pieces)
    raise TypeError(line)


def render_json(event: Event, probe: ProbePlan) -> str:
    values = [_json_value(slot.expr_text, value) for slot, value in zip(probe.slots, event.values)]
    return json.dumps({
        "trace": probe.site.pattern_text, "pid": event.pid, "tid": event.tid,
        "timestamp_ns": event.timestamp_ns, "lines": render_lines(event, probe),
        "values": values,
    })


def _json_value(expr: str, value: Value) -> dict:
    ok = value.status is ValueStatus.OK
    entry = {
        "expr": expr,
        "type": type_name(value.ctype) if value.ctype is not None else "u64",
        "value": _json_data(value) if ok else None,
        "status": value.status.value,
    }
    if not ok:
        entry["error"] = value_text(value)
    return entry


def _json_data(value: Value):
    text = value_text(value)
    return value.data if text == str(value.data) or isinstance(value.data, bool) else text
