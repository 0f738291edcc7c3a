"""Verifier and clang refusals say what the limit is, never libbcc's guess,
and name the script statement (or trace block) they are about."""
from __future__ import annotations

import os
import types

import pytest

from gs_cgen.errors import RuntimeTraceError
from gs_cgen.emit.probe import StatementLines
from gs_cgen.plan.model import ProbeSite
from gs_cgen.runtime.session import (TraceSession, compile_refusal, fatal_compile_message,
                                     refusal_hints)
from gs_cgen.source import SourceSpan
from tests.unit.plan.test_event_limits import plan as plan_of

_E2BIG = "Failed to load BPF program b'gs_probe_0': Argument list too long"


def test_libbccs_4096_instruction_guess_is_dropped():
    log = "bpf: Argument list too long. Program  too large (1640 insns), at most 4096 insns\n"
    hints = refusal_hints(log, _E2BIG)
    assert not any("4096" in hint for hint in hints)
    assert hints == ("the verifier explores every path through the probe's branches and gives "
                     "up after 1,000,000 instructions processed in all; split the block into "
                     "several `trace` blocks on the same function",)


def test_other_refusals_keep_the_verifiers_log():
    log = "R1 invalid mem access 'scalar'\nprocessed 12 insns (limit 1000000)\n"
    assert refusal_hints(log, "Failed to load BPF program b'x': Permission denied") == \
        (log.strip(),)


def _statement(first: int, last: int, line: int, column: int) -> StatementLines:
    return StatementLines(first, last, SourceSpan(line, column, line, column + 7))


_SCRIPT = "trace handle {\n    if fd == 3 { print fd; }\n}\n"
_STATEMENTS = (_statement(230, 240, 2, 8), _statement(220, 250, 1, 1))


def test_a_clang_error_names_the_statement_whose_c_it_is_in():
    said = ("/virtual/main.c:233:17: error: bracket nesting level exceeded maximum of 256\n"
            "1 error generated.\n")
    error = compile_refusal(said, "Failed to compile BPF module <text>", _STATEMENTS)
    assert error.render("s.gs", _SCRIPT) == (
        "s.gs:2:8: error: BPF compilation failed: clang refused the C generated for this "
        "statement (line 233: bracket nesting level exceeded maximum of 256)\n"
        "      if fd == 3 { print fd; }\n"
        "         ^^^^^^^\n"
        f"hint: {said.strip()}")


def test_a_clang_error_outside_any_statement_names_its_trace_block_or_nothing():
    inside = compile_refusal("/virtual/main.c:221:1: error: x\n", "failed", _STATEMENTS)
    assert inside.span == SourceSpan(1, 1, 1, 8)
    outside = compile_refusal("/virtual/main.c:12:1: error: x\n", "failed", _STATEMENTS)
    assert outside.span is None
    assert outside.message == "BPF compilation failed: clang refused the generated C (line 12: x)"


def test_a_fatal_clang_stop_names_the_trace_block_of_the_function_it_was_in():
    said = ("error: <unknown>:0:0: in function gs_probe_1 i32 (ptr): Looks like the BPF "
            "stack limit is exceeded.")
    site = ProbeSite(1, "handle", "/bin/server", 0x1145, 0x1145, "handle", None, None,
                     span=SourceSpan(3, 1, 5, 2))
    assert fatal_compile_message(said, {"gs_probe_1": site}).splitlines() == [
        "error: BPF compilation failed: clang stopped gs-cgen with a fatal error in the C "
        "generated for the trace block at line 3, column 1 ('handle') (no probe was attached)",
        f"hint: {said}"]
    assert "in the generated C (no probe" in fatal_compile_message(said, {})


class _RefusingBPF:
    """BCC's BPF object as it is when the verifier refuses a program."""
    KPROBE = 2

    def load_func(self, name, prog_type, attach_type=-1):
        os.write(2, b"bpf: Argument list too long. Program  too large (1305 insns), "
                    b"at most 4096 insns\n")
        raise Exception(f"Failed to load BPF program {name!r}: Argument list too long")


def test_a_verifier_refusal_names_the_trace_block_of_the_probe():
    script = "trace handle {\n    if fd == 1 { print fd; }\n}\n"
    plan = plan_of(script)
    session = TraceSession(plan, "")
    session.bpf, session.links_refusal = _RefusingBPF(), "not in this test"
    with pytest.raises(RuntimeTraceError) as refused:
        session._load_function(types.SimpleNamespace(BPF=_RefusingBPF), plan.probes[0].site,
                               sleepable=False)
    assert refused.value.render("s.gs", script).splitlines() == [
        "s.gs:1:1: error: the kernel verifier rejected the probe for 'handle': Failed to load "
        "BPF program b'gs_probe_0': Argument list too long",
        "  trace handle {",
        "  ^",
        "hint: the verifier explores every path through the probe's branches and gives up "
        "after 1,000,000 instructions processed in all; split the block into several "
        "`trace` blocks on the same function"]
