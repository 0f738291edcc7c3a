"""How large one event may be (plan/limits.py), and where the probe builds
it: events too large for the per-CPU scratch go into a ring reservation in
every build; beyond the transport's limit the plan is refused, saying the
limit and why."""
from __future__ import annotations

import pytest

from gs_cgen.abi import abi
from gs_cgen.emit.probe import emit_probe
from gs_cgen.errors import PlanError
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.limits import event_limit, object_cap
from gs_cgen.plan.model import EventTransport, PidNamespace
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script.parser import parse
from tests.unit.emit.test_golden import server_module


def plan(text: str, transport=EventTransport.RINGBUF, dump_cap: int = 256):
    options = PlanOptions("t.gs", PidNamespace(False), transport, mem_dump_cap=dump_cap)
    return build_plan(parse(text), ModuleSet.of(server_module()), options)


def dump(length: int) -> str:
    return f'trace handle {{ print "{{:x.{length}}}", g_name; }}'


def test_limits_follow_from_the_abi():
    c = abi().constants
    assert c["GS_MAX_SCRATCH_EVENT"] + c["GS_WORK_SIZE"] == c["GS_SCRATCH_SIZE"] == 32 * 1024
    assert c["GS_MAX_EVENT_SIZE"] * 8 == c["GS_RINGBUF_PAGES"] * c["GS_PAGE_SIZE"]
    assert event_limit(EventTransport.RINGBUF).size == 1024 * 1024
    assert event_limit(EventTransport.PERF).size == 32256
    assert object_cap(EventTransport.RINGBUF) == 64 * 1024
    assert object_cap(EventTransport.PERF) == 16128


def test_small_events_stay_in_the_build_default():
    (probe,) = plan("trace handle { print fd; }").probes
    text = emit_probe(probe)
    assert "= gs_begin_event(" in text and "return gs_submit(ctx, ev," in text


def test_an_event_larger_than_the_scratch_is_reserved_in_the_ring():
    (probe,) = plan(dump(40000), dump_cap=40000).probes
    assert probe.event_size > abi().constants["GS_SCRATCH_SIZE"]
    text = emit_probe(probe)
    assert f"= gs_begin_ring_event(0, {probe.event_size}, {probe.event_size});" in text
    assert f"return gs_submit_ring(ctx, ev, {probe.event_size});" in text


def test_an_event_beyond_the_ring_limit_is_refused_with_the_reason():
    with pytest.raises(PlanError) as err:
        plan(dump(2_000_000), dump_cap=2_000_000)
    assert err.value.message == (
        "the values of 'handle' need 2000064 bytes per event, more than the 1048576-byte "
        "limit (one event may take an eighth of the 8 MiB BPF ring buffer); the largest is "
        "'g_name', 2000000 bytes")
    assert err.value.span is not None
    assert err.value.hints == ("split the trace block or lower --mem-dump-cap",)


def test_perf_events_are_limited_by_the_per_cpu_scratch():
    (probe,) = plan(dump(32000), EventTransport.PERF, dump_cap=32000).probes
    assert "= gs_begin_event(" in emit_probe(probe)
    with pytest.raises(PlanError) as err:
        plan(dump(40000), EventTransport.PERF, dump_cap=40000)
    assert err.value.message == (
        "the values of 'handle' need 40064 bytes per event, more than the 32256-byte limit "
        "(over perf event arrays an event is built in a per-CPU map value, which the kernel "
        "caps at 32 KiB with the probe's 512-byte work area); the largest is 'g_name', "
        "40000 bytes")
    assert "--event-map ringbuf" in err.value.hints[0]


def test_the_old_8_kib_limit_is_gone():
    # 8,792 bytes: refused before as "more than the 8192-byte limit".
    (probe,) = plan(dump(8728), dump_cap=8728).probes
    assert probe.event_size == 8792


def bt_plan(stack: int, transport=EventTransport.RINGBUF):
    options = PlanOptions("t.gs", PidNamespace(False), transport, backtrace_stack=stack)
    return build_plan(parse("trace handle { print fd; bt; }"), ModuleSet.of(server_module()),
                      options)


def test_a_backtrace_window_too_large_says_which_window_fits():
    with pytest.raises(PlanError) as err:
        bt_plan(100_000, EventTransport.PERF)
    assert "the largest is 'backtrace'" in err.value.message
    hint = err.value.hints[0]
    assert hint.startswith("lower --backtrace-stack (the stack window, now 99840 bytes; at most ")
    fits = int(hint.split("at most ")[1].split()[0])
    (probe,) = bt_plan(fits, EventTransport.PERF).probes            # the advice holds
    assert probe.event_size <= event_limit(EventTransport.PERF).size
    with pytest.raises(PlanError):
        bt_plan(fits + 512, EventTransport.PERF)
    with pytest.raises(PlanError) as err:
        bt_plan(2_000_000)
    assert err.value.hints[0].startswith("lower --backtrace-stack")
