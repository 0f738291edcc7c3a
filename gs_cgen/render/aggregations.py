"""Aggregation maps → text, as bpftrace prints its maps (plain) or one JSON
object per aggregation (CONTRACT.md "Aggregations"). Pure: the runtime
hands over each map's keys and its values summed over the CPUs.

Plain, like bpftrace 0.17: `@NAME[KEY, ...]: VALUE` lines sorted by value
(smallest first, so the largest is next to the prompt), `@NAME: VALUE`
without keys; a histogram is `@NAME[KEY]:` and then one row per bucket from
the lowest to the highest non-empty one, `[lo, hi)  count |@@@@|` (label
16 columns, count 8) with a 52-character bar scaled to the largest bucket,
bpftrace's labels (`(..., 0)`, `[0]`, `[1]`, `[2, 4)`, ..., `[1K, 2K)`,
`[1M, 2M)`), and a blank line after it (checked against bpftrace 0.17's
own output). Keys render like values (strings quoted,
enums `Status::ACTIVE`, pointers 0x...); a key that could not be read is
`<error: reason>`, and its value counts its hits (for sum and hist too:
`N hits`, since what they would add was not read).
"""
from __future__ import annotations

import json

from gs_cgen.abi import abi
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import AggregationKeyKind, AggregationPlan
from gs_cgen.render.status import ValueStatus, status_of
from gs_cgen.render.text import format_value, value_json
from gs_cgen.render.values import StringValue, decode_integer

_BAR_WIDTH = 52
_U64 = (1 << 64) - 1
_SUFFIXES = ("", "K", "M", "G", "T", "P", "E")
_ERROR_REASONS = {
    ValueStatus.NULL_DEREF: "null pointer dereference",
    ValueStatus.READ_ERROR: "read failed",
    ValueStatus.ACCESS_ERROR: "read failed",
    ValueStatus.OPTIMIZED_OUT: "optimized out",
    ValueStatus.OFFSETS_UNAVAILABLE: "offsets unavailable",
}


@dataclass(frozen=True)
class AggregationSnapshot:
    """One aggregation as read from its map: (key bytes, value words summed
    over CPUs) per key, and the hits whose new key did not fit."""

    aggregation: AggregationPlan
    entries: tuple[tuple[bytes, tuple[int, ...]], ...]
    dropped: int = 0


@dataclass(frozen=True)
class _Entry:
    key_texts: tuple[str, ...]
    key_json: tuple[object, ...]
    error: str | None            # the reason of an <error> key
    words: tuple[int, ...]


def render_aggregations(snapshots, style: str) -> str:
    """Every aggregation, in script order: plain text or JSON lines."""
    render = render_json if style == "json" else render_plain
    return "".join(render(snapshot) for snapshot in snapshots)


# ------------------------------------------------------------------ plain

def render_plain(snapshot: AggregationSnapshot) -> str:
    aggregation = snapshot.aggregation
    entries = _sorted(aggregation, [_entry(aggregation, k, v) for k, v in snapshot.entries])
    lines: list[str] = []
    if not entries and not aggregation.keys and aggregation.kind != "hist":
        lines.append(f"@{aggregation.name}: 0")        # bpftrace: a count never hit is absent
    for entry in entries:
        lines.extend(_plain_entry(aggregation, entry))
    if snapshot.dropped:
        lines.append(f"@{aggregation.name}: {snapshot.dropped} hits dropped (more than "
                     f"{abi().constants['GS_AGG_MAX_KEYS']} keys)")
    return "".join(line + "\n" for line in lines)


def _plain_entry(aggregation: AggregationPlan, entry: _Entry) -> list[str]:
    name = f"@{aggregation.name}" + (f"[{', '.join(entry.key_texts)}]" if entry.key_texts
                                     else "")
    if entry.error is not None:
        hits = entry.words[0]
        return [f"{name}: {hits}" if aggregation.kind == "count" else f"{name}: {hits} hits"]
    if aggregation.kind == "hist":
        return [f"{name}: ", *hist_rows(hist_buckets(entry.words)), ""]
    return [f"{name}: {_scalar(aggregation, entry.words[0])}"]


