"""render/aggregations.py against bpftrace 0.17's own output for the same
maps (bpftrace -e 'BEGIN { @h = hist(5); @h = hist(0); @h = hist(1500);
@h = hist(-3); @h = hist(5); @c["a"] = count(); @c["b"] = count();
@c["b"] = count(); @s = sum(-5); exit(); }', pasted below)."""
from __future__ import annotations

import json
import struct

from gs_cgen.plan.model import AggregationKey, AggregationKeyKind, AggregationPlan
from gs_cgen.render.aggregations import (AggregationSnapshot, bucket_label, render_json,
                                         render_plain)
from tests.fakes import CHAR_PTR, COLOR

BPFTRACE_HIST = """\
@h: 
(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[1]                    0 |                                                    |
[2, 4)                 0 |                                                    |
[4, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[8, 16)                0 |                                                    |
[16, 32)               0 |                                                    |
[32, 64)               0 |                                                    |
[64, 128)              0 |                                                    |
[128, 256)             0 |                                                    |
[256, 512)             0 |                                                    |
[512, 1K)              0 |                                                    |
[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |

"""


def aggregation(kind, keys=(), signed=True, name="h"):
    size = 8 + sum(k.size for k in keys)
    return AggregationPlan(0, name, kind, tuple(keys), size,
                           None if kind == "count" else "long", signed)


def string_key(offset=8):
    return AggregationKey("p->name", AggregationKeyKind.STRING, CHAR_PTR, "char *", offset, 64)


def key_bytes(*fields: bytes, status: int = 0) -> bytes:
    return bytes([status]) + bytes(7) + b"".join(fields)


def test_histogram_equals_bpftraces():
    buckets = [0] * 66 + [0]      # 66 buckets, then the sum
    for index in (0, 1, 4, 4, 12):        # -3, 0, 5, 5, 1500
        buckets[index] += 1
    snapshot = AggregationSnapshot(aggregation("hist"), ((key_bytes(), tuple(buckets)),))
    assert render_plain(snapshot) == BPFTRACE_HIST


def test_bucket_labels_use_bpftraces_suffixes():
    assert [bucket_label(i) for i in (0, 1, 2, 3, 11, 12, 22, 32, 65)] == [
        "(..., 0)", "[0]", "[1]", "[2, 4)", "[512, 1K)", "[1K, 2K)", "[1M, 2M)", "[1G, 2G)",
        "[8E, 16E)"]


def test_keyed_counts_sorted_by_value_strings_quoted_errors_last():
    plan = aggregation("count", [string_key()], name="c")
    name = lambda text: text.encode().ljust(64, b"\0")  # noqa: E731
    snapshot = AggregationSnapshot(plan, (
        (key_bytes(name("b")), (2,)), (key_bytes(bytes(64), status=1), (4,)),
        (key_bytes(name("a")), (1,))))
    assert render_plain(snapshot) == ('@c["a"]: 1\n@c["b"]: 2\n'
                                      "@c[<error: null pointer dereference>]: 4\n")


def test_enum_keys_signed_sums_and_dropped():
    key = AggregationKey("g_color", AggregationKeyKind.SCALAR, COLOR, "enum color", 8, 8)
    plan = aggregation("sum", [key], name="s")
    snapshot = AggregationSnapshot(plan, (
        (key_bytes(struct.pack("<Q", 5)), ((-5) & (2**64 - 1),)),), dropped=3)
    assert render_plain(snapshot) == ("@s[color::GREEN]: -5\n"
                                      "@s: 3 hits dropped (more than 4096 keys)\n")


def test_keyless_count_never_hit_is_zero():
    assert render_plain(AggregationSnapshot(aggregation("count", name="calls"), ())) == \
        "@calls: 0\n"


def test_json_one_object_per_aggregation():
    plan = aggregation("count", [string_key()], name="c")
    snapshot = AggregationSnapshot(plan, (
        (key_bytes(b"a".ljust(64, b"\0")), (1,)), (key_bytes(bytes(64), status=2), (2,))))
    assert json.loads(render_json(snapshot)) == {
        "aggregation": "c", "kind": "count", "dropped": 0, "entries": [
            {"key": ["a"], "value": 1},
            {"key": None, "error": "read failed", "hits": 2, "value": 2}]}


def test_json_error_key_of_a_sum_has_hits_but_no_value():
    """What a sum would add was not read: its hits are known, its value not
    (a count's value is its hits, as plain output prints it)."""
    plan = aggregation("sum", [string_key()], name="s")
    snapshot = AggregationSnapshot(plan, ((key_bytes(bytes(64), status=2), (3, 0)),))
    assert json.loads(render_json(snapshot))["entries"] == [
        {"key": None, "error": "read failed", "hits": 3, "value": None}]
