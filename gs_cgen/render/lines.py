"""One rendered line per executed `print` (and per failed condition), and
the JSON form of an event."""
from __future__ import annotations

import json

from gs_cgen.dwarf.types import type_name
from gs_cgen.plan.model import (DumpRef, ExprErrorLine, ExprLine, FormatLine, ProbePlan,
                                SlotRef)
from gs_cgen.render.decode import Dump, Event, ValueStatus
from gs_cgen.render.text import format_dump, format_value, value_json, value_status

MISSING_ARG = "<MISSING_ARG>"
_REASONS = {
    ValueStatus.NULL_DEREF: "null pointer dereference",
    ValueStatus.READ_ERROR: "read error",
    ValueStatus.ACCESS_ERROR: "access error",
    ValueStatus.OFFSETS_UNAVAILABLE: "offsets unavailable",
    ValueStatus.DIV_BY_ZERO: "division by zero",
    ValueStatus.OPTIMIZED_OUT: "optimized out",
}


def render_lines(event: Event, probe: ProbePlan) -> list[str]:
    return [_line(line, event) for line in probe.lines if event.ran(line.bit)]


def _line(line, event: Event) -> str:
    match line:
        case ExprLine(text=text, slot=slot):
            return f"{text} = {format_value(event.values[slot])}"
        case FormatLine(pieces=pieces):
            return "".join(_piece(piece, event) for piece in pieces)
        case ExprErrorLine(text=text, slot=slot):
            return f"ExprError: {text} ({expr_error_reason(event.values[slot])})"
    raise TypeError(line)


def _piece(piece, event: Event) -> str:
    match piece:
        case str():
            return piece
        case SlotRef(slot=slot, kind=kind):
            return format_value(event.values[slot], kind)
        case DumpRef(slot=slot, style=style):
            value = event.values[slot]
            if isinstance(value, Dump):
                return format_dump(value.data, style, value.truncated)
            return MISSING_ARG
    raise TypeError(piece)


def expr_error_reason(value) -> str:
    """`read error at 0x10`: why a condition could not be evaluated."""
    reason = _REASONS.get(value.status) or value.detail or value.status.value
    return f"{reason} at 0x{value.address or 0:x}"


def render_json(event: Event, probe: ProbePlan) -> str:
    return json.dumps({
        "trace": probe.site.pattern_text, "pid": event.pid, "tid": event.tid,
        "timestamp_ns": event.timestamp_ns, "lines": render_lines(event, probe),
        "values": list(_json_values(event, probe)),
    })


def _json_values(event: Event, probe: ProbePlan):
    for line in probe.lines:
        if isinstance(line, ExprErrorLine) or not event.ran(line.bit):
            continue
        refs = [line.slot] if isinstance(line, ExprLine) else \
            [p.slot for p in line.pieces if isinstance(p, (SlotRef, DumpRef))]
        for index in refs:
            yield _json_value(probe.slots[index], event.values[index])


def _json_value(slot, value) -> dict:
    ctype = slot.ctype
    entry = {"expr": slot.expr_text, "type": type_name(ctype) if ctype is not None else "long"}
    if isinstance(value, Dump):
        entry.update(value=value.data.hex(), status="truncated" if value.truncated else "ok")
        return entry
    entry.update(value=value_json(value), status=value_status(value))
    if entry["status"] not in ("ok", "truncated"):
        entry["error"] = format_value(value)
    return entry
