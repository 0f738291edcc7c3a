"""Golden C per feature: the emitter's output for small scripts on a fake
module, compared byte for byte and parsed again by pycparser (after gcc -E
against stand-in BCC headers). Regenerate with --update-goldens and review
the diff. Each golden has a live twin in tests/live/."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pycparser import c_parser

from gs_cgen.dwarf.model import (AtRegisterOffset, FunctionSite, GlobalVariable, InRegister,
                                 LineSite, OptimizedOut, VariableKind, VisibleVariable)
from gs_cgen.emit.program import emit_program
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import EventTransport, PidNamespace, ThreadPointer
from gs_cgen.script.check import check
from gs_cgen.script.parser import parse
from tests.fakes import BOOL, CHAR_PTR, COLOR, INT, LONG, REQUEST_PTR, FakeModule

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "golden" / "emit"
FAKE_INCLUDE = REPO / "tests" / "golden" / "fake_include"
CASES = sorted(p.stem for p in GOLDEN.glob("*.gs"))


def server_module() -> FakeModule:
    module = FakeModule()
    module.functions["handle"] = [FunctionSite("handle", 0x1139, 0x1180, 0x1145, "server.c", 40)]
    module.lines[("/src/server.c", 42)] = [LineSite("/src/server.c", 42, 0x1150, "handle")]
    handle_vars = [
        VisibleVariable("req", REQUEST_PTR, InRegister(5), VariableKind.PARAMETER),
        VisibleVariable("fd", INT, AtRegisterOffset(6, -20), VariableKind.PARAMETER),
        VisibleVariable("size", LONG, InRegister(4), VariableKind.PARAMETER),
        VisibleVariable("ok", BOOL, OptimizedOut("not available at this PC"), VariableKind.LOCAL),
    ]
    module.return_type = INT              # handle's, for `handle:return` (returns.gs)
    module.variables[0x1145] = handle_vars
    module.variables[0x1150] = handle_vars
    module.globals["g_count"] = GlobalVariable("g_count", INT, 0x4010, "data")
    module.globals["g_color"] = GlobalVariable("g_color", COLOR, 0x4014, "data")
    module.globals["g_name"] = GlobalVariable("g_name", CHAR_PTR, 0x4020, "data")
    module.globals["t_requests"] = GlobalVariable("t_requests", INT, 0x10, "tls",
                                                  thread_local=True)
    module.globals["t_last"] = GlobalVariable("t_last", REQUEST_PTR, 0x18, "tls",
                                              thread_local=True)
    return module


def generate_plan(case: str):
    script = parse((GOLDEN / f"{case}.gs").read_text())
    check(script)
    transport = EventTransport.PERF if "perf" in case else EventTransport.RINGBUF
    namespace = PidNamespace(True, 4, 4026532000) if "pidns" in case else PidNamespace(False)
    # A fixed task_struct.thread.fsbase offset: goldens must not depend on the kernel.
    thread_pointer = ThreadPointer(3128) if "tls" in case else ThreadPointer(None, "not read")
    options = PlanOptions(f"{case}.gs", namespace, transport, input_pid=1234,
                          thread_pointer=thread_pointer, shared_programs="shared" in case)
    return build_plan(script, ModuleSet.of(server_module()), options)


def generate(case: str) -> str:
    return emit_program(generate_plan(case))


@pytest.mark.parametrize("case", CASES)
def test_golden_matches(case, request):
    produced = generate(case)
    golden = GOLDEN / f"{case}.c"
    if request.config.getoption("--update-goldens"):
        golden.write_text(produced)
    assert produced == golden.read_text()


def builds(case: str) -> list[str]:
    """The builds the loader makes of a golden: over the ring buffer, with
    and without GS_SLEEPABLE (sleepable uprobes); perf only without."""
    return ["GS_SLEEPABLE=0"] if "perf" in case else ["GS_SLEEPABLE=0", "GS_SLEEPABLE=1"]


def preprocess(case: str, define: str) -> str:
    return subprocess.run(
        ["gcc", "-E", "-P", "-nostdinc", f"-D{define}", f"-I{FAKE_INCLUDE}",
         f"-I{REPO / 'bpf_headers'}", f"-I{REPO / 'gs_cgen' / 'emit'}", "-"],
        input=(GOLDEN / f"{case}.c").read_text(), capture_output=True, text=True,
        check=True).stdout


@pytest.mark.parametrize("case", CASES)
def test_golden_parses_as_c(case):
    for define in builds(case):
        c_parser.CParser().parse(preprocess(case, define), filename=f"{case}.c ({define})")


def test_sleepable_build_reads_with_faulting_helpers():
    """GS_SLEEPABLE=1 swaps the read helper for bpf_copy_from_user and
    builds events in reserved ring space, not in per-CPU scratch."""
    sleepable, plain = (preprocess("strings_dumps", f"GS_SLEEPABLE={on}") for on in (1, 0))
    assert "(void *)148" in sleepable and "(void *)112" not in sleepable
    assert "gs_events.ringbuf_reserve(reserve)" in sleepable
    assert "gs_scratch_buf" not in sleepable and "ringbuf_output(ev" not in sleepable
    assert "(void *)112" in plain and "gs_scratch_buf" in plain
    # The ring variant is there for events too large for the scratch; a
    # small event does not use it.
    assert "= gs_begin_event(" in plain and "= gs_begin_ring_event(" not in plain


def test_sleepable_build_decides_per_thread():
    """A sleepable probe may sleep mid-decision while another thread's run
    uses its CPU: its decision is in task storage, not per CPU."""
    sleepable, plain = (preprocess("conditions", f"GS_SLEEPABLE={on}") for on in (1, 0))
    assert "gs_decisions.task_storage_get(" in sleepable
    assert "gs_decisions.lookup(" not in sleepable
    assert "gs_decisions.lookup(&zero)" in plain and "task_storage_get" not in plain


def test_goldens_exist():
    assert {"basic", "perf_pidns", "conditions", "strings_dumps", "structs_backtrace"} \
        <= set(CASES)
