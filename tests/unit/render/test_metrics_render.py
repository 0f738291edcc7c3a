"""render/metrics.py: aggregation snapshots and probe statistics as the
Prometheus exposition text prometheus_client writes for them (escaped
label values, cumulative `le` buckets, read errors and dropped hits as
their own series), parsed back by prometheus_client's own parser; and the
names --metrics refuses before anything is attached."""
from __future__ import annotations

import dataclasses
import struct

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gs_cgen.errors import PlanError
from gs_cgen.plan.model import AggregationKey, AggregationKeyKind, AggregationPlan
from gs_cgen.render.aggregations import AggregationSnapshot
from gs_cgen.render.metrics import check_metric_names, cumulative_buckets, metric_families
from gs_cgen.runtime.stats import ProbeStats
from tests.fakes import CHAR_PTR, COLOR

_U64 = 2**64 - 1


def aggregation(kind, keys=(), name="h", signed=True):
    return AggregationPlan(0, name, kind, tuple(keys), 8 + sum(k.size for k in keys),
                           None if kind == "count" else "long", signed)


def string_key(label="method", offset=8):
    return AggregationKey("req->method", AggregationKeyKind.STRING, CHAR_PTR, "char *",
                          offset, 64, label)


def enum_key(label="color", offset=8):
    return AggregationKey("g_color", AggregationKeyKind.SCALAR, COLOR, "enum color", offset, 8,
                          label)


def key_bytes(*fields: bytes, status: int = 0) -> bytes:
    return bytes([status]) + bytes(7) + b"".join(fields)


def text(data: bytes) -> bytes:
    return data.ljust(64, b"\0")


def exposition(snapshots, probes=()) -> str:
    class Collector:
        def collect(self):
            return metric_families(snapshots, list(probes))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return generate_latest(registry).decode()


def samples(page: str) -> list[str]:
    return [line for line in page.splitlines() if not line.startswith("#")]


def test_a_keyed_count_is_a_counter_with_escaped_label_values():
    plan = aggregation("count", [string_key()], name="requests")
    snapshot = AggregationSnapshot(plan, (
        (key_bytes(text(b'GET')), (3,)),
        (key_bytes(text(b'a"b\\c\nd')), (1,)),
        (key_bytes(text(b"caf\xc3\xa9 \xff")), (2,))))
    page = exposition([snapshot])
    assert samples(page)[:3] == [
        'gs_cgen_requests_total{method="GET"} 3.0',
        'gs_cgen_requests_total{method="a\\"b\\\\c\\nd"} 1.0',
        'gs_cgen_requests_total{method="café \\\\xff"} 2.0']
    assert "# TYPE gs_cgen_requests_total counter" in page
    (family, *_) = text_string_to_metric_families(page)
    assert {s.labels["method"]: s.value for s in family.samples} == {
        "GET": 3, 'a"b\\c\nd': 1, "café \\xff": 2}


def test_read_errors_and_dropped_hits_are_their_own_counters():
    plan = aggregation("count", [string_key()], name="requests")
    snapshot = AggregationSnapshot(plan, (
        (key_bytes(text(b"GET")), (3,)),
        (key_bytes(bytes(64), status=1), (4,)),
        (key_bytes(bytes(64), status=2), (5,))), dropped=7)
    assert samples(exposition([snapshot]))[:4] == [
        'gs_cgen_requests_total{method="GET"} 3.0',
        'gs_cgen_requests_read_errors_total{reason="null pointer dereference"} 4.0',
        'gs_cgen_requests_read_errors_total{reason="read failed"} 5.0',
        "gs_cgen_requests_dropped_total 7.0"]


def test_a_histogram_has_every_power_of_2_bucket_cumulative_and_its_sum():
    buckets = [0] * 66
    for index in (0, 1, 4, 4, 12):        # -3, 0, 5, 5, 1500
        buckets[index] += 1
    words = tuple(buckets) + (1507 & _U64,)
    plan = aggregation("hist", [enum_key()], name="sizes")
    page = exposition([AggregationSnapshot(plan, ((key_bytes(struct.pack("<Q", 5)), words),))])
    lines = samples(page)
    bucket_lines = [line for line in lines if line.startswith("gs_cgen_sizes_bucket")]
    # le: 0, then 2^k - 1 for k = 1..64 (the largest integer below 2^k), +Inf.
    assert len(bucket_lines) == 1 + 64 + 1
    assert bucket_lines[:6] == [
        'gs_cgen_sizes_bucket{color="GREEN",le="0"} 2.0',
        'gs_cgen_sizes_bucket{color="GREEN",le="1"} 2.0',
        'gs_cgen_sizes_bucket{color="GREEN",le="3"} 2.0',
        'gs_cgen_sizes_bucket{color="GREEN",le="7"} 4.0',
        'gs_cgen_sizes_bucket{color="GREEN",le="15"} 4.0',
        'gs_cgen_sizes_bucket{color="GREEN",le="31"} 4.0']
    assert 'gs_cgen_sizes_bucket{color="GREEN",le="1023"} 4.0' in lines
    assert 'gs_cgen_sizes_bucket{color="GREEN",le="2047"} 5.0' in lines
    assert bucket_lines[-2:] == ['gs_cgen_sizes_bucket{color="GREEN",le="18446744073709551615"} 5.0',
                                 'gs_cgen_sizes_bucket{color="GREEN",le="+Inf"} 5.0']
    assert 'gs_cgen_sizes_count{color="GREEN"} 5.0' in lines
    assert 'gs_cgen_sizes_sum{color="GREEN"} 1507.0' in lines
    counts = [float(line.rsplit(" ", 1)[1]) for line in bucket_lines]
    assert counts == sorted(counts)


