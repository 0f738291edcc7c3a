"""Precompiled render plans: one probe's events → text, fast.

The general path (decode.py → value trees → lines.py) costs tens of
microseconds per event. Most events are simpler: every value read fine
and is a number. For those a probe gets, once, a `struct.Struct` that
unpacks the header fields, the executed-lines bitmap and each value's status
byte and number in one call, and per line a %-format string, compiled
into a function of those fields (render/formatter.py). Anything
else in an event (a failed read, a string, a struct, a dump, a backtrace, a
failed condition) sends that event down the general path, so the text is
the same either way: tests/unit/render/test_plans.py holds the two to it.
"""
from __future__ import annotations

import json
import struct
from operator import itemgetter
from typing import Callable

from gs_cgen.abi import abi
from gs_cgen.dwarf.types import (BoolType, EnumType, FloatFormat, FloatType, IntType,
                                 PointerType, strip, type_name, type_size)
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import (ExprLine, FormatLine, MemoryCapture, ProbePlan, ScalarCapture,
                                ScriptString, SlotRef, ValueSlot)
from gs_cgen.render.decode import decode, memory_value, scalar_value
from gs_cgen.render.formatter import compile_format
from gs_cgen.render.lines import render_json, render_lines
from gs_cgen.render.text import escape_bytes, format_value, value_json
from gs_cgen.script.ast import FormatKind

# renderer(buffer, offset, size) -> (text, count): the event's output with a
# newline after each line, and how many lines (JSON: 1 or 0 objects).
Renderer = Callable[[object, int, int], tuple[str, int]]

_SIGNED = {1: "b", 2: "h", 4: "i", 8: "q"}
_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}
_HEADER_FIELDS = ("pid", "tid", "timestamp_ns")
# %-conversions that render an unsigned number as these specifiers do
_DIRECT_NUMBER = {FormatKind.HEX: "%x", FormatKind.HEX_UPPER: "%X", FormatKind.POINTER: "0x%x"}
_NUMBER_TYPES = (IntType, BoolType, EnumType, PointerType, FloatType)


def build_renderer(probe: ProbePlan, style: str, resolve_frame=None) -> Renderer:
    """`style` is "plain" or "json"; `resolve_frame` names `bt` frames on
    the general path (see runtime/symbolize.py)."""
    general = _general_renderer(probe, style, resolve_frame)
    plan = _compile(probe)
    if plan is None:
        return general
    if style == "json":
        return _json_renderer(plan, probe, general)
    return _plain_renderer(plan, general)


# ---------------------------------------------------------------- general

def _general_renderer(probe: ProbePlan, style: str, resolve_frame) -> Renderer:
    def plain(buffer, offset: int, size: int) -> tuple[str, int]:
        lines = render_lines(decode(bytes(buffer[offset:offset + size]), probe), probe,
                             resolve_frame)
        return "".join(line + "\n" for line in lines), len(lines)

    def as_json(buffer, offset: int, size: int) -> tuple[str, int]:
        event = decode(bytes(buffer[offset:offset + size]), probe)
        if not event.executed:
            return "", 0
        return render_json(event, probe, resolve_frame) + "\n", 1

    return as_json if style == "json" else plain


# ------------------------------------------------------------ compilation

@dataclass(frozen=True)
class _Number:
    """How one placeholder's value is read and shown: struct code of its
    number, %-conversion, and converters (None: the number as is) to the
    plain text and the JSON value text."""

    code: str
    conversion: str
    text: Callable[[int], str] | None
    json_value: Callable[[int], str] | None


@dataclass(frozen=True)
class _Line:
    """One rendered line. Indices are into the tuple the plan's struct
    unpacks; converters (None: the number as is) apply to the values in
    order."""

    word: int                     # its executed-bitmap word
    mask: int
    general: bool                 # only the general path renders it
    statuses: tuple[int, ...] = ()
    values: tuple[int, ...] = ()
    plain: str = ""               # %-format of the line
    text_converters: tuple = ()
    json_line: str = ""           # %-format of the line as a JSON string, inside its quotes
    json_line_converters: tuple = ()
    json_values: str = ""         # %-format of its "values" entries, joined by ", "
    json_value_converters: tuple = ()

    @property
    def zeros(self) -> tuple[int, ...]:
        return (0,) * len(self.statuses)


