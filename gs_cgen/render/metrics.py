"""Aggregations and per-probe statistics → Prometheus metric families
(CONTRACT.md "Metrics for Prometheus"). Pure: runtime/metrics.py reads the
maps at each scrape and hands over what render/aggregations.py prints;
prometheus_client writes the exposition (the text format or OpenMetrics,
as the scraper asks) and escapes the label values.

- `count NAME` → counter `gs_cgen_NAME_total`; `sum NAME` → gauge
  `gs_cgen_NAME`; `hist NAME` → histogram `gs_cgen_NAME` (`_bucket`,
  `_sum`, `_count`). The `by` keys are labels, named by plan/aggregations.py.
- A histogram's buckets are the map's power-of-2 ones, cumulative, with the
  same `le` set on every series (so `sum by (le)` across a fleet adds up):
  `le="0"` (the negative and the zero buckets: Prometheus' client exposes
  no _sum or _count for a histogram with a negative bound), then for k =
  1..64 `le="2^k-1"`, the largest integer of [2^(k-1), 2^k), then `+Inf`.
- Hits whose key (or value) could not be read are `gs_cgen_NAME_read_errors_total`
  by `reason`; hits dropped because the map was full,
  `gs_cgen_NAME_dropped_total`: counted, never silent.
- Per probe, labelled `probe` (its pattern) and `site` (module+0xADDR):
  `gs_cgen_probe_hits_total`, `gs_cgen_probe_seconds_total` (the kernel's
  BPF run time), `gs_cgen_events_sent_total`, `gs_cgen_events_lost_total`.
"""
from __future__ import annotations

from collections import defaultdict

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)

from gs_cgen.abi import abi
from gs_cgen.errors import PlanError
from gs_cgen.plan.model import AggregationPlan
from gs_cgen.render.aggregations import (AggregationSnapshot, hist_buckets, hist_sum,
                                         key_error, key_values)
from gs_cgen.render.values import BoolValue, EnumValue, IntValue, PointerValue, StringValue

PREFIX = "gs_cgen_"
# The per-probe counters, by family name (a counter's samples add _total).
PROBE_FAMILIES = {
    "probe_hits": "Times the probe ran.",
    "probe_seconds": "Time the probe's BPF programs ran, from the kernel's BPF statistics.",
    "events_sent": "Events the probe sent to gs-cgen.",
    "events_lost": "Events the probe made that gs-cgen never got (no room to send them).",
}
_NS_PER_SECOND = 1e9


# ------------------------------------------------------------------ names

def check_metric_names(aggregations: tuple[AggregationPlan, ...]) -> None:
    """Before anything is attached: every aggregation's metrics have names
    of their own, and labels Prometheus accepts. PlanError otherwise."""
    owners: dict[str, str] = {name: "gs-cgen's per-probe metrics"
                              for family in PROBE_FAMILIES
                              for name in _counter_names(PREFIX + family)}
    for aggregation in aggregations:
        _check_labels(aggregation)
        for name in _metric_names(aggregation):
            other = owners.setdefault(name, f"'@{aggregation.name}'")
            if other != f"'@{aggregation.name}'":
                raise PlanError(f"--metrics: '@{aggregation.name}' and {other} would both "
                                f"be the metric {name}", aggregation.span,
                                hints=("rename the aggregation",))


def _metric_names(aggregation: AggregationPlan) -> list[str]:
    """The family and sample names of an aggregation's metrics."""
    base = PREFIX + aggregation.name
    names = {"count": _counter_names(base), "sum": [base],
             "hist": [base] + [base + s for s in ("_bucket", "_sum", "_count")]}
    return names[aggregation.kind] + _counter_names(base + "_read_errors") + \
        _counter_names(base + "_dropped")


def _counter_names(family: str) -> list[str]:
    return [family, family + "_total"]


def _check_labels(aggregation: AggregationPlan) -> None:
    labels = [key.label for key in aggregation.keys]
    for label in labels:
        problem = None
        if label.startswith("__"):
            problem = "names starting with '__' are Prometheus' own"
        elif label == "le" and aggregation.kind == "hist":
            problem = "a histogram's 'le' label holds its bucket bounds"
        elif labels.count(label) > 1:
            problem = "two keys have this name"
        if problem:
            raise PlanError(f"--metrics: '@{aggregation.name}' cannot have a label '{label}': "
                            f"{problem}", aggregation.span,
                            hints=("name the key's label with 'by EXPR as LABEL'",))


# --------------------------------------------------------------- families

def metric_families(snapshots: list[AggregationSnapshot], probe_stats) -> list:
    """Every aggregation's metric families, in script order, then the
    per-probe ones (`probe_stats`: runtime/stats.py ProbeStats rows)."""
    families = []
    for snapshot in snapshots:
        families.extend(aggregation_families(snapshot))
    families.extend(probe_families(probe_stats))
    return families