def hist_rows(buckets: tuple[int, ...]) -> list[str]:
    """bpftrace's hist() rows, lowest to highest non-empty bucket."""
    used = [i for i, count in enumerate(buckets) if count]
    if not used:
        return []
    top = max(buckets)
    rows = []
    for index in range(used[0], used[-1] + 1):
        count = buckets[index]
        bar = "@" * (count * _BAR_WIDTH // top) if top else ""
        rows.append(f"{bucket_label(index):<16}{count:>8} |{bar:<{_BAR_WIDTH}}|")
    return rows


def hist_buckets(words: tuple[int, ...]) -> tuple[int, ...]:
    """A gs_agg_hist's bucket counts (its words before the sum)."""
    return words[:abi().constants["GS_AGG_HIST_BUCKETS"]]


def hist_sum(aggregation: AggregationPlan, words: tuple[int, ...]) -> int:
    """The sum of a histogram's values (signed when they are)."""
    word = words[abi().constants["GS_AGG_HIST_BUCKETS"]]
    return word - (1 << 64) if aggregation.value_signed and word >> 63 else word


def bucket_label(index: int) -> str:
    """bucket 0: negative values, 1: zero, 2 + k: [2^k, 2^(k+1))."""
    if index == 0:
        return "(..., 0)"
    if index == 1:
        return "[0]"
    if index == 2:
        return "[1]"
    low = 1 << (index - 2)
    return f"[{_power_label(low)}, {_power_label(low * 2)})"


def _power_label(value: int) -> str:
    """2^k as bpftrace writes it: 512, 1K, 2M, 16E ..."""
    power = value.bit_length() - 1
    suffix = min(power // 10, len(_SUFFIXES) - 1)
    return f"{value >> (10 * suffix)}{_SUFFIXES[suffix]}"


def _scalar(aggregation: AggregationPlan, word: int) -> int:
    if aggregation.kind == "sum" and aggregation.value_signed and word >> 63:
        return word - (1 << 64)
    return word


# ------------------------------------------------------------------- json

def render_json(snapshot: AggregationSnapshot) -> str:
    aggregation = snapshot.aggregation
    entries = _sorted(aggregation, [_entry(aggregation, k, v) for k, v in snapshot.entries])
    document = {"aggregation": aggregation.name, "kind": aggregation.kind,
                "entries": [_json_entry(aggregation, e) for e in entries],
                "dropped": snapshot.dropped}
    return json.dumps(document) + "\n"


def _json_entry(aggregation: AggregationPlan, entry: _Entry) -> dict:
    if entry.error is not None:
        # A count counted them; a sum or hist did not read what it adds.
        value = entry.words[0] if aggregation.kind == "count" else None
        return {"key": None, "error": entry.error, "hits": entry.words[0], "value": value}
    if aggregation.kind == "hist":
        value = [{"bucket": bucket_label(i), "count": count}
                 for i, count in enumerate(hist_buckets(entry.words)) if count]
    else:
        value = _scalar(aggregation, entry.words[0])
    return {"key": list(entry.key_json), "value": value}


# ---------------------------------------------------------------- entries

def _entry(aggregation: AggregationPlan, key: bytes, words: tuple[int, ...]) -> _Entry:
    reason = key_error(key)
    if reason is not None:
        return _Entry((f"<error: {reason}>",), (), reason, words)
    values = key_values(aggregation, key)
    return _Entry(tuple(format_value(v) for v in values),
                  tuple(value_json(v) for v in values), None, words)


def key_error(key: bytes) -> str | None:
    """Why a key's `by` values (or the value added) could not be read;
    None for a key that holds them."""
    return _error_reason(key[0]) if key[0] else None


def key_values(aggregation: AggregationPlan, key: bytes) -> list:
    """The `by` values of a key that holds them, as render Values."""
    return [_key_value(field, key) for field in aggregation.keys]


def _key_value(field, key: bytes):
    data = key[field.offset:field.offset + field.size]
    if field.kind is AggregationKeyKind.STRING:
        return StringValue(field.ctype, data.split(b"\0", 1)[0], False, 0)
    return decode_integer(field.ctype, int.from_bytes(data, "little"))


def _error_reason(status: int) -> str:
    try:
        code = status_of(status)
    except (KeyError, ValueError):
        return f"status {status}"
    return _ERROR_REASONS.get(code, code.value.replace("_", " "))


def _sorted(aggregation: AggregationPlan, entries: list[_Entry]) -> list[_Entry]:
    """By value as bpftrace (a histogram by its total count), ties by key;
    <error> keys last."""
    def weight(entry: _Entry) -> int:
        if entry.error is not None or aggregation.kind != "sum":
            return sum(hist_buckets(entry.words)) \
                if aggregation.kind == "hist" and entry.error is None else entry.words[0]
        return _scalar(aggregation, entry.words[0])
    return sorted(entries, key=lambda e: (e.error is not None, weight(e), e.key_texts))
