"""Probes decide before they build (emit/probe.py): a hit that sends
nothing touches no ktime, pid or namespace helper, scratch or ring."""
from __future__ import annotations

from gs_cgen.abi import abi
from gs_cgen.emit.probe import emit_probe
from gs_cgen.emit.program import emit_program
from tests.unit.plan.test_event_limits import plan

_BUILDING = ("gs_begin_event(", "gs_fill_header(", "gs_current_ids(", "gs_module_offsets(",
             "bpf_ktime_get_ns", "gs_stamp_header(")


def decide_part(text: str) -> str:
    return text[:text.index("/* build: this event is sent */")]


def probe_text(script: str) -> str:
    (probe,) = plan(script).probes
    return emit_probe(probe)


def test_a_register_condition_returns_before_anything_is_built():
    text = probe_text("trace handle { if size == 12345 { print fd; } }")
    decide = decide_part(text)
    assert "if (!(gs_lines0))\n        return 0;" in decide
    assert not any(call in decide for call in _BUILDING)
    assert text.count("ctx->si") == 1 and "ctx->bp" in text      # each register once


def test_a_condition_on_the_probes_own_global_needs_no_pid():
    decide = decide_part(probe_text("trace handle { if g_count == 3 { print fd; } }"))
    assert "volatile __u64 gs_bias = gs_reg_ip - 0x1145ULL;" in decide
    assert not any(call in decide for call in _BUILDING)


def test_a_condition_on_pid_reads_the_header_once():
    text = probe_text("trace handle { if $pid == 7 { print fd; } }")
    assert "gs_fill_header(&gs_hdr, 0, GS_EVENT_TRACE," in decide_part(text)
    assert "__builtin_memcpy(ev, &gs_hdr, sizeof(gs_hdr));" in text
    assert text.count("gs_fill_header(") == 1


def test_a_condition_on_target_bytes_compares_in_the_decision_maps_work_area():
    """The event is not taken to lend its work area: a hit whose string
    differs reserves nothing."""
    text = probe_text('trace handle { if g_name == "GET" { print fd; } }')
    decide = decide_part(text)
    assert not any(call in decide for call in _BUILDING) and "gs_drop" not in text
    assert "__u8 *work = (__u8 *)gs_dec->work;" in decide
    assert "gs_read_user_str(work, 5," in decide
    build = text[text.index("/* build"):]
    assert "gs_begin_event(0, 88, 88);" in build and "work" not in build


def test_values_compare_in_the_events_work_area():
    text = probe_text('trace handle { if g_name == "GET" { print g_name == "PUT"; } }')
    build = text[text.index("/* build"):]
    assert "gs_begin_event(0, 88, 600);" in build and "    work = ev + 88;" in build


def test_failed_conditions_are_written_only_into_sent_events():
    text = probe_text("trace handle { if *g_name == 71 { print fd; } }")
    assert "gs_es0 = gs_st;" in decide_part(text)
    build = text[text.index("/* build"):]
    assert "if (gs_lines0 & 0x1ULL) {\n        gs_fail_value(ev, 48, gs_es0, gs_ea0);" in build


def test_a_probe_without_conditions_only_builds():
    text = probe_text("trace handle { print fd; }")
    assert "/* decide" not in text
    assert "*(__u64 *)(ev + 40) = 0x1ULL;" in text


def test_several_conditions_decide_in_the_map_and_take_the_event_only_to_send():
    """Locals would hold a constant per path, and each later test of one
    keeps the paths apart (2^N for N `if`s): the bitmap and the ExprError
    notes go into the decision map, which the verifier does not track; the
    event is taken only when a line is marked, and gets them copied in."""
    text = probe_text("trace handle { if *g_name == 71 { print fd; } if fd == 3 { print fd; } }")
    decide = decide_part(text)
    assert not any(call in decide for call in _BUILDING)
    assert "volatile struct gs_decision *gs_dec = gs_begin_decision(0);\n" \
           "    if (!gs_dec)\n        return 0;\n    gs_dec->lines[0] = 0;" in decide
    assert "gs_dec->failed_status[1] = gs_st;\n        gs_dec->failed_address[1] = gs_fa;\n" \
           "        gs_dec->lines[0] |= 0x4ULL;" in decide
    assert "if (!(gs_dec->lines[0]))\n        return 0;" in decide
    build = text[text.index("/* build"):]
    assert "*(__u64 *)(ev + 40) = gs_dec->lines[0];\n" \
           "    if (gs_dec->lines[0] & 0x1ULL) {\n" \
           "        gs_fail_value(ev, 48, gs_dec->failed_status[0], gs_dec->failed_address[0]);" \
           in build
    assert "gs_es0" not in text and "gs_drop" not in text


def test_the_program_declares_the_decision_map_only_when_a_probe_uses_it():
    several = emit_program(plan("trace handle { if fd == 1 { print fd; } if fd == 2 { print fd; } }"))
    one = emit_program(plan("trace handle { if fd == 1 { print fd; } }"))
    assert "BPF_TASK_STORAGE(gs_decisions, struct gs_decision);" in several
    assert "BPF_PERCPU_ARRAY(gs_decisions, struct gs_decision, 1);" in several
    assert "gs_decisions" not in one and "gs_dec" not in one


def test_more_conditions_than_the_decision_map_holds_decide_in_the_event():
    count = abi().constants["GS_DECISION_CONDITIONS"] + 1
    body = " ".join(f"if fd == {i} {{ print fd; }}" for i in range(count))
    text = probe_text(f"trace handle {{ {body} }}")
    decide = decide_part(text)
    assert decide.index("gs_begin_event(") < decide.index("/* decide")
    assert "__u64 *gs_lines = (__u64 *)(ev + 40);" in decide and "gs_dec" not in text
    assert "gs_lines[0] |= 0x1ULL;" in decide and "return gs_drop(ev);" in decide


def test_a_long_let_chain_is_bound_to_locals_before_clang_nesting_limit():
    """clang refuses more than 256 nested parentheses (64 chained lets)."""
    lets = "".join(f"let a{i} = a{i - 1} + {i}; " for i in range(1, 64))
    text = probe_text(f"trace handle {{ let a0 = fd; {lets} print a63; }}")
    depth = deepest = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        deepest = max(deepest, depth)
    assert deepest < 200 and "__u64 gs_e" in text
