"""Decoding event bytes and rendering them, without BPF."""
from __future__ import annotations

import json
import struct

from gs_cgen.abi import abi
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import PidNamespace, ThreadPointer
from gs_cgen.render.decode import decode
from gs_cgen.render.lines import render_json, render_lines
from gs_cgen.script.parser import parse
from tests.unit.emit.test_golden import server_module

STATUS = abi().constants


def probe_for(text: str):
    return build_plan(parse(text), ModuleSet.of(server_module()),
                      PlanOptions("t.gs", PidNamespace(False), input_pid=9)).probes[0]


def event_bytes(probe, values: dict[int, tuple[int, bytes, int]]) -> bytes:
    """values: slot -> (status, data, failing address)."""
    raw = bytearray(probe.event_size)
    raw[:40] = abi().structs["gs_event_hdr"].pack(timestamp_ns=123, probe_id=0, pid=50,
                                                  tid=51, host_pid=50, host_tid=51)
    all_lines = (1 << len(probe.lines)) - 1
    struct.pack_into("<Q", raw, probe.bitmap_offset, all_lines)
    for index, (status, data, address) in values.items():
        slot = probe.slots[index]
        raw[slot.offset] = status
        struct.pack_into("<Q", raw, slot.offset + 8, address)
        raw[slot.data_offset:slot.data_offset + len(data)] = data
    return bytes(raw)


def test_integers_signs_and_errors():
    probe = probe_for('trace handle { print "{} {} {}", fd, size, g_count; print ok; }')
    raw = event_bytes(probe, {
        0: (STATUS["GS_STATUS_OK"], struct.pack("<i", -3), 0),
        1: (STATUS["GS_STATUS_OK"], struct.pack("<q", 2**40), 0),
        2: (STATUS["GS_STATUS_READ_ERROR"], b"\0" * 4, 0x5000)})
    assert render_lines(decode(raw, probe), probe) == [
        f"-3 {2**40} <error: read failed at 0x5000>", "ok = <OPTIMIZED_OUT>"]


def test_offsets_unavailable_and_null():
    probe = probe_for("trace handle { print g_count; print fd; }")
    raw = event_bytes(probe, {0: (STATUS["GS_STATUS_OFFSETS_UNAVAILABLE"], b"", 0),
                              1: (STATUS["GS_STATUS_NULL_DEREF"], b"", 0)})
    assert render_lines(decode(raw, probe), probe) == [
        "g_count = <error: offsets unavailable>", "fd = <error: null pointer dereference>"]


def test_thread_local_failures_say_why():
    """gs_tls_block's two statuses (gs_prelude.h), as values, as JSON and
    as the reason of a failed condition."""
    probe = build_plan(parse("trace handle { print t_requests; print t_requests; "
                             "if t_requests > 1 { print fd; } }"),
                       ModuleSet.of(server_module()),
                       PlanOptions("t.gs", PidNamespace(False),
                                   thread_pointer=ThreadPointer(3128))).probes[0]
    raw = event_bytes(probe, {0: (STATUS["GS_STATUS_TLS_UNAVAILABLE"], b"", 0),
                              1: (STATUS["GS_STATUS_TLS_NOT_ALLOCATED"], b"", 0),
                              2: (STATUS["GS_STATUS_TLS_NOT_ALLOCATED"], b"", 0)})
    event = decode(raw, probe)
    assert render_lines(event, probe)[:3] == [
        "t_requests = <error: TLS offsets unavailable>",
        "t_requests = <error: TLS block not allocated for this thread>",
        "ExprError: t_requests > 1 (TLS block not allocated for this thread at 0x0)"]
    values = json.loads(render_json(event, probe))["values"]
    assert [v["status"] for v in values[:2]] == ["tls_unavailable", "tls_not_allocated"]


def test_enum_known_and_unknown_values():
    probe = probe_for("trace handle { print g_color; print g_color; }")
    raw = event_bytes(probe, {0: (0, struct.pack("<I", 5), 0), 1: (0, struct.pack("<I", 7), 0)})
    assert render_lines(decode(raw, probe), probe) == ["g_color = color::GREEN",
                                                       "g_color = color::<7>"]


def test_hex_is_twos_complement_at_type_width():
    probe = probe_for('trace handle { print "{:x} {:X} {:p}", fd, fd, size; }')
    raw = event_bytes(probe, {0: (0, struct.pack("<i", -1), 0), 1: (0, struct.pack("<i", 171), 0),
                              2: (0, struct.pack("<q", 4096), 0)})
    assert render_lines(decode(raw, probe), probe) == ["ffffffff AB 0x1000"]


def test_json_event():
    probe = probe_for('trace handle { print "fd={}", fd; print g_count; }')
    raw = event_bytes(probe, {0: (0, struct.pack("<i", 4), 0),
                              1: (STATUS["GS_STATUS_READ_ERROR"], b"", 0x10)})
    assert json.loads(render_json(decode(raw, probe), probe)) == {
        "trace": "handle", "pid": 50, "tid": 51, "timestamp_ns": 123,
        "lines": ["fd=4", "g_count = <error: read failed at 0x10>"],
        "values": [
            {"expr": "fd", "type": "int", "value": 4, "status": "ok"},
            {"expr": "g_count", "type": "int", "value": None, "status": "read_error",
             "error": "<error: read failed at 0x10>"}]}


def test_json_says_why_a_value_is_unavailable():
    """`ok` has no location at this PC; JSON carries the planner's reason."""
    probe = probe_for("trace handle { print ok; print fd; }")
    raw = event_bytes(probe, {1: (0, struct.pack("<i", 4), 0)})
    event = json.loads(render_json(decode(raw, probe), probe))
    assert event["lines"] == ["ok = <OPTIMIZED_OUT>", "fd = 4"]
    assert event["values"][0] == {"expr": "ok", "type": "_Bool", "value": None,
                                  "status": "optimized_out", "error": "<OPTIMIZED_OUT>",
                                  "reason": "not available at this PC"}
    assert "reason" not in event["values"][1]


def test_undefined_arithmetic_renders_as_its_reason_without_an_address():
    # Was: "ExprError: fd / size == 1 (division by zero at 0x0)": no memory
    # was read, so there is no address to name.
    probe = probe_for("trace handle { print fd << size; if fd / size == 1 { print fd; } }")
    raw = event_bytes(probe, {0: (STATUS["GS_STATUS_SHIFT_RANGE"], b"", 0),
                              1: (STATUS["GS_STATUS_DIV_BY_ZERO"], b"", 0)})
    assert render_lines(decode(raw, probe), probe)[:2] == [
        "fd << size = <error: shift count out of range>",
        "ExprError: fd / size == 1 (division by zero)"]
