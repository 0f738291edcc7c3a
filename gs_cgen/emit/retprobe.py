"""A return probe and its paired entry probe → C (plan/retprobe.py says
how they pair). Pure; golden-file tested.

  gs_probe_N_entry   the entry probe, at the function's first instruction:
                     builds the entry record as it would an event, then
                     stores it in gs_entries_N under (tid, CFA) instead of
                     sending it;
  gs_probe_N_capture when `$entry` values are read past the function's
                     first instruction (after an -O0 prologue): fills them
                     into the record there;
  gs_probe_N         the uretprobe: finds the record by (tid, sp), checks
                     the return address, runs the block's body with the
                     record (gs_probe_N_return), deletes the record.
"""
from __future__ import annotations

from gs_cgen.abi import abi
from gs_cgen.emit import c
from gs_cgen.emit.probe import drop_function, emit_probe, emit_record_fill
from gs_cgen.plan.model import ProbePlan
from gs_cgen.plan.retprobe import (CFA_SLOT, RETURN_ADDRESS_SLOT,
                                   record_offsets)


def _body_function_name(probe_id: int) -> str:
    return f"{c.probe_function_name(probe_id)}_return"


def _records_map(probe_id: int) -> str:
    return f"gs_entries_{probe_id}"


def _record_type(probe_id: int) -> str:
    return f"struct gs_entry_record_{probe_id}"


def emit_return_probe(probe: ProbePlan) -> str:
    """The record map, the entry probe, the return body and the uretprobe."""
    entry, probe_id = probe.entry, probe.site.probe_id
    pending = pending_calls(entry.event_size)
    parts = [
        c.comment(f"probe {probe_id} returns: one entry record per call in flight"),
        f"{_record_type(probe_id)} {{\n    __u8 bytes[{entry.event_size}];\n}};",
        f'BPF_TABLE("lru_hash", struct gs_return_key, {_record_type(probe_id)}, '
        f"{_records_map(probe_id)}, {pending});",
        "",
        emit_probe(entry, function=f"int {c.entry_function_name(probe_id)}",
                   finish=_store_record(entry, probe_id)),
        *_capture_function(probe),
        emit_probe(probe, function=f"static __always_inline int {_body_function_name(probe_id)}",
                   parameters=", const __u8 *gs_rec"),
        _return_function(probe),
    ]
    return "\n".join(parts)


def _capture_function(probe: ProbePlan) -> list[str]:
    if probe.entry_capture is None:
        return []
    probe_id = probe.site.probe_id
    return [emit_record_fill(probe.entry_capture, f"int {c.capture_function_name(probe_id)}",
                             _records_map(probe_id))]


def pending_calls(record_size: int) -> int:
    """Calls in flight one return probe keeps records for: the LRU hash
    preallocates them all, so large records get fewer (gs_abi.h)."""
    limits = abi().constants
    fitting = limits["GS_PENDING_CALLS_BYTES"] // max(record_size, 1)
    return max(limits["GS_MIN_PENDING_CALLS"], min(limits["GS_MAX_PENDING_CALLS"], fitting))


def _store_record(entry: ProbePlan, probe_id: int) -> tuple[str, ...]:
    """The entry probe's last statements: the record goes into the map
    (keyed by the CFA it computed), and the event space is given back."""
    status, data = record_offsets(entry, CFA_SLOT)
    drop = drop_function(entry)
    return (
        "struct gs_return_key gs_key = {};",
        "gs_key.tid = (__u32)bpf_get_current_pid_tgid();",
        f"if (GS_STATUS(ev, {status}) != GS_STATUS_OK)",
        f"    return {drop}(ev);",
        f"gs_key.cfa = *(__u64 *)(ev + {data});",
        f"{_records_map(probe_id)}.update(&gs_key, ({_record_type(probe_id)} *)ev);",
        f"return {drop}(ev);",
    )


def _return_function(probe: ProbePlan) -> str:
    """After `ret`, sp is the call's CFA and the kernel has set ip to the
    return address: a record for this thread and frame whose return
    address differs is not this call's (a tail call's, or a stale one)."""
    probe_id = probe.site.probe_id
    ra_status, ra_data = record_offsets(probe.entry, RETURN_ADDRESS_SLOT)
    lines = [
        f"int {c.probe_function_name(probe_id)}(struct pt_regs *ctx)",
        "{",
        "    struct gs_return_key gs_key = {};",
        "    gs_key.tid = (__u32)bpf_get_current_pid_tgid();",
        "    gs_key.cfa = ctx->sp;",
        f"    const __u8 *gs_rec = (const __u8 *){_records_map(probe_id)}.lookup(&gs_key);",
        "    if (!gs_rec)",
        "        return 0;  " + c.comment("its entry was not seen: attached mid-call, or evicted"),
        "    int gs_ret = 0;",
        f"    if (GS_STATUS(gs_rec, {ra_status}) == GS_STATUS_OK &&",
        f"        *(const __u64 *)(gs_rec + {ra_data}) == ctx->ip)",
        f"        gs_ret = {_body_function_name(probe_id)}(ctx, gs_rec);",
        f"    {_records_map(probe_id)}.delete(&gs_key);",
        "    return gs_ret;",
        "}",
        "",
    ]
    return "\n".join(lines)