def test_cumulative_buckets_put_each_value_at_its_le():
    """A value v lands in the first le >= v, as Prometheus reads le."""
    for value in (0, 1, 2, 3, 4, 7, 8, 1023, 1024, 2**62, 2**63 - 1):
        buckets = [0] * 66
        buckets[1 if value == 0 else 2 + value.bit_length() - 1] = 1
        first = next(le for le, count in cumulative_buckets(tuple(buckets)) if count)
        previous = [le for le, _ in cumulative_buckets(tuple(buckets))]
        before = previous[previous.index(first) - 1] if first != "0" else None
        assert int(first) >= value and (before is None or int(before) < value), value


def test_a_signed_sum_is_a_gauge_and_a_keyless_count_is_zero_before_its_first_hit():
    total = aggregation("sum", name="bytes")
    calls = aggregation("count", name="calls")
    page = exposition([AggregationSnapshot(total, (((key_bytes()), ((-5) & _U64,)),)),
                       AggregationSnapshot(calls, ())])
    assert "# TYPE gs_cgen_bytes gauge" in page
    assert samples(page) == ["gs_cgen_bytes -5.0", "gs_cgen_calls_total 0.0"]


def test_probe_statistics_one_series_per_pattern_and_site():
    rows = [ProbeStats("record", "app+0x1155", 10, 2_500_000_000, 4, 1),
            ProbeStats("record", "app+0x1155", 5, 500_000_000, 1, 0),
            ProbeStats("serve:return", "app+0x1200", 3, 0, 0, 0)]
    lines = samples(exposition([], rows))
    assert lines == [
        'gs_cgen_probe_hits_total{probe="record",site="app+0x1155"} 15.0',
        'gs_cgen_probe_hits_total{probe="serve:return",site="app+0x1200"} 3.0',
        'gs_cgen_probe_seconds_total{probe="record",site="app+0x1155"} 3.0',
        'gs_cgen_probe_seconds_total{probe="serve:return",site="app+0x1200"} 0.0',
        'gs_cgen_events_sent_total{probe="record",site="app+0x1155"} 5.0',
        'gs_cgen_events_sent_total{probe="serve:return",site="app+0x1200"} 0.0',
        'gs_cgen_events_lost_total{probe="record",site="app+0x1155"} 1.0',
        'gs_cgen_events_lost_total{probe="serve:return",site="app+0x1200"} 0.0']


def test_keys_that_read_the_same_are_one_series_a_key_seen_twice_counts_once():
    """Bytes after a string's NUL are not its text; a hash map walk that
    meets a key twice (the kernel moved it) meets one key."""
    plan = aggregation("count", [string_key()], name="requests")
    snapshot = AggregationSnapshot(plan, ((key_bytes(text(b"ab")), (1,)),
                                          (key_bytes(text(b"ab\0c")), (2,)),
                                          (key_bytes(text(b"ab\0c")), (2,))))
    assert samples(exposition([snapshot]))[0] == 'gs_cgen_requests_total{method="ab"} 3.0'


@pytest.mark.parametrize("plans, message", [
    ([aggregation("count", name="probe_hits")],
     "'@probe_hits' and gs-cgen's per-probe metrics would both be the metric "
     "gs_cgen_probe_hits"),
    ([aggregation("count", name="a"), aggregation("sum", name="a_total")],
     "'@a_total' and '@a' would both be the metric gs_cgen_a_total"),
    ([aggregation("count", [string_key()], name="a"),
      aggregation("count", name="a_dropped")],
     "'@a_dropped' and '@a' would both be the metric gs_cgen_a_dropped"),
    ([aggregation("hist", [string_key("le")])],
     "'@h' cannot have a label 'le': a histogram's 'le' label holds its bucket bounds"),
    ([aggregation("count", [string_key("__name")])],
     "'@h' cannot have a label '__name': names starting with '__' are Prometheus' own"),
    ([aggregation("count", [string_key("k"), dataclasses.replace(enum_key("k"), offset=72)])],
     "'@h' cannot have a label 'k': two keys have this name"),
])
def test_names_metrics_cannot_serve_are_errors(plans, message):
    with pytest.raises(PlanError) as error:
        check_metric_names(tuple(plans))
    assert error.value.message.startswith("--metrics: " + message)


def test_distinct_names_pass():
    check_metric_names((aggregation("count", [string_key()], name="requests"),
                        aggregation("hist", [enum_key()], name="sizes"),
                        aggregation("sum", name="bytes")))