@dataclass(frozen=True)
class _Plan:
    reader: struct.Struct
    header: tuple[int, ...]       # pid, tid, timestamp_ns
    lines: tuple[_Line, ...]


class _Layout:
    """Fields to unpack at fixed event offsets, in one struct format."""

    def __init__(self) -> None:
        self.fields: dict[tuple[int, str], int] = {}

    def add(self, offset: int, code: str) -> tuple[int, str]:
        self.fields.setdefault((offset, code), len(self.fields))
        return offset, code

    def compile(self) -> tuple[struct.Struct, dict[tuple[int, str], int]] | None:
        """The struct and, per field, its index in the unpacked tuple; None
        when two fields overlap."""
        parts, position, index = ["<"], 0, {}
        for offset, code in sorted(self.fields):
            if offset < position:
                return None
            if offset > position:
                parts.append(f"{offset - position}x")
            parts.append(code)
            index[(offset, code)] = len(index)
            position = offset + struct.calcsize("<" + code)
        return struct.Struct("".join(parts)), index


def _compile(probe: ProbePlan) -> _Plan | None:
    layout = _Layout()
    hdr = abi().structs["gs_event_hdr"]
    header_keys = [layout.add(hdr.field(name).offset, hdr.field(name).format)
                   for name in _HEADER_FIELDS]
    pending = [_line_fields(line, probe, layout) for line in probe.lines]
    compiled = layout.compile()
    if compiled is None:
        return None
    reader, index = compiled
    lines = tuple(_make_line(fields, index) for fields in pending)
    if all(line.general for line in lines):
        return None
    return _Plan(reader, tuple(index[key] for key in header_keys), lines)


