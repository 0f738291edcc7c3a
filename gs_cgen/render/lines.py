"""One rendered line per executed `print` (and per failed condition), and
the JSON form of an event."""
from __future__ import annotations

import json

from gs_cgen.dwarf.types import type_name
from gs_cgen.plan import ir
from gs_cgen.plan.model import (BacktraceLine, DumpRef, capture_scalars, ExprErrorLine, ExprLine, FormatLine, ProbePlan,
                                ScriptString, SlotRef)
from gs_cgen.render.backtrace import backtrace_lines
from gs_cgen.render.decode import Backtrace, Dump, Event
from gs_cgen.render.status import ValueStatus
from gs_cgen.render.values import ErrorValue
from gs_cgen.render.text import (TLS_NOT_ALLOCATED_TEXT, TLS_UNAVAILABLE_TEXT, escape_bytes,
                                 format_dump, format_value, length_over_limit_text, value_json,
                                 value_status)

MISSING_ARG = "<MISSING_ARG>"
_REASONS = {
    ValueStatus.NULL_DEREF: "null pointer dereference",
    ValueStatus.READ_ERROR: "read error",
    ValueStatus.ACCESS_ERROR: "access error",
    ValueStatus.OFFSETS_UNAVAILABLE: "offsets unavailable",
    ValueStatus.DIV_BY_ZERO: "division by zero",
    ValueStatus.SHIFT_RANGE: "shift count out of range",
    ValueStatus.OPTIMIZED_OUT: "optimized out",
    ValueStatus.TLS_UNAVAILABLE: TLS_UNAVAILABLE_TEXT,
    ValueStatus.TLS_NOT_ALLOCATED: TLS_NOT_ALLOCATED_TEXT,
}

# Statuses of C's undefined operations (docs/reference.md "Arithmetic").
_ARITHMETIC = {ValueStatus.DIV_BY_ZERO, ValueStatus.SHIFT_RANGE}


def render_lines(event: Event, probe: ProbePlan, resolve_frame=None) -> list[str]:
    """`resolve_frame(pid, address, is_return_address)` names `bt` frames."""
    lines: list[str] = []
    for line in probe.lines:
        if not event.ran(line.bit):
            continue
        if isinstance(line, BacktraceLine):
            lines.extend(_backtrace(event.values[line.slot], event.key_pid, resolve_frame))
        elif isinstance(line, ExprErrorLine):
            lines.append(_line(line, event))
        else:
            lines.extend(_builtin_errors(line, event, probe))
            lines.append(_line(line, event))
    return lines


def _builtin_errors(line, event: Event, probe: ProbePlan) -> list[str]:
    """GhostScope emits an ExprError when a builtin inside a print fails;
    the value itself still renders inline as its error."""
    found = []
    for index in _line_slots(line):
        value, slot = event.values[index], probe.slots[index]
        if isinstance(value, ErrorValue) and _calls_builtin(slot.capture):
            found.append(f"ExprError: {slot.expr_text} ({expr_error_reason(value)})")
    return found


def _line_slots(line) -> list[int]:
    if isinstance(line, ExprLine):
        return [line.slot]
    return [p.slot for p in line.pieces if isinstance(p, (SlotRef, DumpRef))]


def _calls_builtin(capture) -> bool:
    return any(isinstance(node, (ir.BytesEqual, ir.MemoryEqual))
               for node in ir.walk(capture_scalars(capture)))


def _backtrace(value, pid: int, resolve_frame) -> list[str]:
    if not isinstance(value, Backtrace) or resolve_frame is None:
        return ["backtrace: unreadable, 0 frames"]
    return backtrace_lines(resolve_frame.backtrace(pid, value), value.capture.show)


def _line(line, event: Event) -> str:
    match line:
        case ExprLine(text=text, slot=slot):
            return f"{text} = {format_value(event.values[slot])}"
        case FormatLine(pieces=pieces):
            return "".join(_piece(piece, event) for piece in pieces)
        case ExprErrorLine(text=text, slot=slot, optimized_out=names):
            return f"ExprError: {text} ({expr_error_reason(event.values[slot], names)})"
    raise TypeError(line)


def _piece(piece, event: Event) -> str:
    match piece:
        case str():
            return piece
        case SlotRef(slot=slot, kind=kind):
            return format_value(event.values[slot], kind)
        case ScriptString(value=value):
            return f'"{escape_bytes(value, quoted=True)}"'
        case DumpRef(slot=slot, style=style):
            value = event.values[slot]
            if isinstance(value, Dump):
                return format_dump(value.data, style, value.truncated)
            return MISSING_ARG
    raise TypeError(piece)


def expr_error_reason(value, optimized_out: tuple[str, ...] = ()) -> str:
    """`read error at 0x10`: why a condition could not be evaluated;
    `optimized_out`: its operands the plan knew to be (ExprErrorLine)."""
    if value.status is ValueStatus.LENGTH_OVER_LIMIT:
        return length_over_limit_text(value.address or 0)
    if value.status is ValueStatus.OPTIMIZED_OUT:
        # No memory was involved: name what is gone rather than an address.
        return (f"{', '.join(optimized_out)} optimized out at this PC" if optimized_out
                else "optimized out")
    reason = _REASONS.get(value.status) or value.detail or value.status.value
    if value.status in _ARITHMETIC or value.status is ValueStatus.UNAVAILABLE:
        return reason                   # no memory was involved: no address to name
    return f"{reason} at 0x{value.address or 0:x}"


def render_json(event: Event, probe: ProbePlan, resolve_frame=None) -> str:
    return json.dumps({
        "trace": probe.site.pattern_text, "pid": event.pid, "tid": event.tid,
        "timestamp_ns": event.timestamp_ns,
        "lines": render_lines(event, probe, resolve_frame),
        "values": list(_json_values(event, probe)),
    })


def _json_values(event: Event, probe: ProbePlan):
    for line in probe.lines:
        if isinstance(line, (ExprErrorLine, BacktraceLine)) or not event.ran(line.bit):
            continue
        styles = {p.slot: p.style for p in getattr(line, "pieces", ()) if isinstance(p, DumpRef)}
        for index in _line_slots(line):
            yield _json_value(probe.slots[index], event.values[index], styles.get(index, "x"))


def _json_value(slot, value, style: str = "x") -> dict:
    ctype = slot.ctype
    entry = {"expr": slot.expr_text, "type": type_name(ctype) if ctype is not None else "long"}
    if isinstance(value, Dump):
        entry.update(value=format_dump(value.data, style, False),
                     status="truncated" if value.truncated else "ok")
        return entry
    entry.update(value=value_json(value), status=value_status(value))
    if entry["status"] not in ("ok", "truncated"):
        entry["error"] = format_value(value)
    if isinstance(value, ErrorValue) and value.detail:
        entry["reason"] = value.detail      # why it is unavailable: "not in scope at this site"
    return entry
