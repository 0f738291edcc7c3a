"""Aggregations → C: one map and one update function per aggregation, and
the in-probe code that builds a key and calls it. Pure; golden-file tested.

Why per-CPU hash maps (BPF_PERCPU_HASH), as bpftrace's count()/sum()/
hist(): a hot function called on several CPUs then never bounces one
cache line between them. The adds are still atomic: a uprobe program can
be preempted by another run of itself on the same CPU (the event counters
in runtime.c.in have the same reason), and a locked add on a line that
stays in this CPU's cache costs a few ns. The tracer sums the CPUs' values
when it prints.

A new key whose insert fails because the map is full (-E2BIG from a
preallocated hash, -ENOMEM otherwise) is counted in gs_agg_dropped for its
aggregation; an insert that lost a race to another CPU (-EEXIST) just
looks the key up again.
"""
from __future__ import annotations

from gs_cgen.abi import abi
from gs_cgen.emit import c
from gs_cgen.emit.scalar import emit_scalar
from gs_cgen.emit.writer import CWriter
from gs_cgen.plan.model import AggregateStep, AggregationKeyKind, AggregationPlan, Plan

_E2BIG, _ENOMEM = 7, 12        # include/uapi/asm-generic/errno-base.h


def map_name(aggregation: AggregationPlan) -> str:
    """The BPF map of an aggregation: never the user's name, its index."""
    return f"{abi().map_names['GS_MAP_AGG_PREFIX']}{aggregation.index}"


def _key_struct(aggregation: AggregationPlan) -> str:
    return f"struct gs_agg_key{aggregation.index}"


def _value_type(aggregation: AggregationPlan) -> str:
    return "struct gs_agg_hist" if aggregation.kind == "hist" else "__u64"


def emit_aggregation_maps(plan: Plan) -> str:
    """The maps, key structs and update functions of every aggregation."""
    if not plan.aggregations:
        return ""
    names = abi().map_names
    parts = [c.comment("--- aggregations (emit/aggregations.py) ---"),
             f"BPF_PERCPU_ARRAY({names['GS_MAP_AGG_DROPPED']}, __u64, "
             f"{len(plan.aggregations)});"]
    if any(a.kind == "hist" for a in plan.aggregations):
        parts.append(f"BPF_ARRAY({names['GS_MAP_AGG_ZERO']}, struct gs_agg_hist, 1);")
    parts.append(_drop_function(names["GS_MAP_AGG_DROPPED"]))
    parts.extend(_aggregation(a) for a in plan.aggregations)
    return "\n".join(parts) + "\n"


def _drop_function(dropped: str) -> str:
    return "\n".join([
        "static __always_inline void gs_agg_drop(__u32 index)",
        "{",
        f"    __u64 *count = {dropped}.lookup(&index);",
        "    if (count)",
        "        __sync_fetch_and_add(count, 1);",
        "}", ""])


def _aggregation(aggregation: AggregationPlan) -> str:
    words = aggregation.key_size // 8
    name, key = map_name(aggregation), _key_struct(aggregation)
    keys = ", ".join(k.text for k in aggregation.keys)
    w = CWriter()
    _update_body(w, aggregation)
    return "\n".join([
        c.comment(f"@{aggregation.name}: {aggregation.kind}" + (f" by {keys}" if keys else "")),
        f"{key} {{ __u64 words[{words}]; }};",
        _map_declaration(aggregation, name, key),
        f"static __always_inline void gs_agg_update{aggregation.index}({key} *key, __u64 value)",
        "{", w.text(), "}", ""])


def _map_declaration(aggregation: AggregationPlan, name: str, key: str) -> str:
    """Counts and sums are preallocated (8 bytes a CPU a key: an insert
    allocates nothing in the probe). A histogram's 536-byte value times
    GS_AGG_MAX_KEYS times the CPUs would be megabytes up front (138 MB on 64
    CPUs), so its map allocates a key's values when the key first appears;
    its inserts fail with -E2BIG past GS_AGG_MAX_KEYS all the same."""
    if aggregation.kind != "hist":
        return f"BPF_PERCPU_HASH({name}, {key}, {_value_type(aggregation)}, GS_AGG_MAX_KEYS);"
    return (f'BPF_F_TABLE("percpu_hash", {key}, {_value_type(aggregation)}, {name}, '
            "GS_AGG_MAX_KEYS, BPF_F_NO_PREALLOC);")