def _line_fields(line, probe: ProbePlan, layout: _Layout) -> dict:
    """What a line needs from the event, registered in `layout`; only its
    executed bit when the general path must render it."""
    word = layout.add(probe.bitmap_offset + 8 * (line.bit // 64), "Q")
    found = dict(word=word, mask=1 << (line.bit % 64), general=True)
    if isinstance(line, ExprLine):
        pieces: tuple = (f"{line.text} = ", SlotRef(line.slot, FormatKind.DEFAULT))
    elif isinstance(line, FormatLine):
        pieces = line.pieces
    else:
        return found
    if not all(isinstance(p, (str, SlotRef, ScriptString)) for p in pieces):
        return found
    slots = [probe.slots[p.slot] for p in pieces if isinstance(p, SlotRef)]
    numbers = [_number(slot, p.kind) for slot, p in
               zip(slots, [p for p in pieces if isinstance(p, SlotRef)])]
    if any(number is None for number in numbers):
        return found
    found.update(general=False, pieces=pieces, numbers=numbers, slots=slots,
                 statuses=[layout.add(slot.offset, "B") for slot in slots],
                 values=[layout.add(slot.data_offset, number.code)
                         for slot, number in zip(slots, numbers)])
    return found


def _make_line(fields: dict, index) -> _Line:
    word, mask = index[fields["word"]], fields["mask"]
    if fields["general"]:
        return _Line(word, mask, True)
    pieces, numbers, slots = fields["pieces"], fields["numbers"], fields["slots"]
    value_indices = [index[key] for key in fields["values"]]
    paired = _pair(pieces, numbers)
    plain = "".join(n.conversion if n else _literal(p) for p, n in paired)
    json_line = "".join(n.conversion if n else _json_literal(p) for p, n in paired)
    return _Line(
        word, mask, False,
        statuses=tuple(index[key] for key in fields["statuses"]),
        values=tuple(value_indices),
        plain=plain,
        text_converters=tuple(n.text for n in numbers),
        json_line=json_line,
        json_line_converters=tuple(n.text and _json_escaped(n.text) for n in numbers),
        json_values=", ".join(_json_value_entry(slot, n) for slot, n in zip(slots, numbers)),
        json_value_converters=tuple(n.json_value for n in numbers))


def _pair(pieces, numbers):
    """Each piece with its _Number (None for literal pieces)."""
    numbers = iter(numbers)
    return [(p, next(numbers) if isinstance(p, SlotRef) else None) for p in pieces]


def _piece_text(piece) -> str:
    if isinstance(piece, ScriptString):
        return f'"{escape_bytes(piece.value, quoted=True)}"'
    return piece


def _literal(piece) -> str:
    return _piece_text(piece).replace("%", "%%")


def _json_literal(piece) -> str:
    return _json_text(_piece_text(piece)).replace("%", "%%")


def _json_text(text: str) -> str:
    """`text` as json.dumps writes it inside a string's quotes (per
    character, so pieces escaped apart join into the whole's escape)."""
    return json.dumps(text)[1:-1]


def _json_value_entry(slot: ValueSlot, number: _Number) -> str:
    ctype = slot.ctype
    head = json.dumps({"expr": slot.expr_text,
                       "type": type_name(ctype) if ctype is not None else "long"})[:-1]
    conversion = "%d" if number.json_value is None else "%s"
    return f'{head.replace("%", "%%")}, "value": {conversion}, "status": "ok"}}'


def _getter(indices) -> Callable:
    """unpacked tuple -> tuple of the items at `indices` (always a tuple)."""
    if not indices:
        return lambda fields: ()
    if len(indices) == 1:
        only = indices[0]
        return lambda fields: (fields[only],)
    return itemgetter(*indices)


def _json_escaped(text: Callable[[int], str]) -> Callable[[int], str]:
    return lambda number: _json_text(text(number))


# ----------------------------------------------------------- value kinds

def _number(slot: ValueSlot, kind: FormatKind) -> _Number | None:
    """How a placeholder reads and shows its value from one number, when
    it can: a whole scalar of 1, 2, 4 or 8 bytes."""
    capture = slot.capture
    match capture:
        case ScalarCapture(ctype=ctype):
            width = 8 if ctype is None else type_size(ctype)
            rebuild = lambda number: scalar_value(ctype, number)            # noqa: E731
            raw_code = "Q"                                                  # the 64-bit register
        case MemoryCapture(ctype=ctype, size=size) if ctype is not None and size == type_size(ctype):
            width = size
            rebuild = lambda number: memory_value(ctype, number.to_bytes(size, "little"),  # noqa: E731
                                                  size, 0)
            raw_code = _UNSIGNED.get(size)
        case _:
            return None
    base = None if ctype is None else strip(ctype)
    if width not in _UNSIGNED or raw_code is None or \
            not (base is None or _number_type(base)):
        return None
    if kind is FormatKind.DEFAULT and (base is None or isinstance(base, IntType)):
        signed = base is None or base.signed
        return _Number((_SIGNED if signed else _UNSIGNED)[width], "%d", None, None)
    as_json = _memo(lambda n: json.dumps(value_json(rebuild(n))), base)
    if kind in _DIRECT_NUMBER and (base is None or isinstance(base, (IntType, EnumType,
                                                                     PointerType))):
        # The bits at the value's width; rebuild() takes those too (it
        # wraps a register's number to the width anyway).
        return _Number(_UNSIGNED[width], _DIRECT_NUMBER[kind], None, as_json)
    return _Number(raw_code, "%s", _memo(lambda n: format_value(rebuild(n), kind), base),
                   as_json)


def _number_type(base) -> bool:
    if isinstance(base, FloatType):
        return base.format in (FloatFormat.BINARY32, FloatFormat.BINARY64)
    return isinstance(base, _NUMBER_TYPES)


def _memo(convert: Callable[[int], str], base) -> Callable[[int], str]:
    """Bools and enums take few values: remember their text."""
    if not isinstance(base, (BoolType, EnumType)):
        return convert
    seen: dict[int, str] = {}

    def remembered(number: int) -> str:
        text = seen.get(number)
        if text is None:
            text = seen[number] = convert(number)
        return text
    return remembered


# -------------------------------------------------------------- rendering

def _plain_renderer(plan: _Plan, general: Renderer) -> Renderer:
    read = plan.reader.unpack_from
    # Tuples, unpacked in the loop: cheaper than attribute lookups per event.
    steps = tuple((line.word, line.mask, line.general, _getter(line.statuses), line.zeros,
                   compile_format(line.plain + "\n", line.values, line.text_converters))
                  for line in plan.lines)
    if len(steps) == 1 and not steps[0][2]:
        return _plain_single_line(read, plan.reader.size, steps[0], general)

    need = plan.reader.size

    def plain(buffer, offset: int, size: int) -> tuple[str, int]:
        if size < need:                  # not an event this probe sends
            return general(buffer, offset, size)
        fields = read(buffer, offset)
        out = []
        for word, mask, only_general, statuses, zeros, text in steps:
            if fields[word] & mask:
                if only_general or statuses(fields) != zeros:
                    return general(buffer, offset, size)
                out.append(text(fields))
        return "".join(out), len(out)
    return plain


def _plain_single_line(read, need: int, step, general: Renderer) -> Renderer:
    """The common probe: one `print`."""
    word, mask, _, statuses, zeros, text = step
    return _one_line(read, need, word, mask, statuses, zeros, text, general)


def _one_line(read, need: int, word: int, mask: int, statuses, zeros, text,
              general: Renderer) -> Renderer:
    """An event of one `print` rendered by one compiled format when the
    line ran and every value read fine; anything else goes the general way."""
    def render(buffer, offset: int, size: int) -> tuple[str, int]:
        if size < need:
            return general(buffer, offset, size)
        fields = read(buffer, offset)
        if not fields[word] & mask:
            return "", 0
        if statuses(fields) != zeros:
            return general(buffer, offset, size)
        return text(fields), 1
    return render


def _json_renderer(plan: _Plan, probe: ProbePlan, general: Renderer) -> Renderer:
    read, lines = plan.reader.unpack_from, plan.lines
    head = ('{"trace": ' + json.dumps(probe.site.pattern_text).replace("%", "%%") +
            ', "pid": %d, "tid": %d, "timestamp_ns": %d, "lines": [')
    if len(lines) == 1 and not lines[0].general:
        return _json_single_line(read, plan, head, general)
    header = compile_format(head, plan.header)
    steps = tuple((line.word, line.mask, line.general, _getter(line.statuses), line.zeros,
                   compile_format('"' + line.json_line + '"', line.values, line.json_line_converters),
                   line.json_values and compile_format(line.json_values, line.values,
                                                       line.json_value_converters))
                  for line in lines)

    need = plan.reader.size

    def as_json(buffer, offset: int, size: int) -> tuple[str, int]:
        if size < need:
            return general(buffer, offset, size)
        fields = read(buffer, offset)
        texts, values = [], []
        for word, mask, only_general, statuses, zeros, text, value in steps:
            if fields[word] & mask:
                if only_general or statuses(fields) != zeros:
                    return general(buffer, offset, size)
                texts.append(text(fields))
                if value:
                    values.append(value(fields))
        if not texts:
            return "", 0
        return (header(fields) + ", ".join(texts) + '], "values": [' +
                ", ".join(values) + "]}\n"), 1
    return as_json


def _json_single_line(read, plan: _Plan, head: str, general: Renderer) -> Renderer:
    """One `print`: the whole object is one compiled format over the header
    fields, the line's values and the values' entries."""
    line = plan.lines[0]
    word, mask, statuses, zeros = line.word, line.mask, _getter(line.statuses), line.zeros
    text = compile_format(f'{head}"{line.json_line}"], "values": [{line.json_values}]}}\n',
                          plan.header + line.values * 2,
                          (None,) * len(plan.header) + line.json_line_converters
                          + line.json_value_converters)
    return _one_line(read, plan.reader.size, word, mask, statuses, zeros, text, general)