def aggregation_families(snapshot: AggregationSnapshot) -> list:
    aggregation = snapshot.aggregation
    keyed, errors = _grouped(snapshot)
    families = [_FAMILIES[aggregation.kind](aggregation, keyed)]
    if aggregation.keys or aggregation.value_type is not None:
        read_errors = CounterMetricFamily(
            f"{PREFIX}{aggregation.name}_read_errors",
            f"Hits of @{aggregation.name} whose key or value could not be read.",
            labels=["reason"])
        for reason, hits in sorted(errors.items()):
            read_errors.add_metric([reason], hits)
        families.append(read_errors)
    if aggregation.keys:
        families.append(CounterMetricFamily(
            f"{PREFIX}{aggregation.name}_dropped",
            f"Hits of @{aggregation.name} not counted: its map had no room for a new key "
            f"(more than {abi().constants['GS_AGG_MAX_KEYS']}).", value=snapshot.dropped))
    return families


def _grouped(snapshot: AggregationSnapshot):
    """Words summed per label values (two map keys that read the same, or
    a key a map walk saw twice, make one series), and the hits of the keys
    that could not be read, per reason."""
    aggregation = snapshot.aggregation
    keyed: dict[tuple[str, ...], list[int]] = {}
    errors: dict[str, int] = defaultdict(int)
    for key, words in dict(snapshot.entries).items():
        reason = key_error(key)
        if reason is not None:
            errors[reason] += words[0]
            continue
        labels = tuple(label_value(v) for v in key_values(aggregation, key))
        known = keyed.setdefault(labels, [0] * len(words))
        for i, word in enumerate(words):
            known[i] = (known[i] + word) & ((1 << 64) - 1)
    if not aggregation.keys and () not in keyed:
        keyed[()] = [0] * _value_words(aggregation)     # 0 before the first hit, not absent
    return keyed, errors


def _value_words(aggregation: AggregationPlan) -> int:
    return abi().structs["gs_agg_hist"].size // 8 if aggregation.kind == "hist" else 1


def _counter(aggregation: AggregationPlan, keyed) -> CounterMetricFamily:
    family = CounterMetricFamily(PREFIX + aggregation.name, _help(aggregation),
                                 labels=_labels(aggregation))
    for labels, words in sorted(keyed.items()):
        family.add_metric(labels, words[0])
    return family


def _gauge(aggregation: AggregationPlan, keyed) -> GaugeMetricFamily:
    family = GaugeMetricFamily(PREFIX + aggregation.name, _help(aggregation),
                               labels=_labels(aggregation))
    for labels, words in sorted(keyed.items()):
        word = words[0]
        family.add_metric(labels, word - (1 << 64) if aggregation.value_signed and word >> 63
                          else word)
    return family


def _histogram(aggregation: AggregationPlan, keyed) -> HistogramMetricFamily:
    family = HistogramMetricFamily(PREFIX + aggregation.name, _help(aggregation),
                                   labels=_labels(aggregation))
    for labels, words in sorted(keyed.items()):
        family.add_metric(labels, cumulative_buckets(hist_buckets(tuple(words))),
                          hist_sum(aggregation, tuple(words)))
    return family


_FAMILIES = {"count": _counter, "sum": _gauge, "hist": _histogram}


def cumulative_buckets(buckets: tuple[int, ...]) -> list[tuple[str, int]]:
    """A gs_agg_hist's buckets (0: negative, 1: zero, 1 + k: [2^(k-1),
    2^k)) as Prometheus' cumulative (le, count) pairs, +Inf last."""
    total = buckets[0] + buckets[1]
    pairs = [("0", total)]
    for k in range(1, len(buckets) - 1):
        total += buckets[1 + k]
        pairs.append((str((1 << k) - 1), total))
    pairs.append(("+Inf", total))
    return pairs


def _labels(aggregation: AggregationPlan) -> list[str]:
    return [key.label for key in aggregation.keys]


def _help(aggregation: AggregationPlan) -> str:
    keys = ", ".join(key.text for key in aggregation.keys)
    return f"gs-cgen @{aggregation.name}: {aggregation.kind}" + (f" by {keys}" if keys else "")


def label_value(value) -> str:
    """A `by` value as a label value: a string's text, an enum's
    enumerator, true/false, a pointer in hex, an integer in decimal."""
    match value:
        case StringValue(data=data):
            return data.decode("utf-8", "backslashreplace")
        case EnumValue(enumerator=name, number=number):
            return name if name is not None else str(number)
        case BoolValue(flag=flag):
            return "true" if flag else "false"
        case PointerValue(address=address):
            return f"0x{address:x}"
        case IntValue(number=number):
            return str(number)
    raise TypeError(f"an aggregation key of {type(value).__name__}")


def probe_families(rows) -> list:
    """The per-probe counters; two probes of one pattern and site (two
    blocks tracing the same place) are one series, their numbers added."""
    totals: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        known = totals.setdefault((row.pattern, row.where), [0, 0.0, 0, 0])
        for i, number in enumerate((row.hits, row.run_time_ns / _NS_PER_SECOND, row.sent,
                                    row.lost)):
            known[i] += number
    families = []
    for i, (name, documentation) in enumerate(PROBE_FAMILIES.items()):
        family = CounterMetricFamily(PREFIX + name, documentation, labels=["probe", "site"])
        for labels, numbers in totals.items():
            family.add_metric(list(labels), numbers[i])
        families.append(family)
    return families
