"""Precompiled render plans (render/plans.py) print exactly what the general
path (decode → render_lines / render_json) prints, for every event: random
values, failed reads, lines that did not run, values only the general path
renders. Without BPF."""
from __future__ import annotations

import random
import struct

import pytest

from gs_cgen.abi import abi
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import ExprErrorLine, PidNamespace
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.render import plans
from gs_cgen.render.decode import decode
from gs_cgen.render.lines import render_json, render_lines
from gs_cgen.script.parser import parse
from tests.unit.emit.test_golden import server_module

STATUS = abi().constants

SCRIPTS = [
    'trace handle { print "{} {}", fd, size; }',
    "trace handle { print fd; print size; }",
    'trace handle { print "{:x} {:X} {:p} {:x}", fd, size, fd, req; }',
    'trace handle { print "{} {:x} {}", g_color, g_color, g_count; }',
    'trace handle { print "{} {:p}", req, req; }',
    'trace handle { print "{} {}", fd == 3, req.id; }',
    'trace handle { print "100% \\"quoted\\" \\xc3\\xa9 \\t é {} %d %%", fd * -1; }',
    'trace handle { if fd > 1 { print "big {}", fd; } else { print "small {}", size; } }',
    'trace handle { print "{} {}", g_name, fd; print fd; }',
    'trace handle { let s = "a\\"b"; print s; print "{} {}", s, fd; }',
    'trace handle { print req.path; print "{} {}", req.flags, size; print ok; }',
    'trace handle { print "{} {:s}", size, size; }',
]


def probe_for(text: str):
    return build_plan(parse(text), ModuleSet.of(server_module()),
                      PlanOptions("t.gs", PidNamespace(False), input_pid=9)).probes[0]


def random_event(probe, rng: random.Random) -> bytes:
    """An event as a probe may send it: a header, some lines run, each
    slot mostly read fine with random bytes, sometimes failed."""
    raw = bytearray(rng.randbytes(probe.event_size))
    raw[:40] = abi().structs["gs_event_hdr"].pack(
        timestamp_ns=rng.getrandbits(63), probe_id=0, kind=STATUS["GS_EVENT_TRACE"],
        pid=rng.getrandbits(31), tid=rng.getrandbits(31), size=probe.event_size)
    ran = (1 << len(probe.lines)) - 1 if rng.random() < 0.7 else rng.getrandbits(len(probe.lines))
    struct.pack_into("<Q", raw, probe.bitmap_offset, ran)
    for slot in probe.slots:
        raw[slot.offset] = STATUS["GS_STATUS_OK"] if rng.random() < 0.85 else \
            rng.choice([STATUS["GS_STATUS_READ_ERROR"], STATUS["GS_STATUS_NULL_DEREF"], 77])
        if rng.random() < 0.3:                  # small numbers, zero and -1 are common
            small = rng.choice([0, 1, 5, 6, -1, 3, 2**31 - 1])
            raw[slot.data_offset:slot.data_offset + 8] = small.to_bytes(8, "little", signed=True)
        if slot.size >= 16 and rng.random() < 0.5:
            raw[slot.data_offset:slot.data_offset + 5] = b"GET \0"
        struct.pack_into("<I", raw, slot.offset + 4, rng.randrange(0, 24))
    for line in probe.lines:      # a probe reports a condition only when its read failed
        if isinstance(line, ExprErrorLine) and raw[probe.slots[line.slot].offset] == 0:
            ran &= ~(1 << line.bit)
    struct.pack_into("<Q", raw, probe.bitmap_offset, ran)
    return bytes(raw)


def general_text(probe, raw: bytes, style: str) -> tuple[str, int]:
    event = decode(raw, probe)
    if style == "json":
        return (render_json(event, probe) + "\n", 1) if event.executed else ("", 0)
    lines = render_lines(event, probe)
    return "".join(line + "\n" for line in lines), len(lines)


@pytest.mark.parametrize("style", ["plain", "json"])
@pytest.mark.parametrize("script", SCRIPTS)
def test_plans_print_what_the_general_path_prints(script, style):
    probe = probe_for(script)
    render = plans.build_renderer(probe, style)
    rng = random.Random(script + style)
    for _ in range(300):
        raw = random_event(probe, rng)
        padded = b"\xee" * 24 + raw + b"\xee" * 8      # read in place, at an offset
        assert render(padded, 24, len(raw)) == general_text(probe, raw, style), raw.hex()


def test_a_plain_integer_print_takes_the_precompiled_path():
    """Not just equal output: the common probe does not fall back."""
    probe = probe_for('trace handle { print "{} {}", fd, size; }')
    calls = []
    general = plans._general_renderer(probe, "plain", None)
    plan = plans._compile(probe)
    fast = plans._plain_renderer(plan, lambda *args: calls.append(args) or general(*args))
    raw = bytearray(random_event(probe, random.Random(1)))
    struct.pack_into("<Q", raw, probe.bitmap_offset, 1)
    for slot in probe.slots:
        raw[slot.offset] = STATUS["GS_STATUS_OK"]
    struct.pack_into("<i", raw, probe.slots[0].data_offset, -7)
    struct.pack_into("<q", raw, probe.slots[1].data_offset, 2**40)
    assert fast(bytes(raw), 0, len(raw)) == (f"-7 {2**40}\n", 1) and calls == []
    raw[probe.slots[0].offset] = STATUS["GS_STATUS_READ_ERROR"]
    assert fast(bytes(raw), 0, len(raw))[0].startswith("<error: read failed at 0x")
    assert len(calls) == 1


def test_a_probe_with_nothing_to_precompile_uses_the_general_path():
    probe = probe_for("trace handle { print g_name; }")
    assert plans._compile(probe) is None