def _update_body(w: CWriter, aggregation: AggregationPlan) -> None:
    name, value_type = map_name(aggregation), _value_type(aggregation)
    w.line(f"{value_type} *slot = {name}.lookup(key);")
    with w.block("if (!slot)"):
        if aggregation.kind == "hist":
            w.line("__u32 zero_index = 0;")
            w.line(f"struct gs_agg_hist *zero = {abi().map_names['GS_MAP_AGG_ZERO']}"
                   ".lookup(&zero_index);")
            w.line("if (!zero)")
            w.line("    return;")
        else:
            w.line("__u64 zero_value = 0, *zero = &zero_value;")
        w.line(f"long err = {name}.insert(key, zero);")
        with w.block(f"if (err == -{_E2BIG} || err == -{_ENOMEM})"):
            w.line(f"gs_agg_drop({aggregation.index});")
            w.line("return;")
        w.line(f"slot = {name}.lookup(key);")
        w.line("if (!slot)")
        w.line("    return;")
    w.line(c.comment("an <error> key counts its hits"))
    w.line("__u64 *first = (__u64 *)slot;")
    with w.block("if (((struct gs_agg_key_head *)key)->status)"):
        w.line("__sync_fetch_and_add(first, 1);")
        w.line("return;")
    match aggregation.kind:
        case "count":
            w.line("__sync_fetch_and_add(slot, 1);")
        case "sum":
            w.line("__sync_fetch_and_add(slot, value);")
        case "hist":
            signed = 1 if aggregation.value_signed else 0
            w.line(f"__u32 bucket = gs_hist_bucket(value, {signed});")
            w.line("if (bucket < GS_AGG_HIST_BUCKETS)")
            w.line("    __sync_fetch_and_add(&slot->buckets[bucket], 1);")
            w.line("__sync_fetch_and_add(&slot->sum, value);")


def emit_aggregate(w: CWriter, step: AggregateStep) -> None:
    """In the probe: build the key (any failed read makes it the <error>
    key of that status, every other byte zero), compute the value, update."""
    aggregation = step.aggregation
    label = w.fresh("agg")
    fail, done = f"{label}_fail", f"{label}_done"
    with w.block():
        w.line(c.comment(f"{step.text}"))
        w.line(f"{_key_struct(aggregation)} {label}_key = {{}};")
        w.line(f"__u64 {label}_value = 0;")
        if not step.keys and step.value is None:
            w.line(f"gs_agg_update{aggregation.index}(&{label}_key, {label}_value);")
            return
        with w.block():
            for key, scalar in zip(aggregation.keys, step.keys):
                _store_key(w, f"{label}_key", key, emit_scalar(w, scalar, fail), fail)
            if step.value is not None:
                w.line(f"{label}_value = {emit_scalar(w, step.value, fail)};")
            w.line(f"goto {done};")
        w.label(fail)
        w.line(f"__builtin_memset(&{label}_key, 0, sizeof({label}_key));")
        w.line(f"((struct gs_agg_key_head *)&{label}_key)->status = "
               "gs_st ? gs_st : GS_STATUS_READ_ERROR;")
        w.label(done)
        w.line(f"gs_agg_update{aggregation.index}(&{label}_key, {label}_value);")


def _store_key(w: CWriter, key: str, field, value: str, fail: str) -> None:
    word = f"{key}.words[{field.offset // 8}]"
    if field.kind is AggregationKeyKind.SCALAR:
        w.line(f"{word} = {value};")
        return
    w.line(f"gs_fa = {value};")
    with w.block(f"if (gs_read_user_str(&{word}, {field.size}, gs_fa) < 0)"):
        w.line("gs_st = GS_STATUS_READ_ERROR;")
        w.line(f"goto {fail};")
