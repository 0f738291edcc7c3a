"""Sites whose code is the same run one BPF function (emit/program.py):
which probe runs which, and what does not share."""
from __future__ import annotations

from gs_cgen.emit.program import emit
from tests.unit.emit.test_golden import generate_plan


def test_probes_with_the_same_code_run_one_function():
    program = emit(generate_plan("shared"))
    # handle and server.c:42 both print fd (rbp-20); the size block and
    # the return probe have code of their own.
    assert dict(program.functions) == {0: "gs_probe_0", 1: "gs_probe_0", 2: "gs_probe_2",
                                       3: "gs_probe_3"}
    assert "int gs_probe_1(" not in program.text
    assert program.text.count("bpf_get_attach_cookie(ctx)") == 1


def test_without_shared_programs_every_probe_has_its_own():
    program = emit(generate_plan("basic"))
    assert dict(program.functions) == {0: "gs_probe_0", 1: "gs_probe_1"}
    assert "bpf_get_attach_cookie" not in program.text
