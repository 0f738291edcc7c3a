"""Function probes at the entry instruction (plan/sites.py place_probe):
only for blocks that read nothing the prologue changes, only when the
entry is emulated and gdb's post-prologue address is not."""
from __future__ import annotations

from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import EventTransport, PidNamespace
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script.parser import parse
from tests.unit.emit.test_golden import server_module

# handle(): entry 0x1139, gdb's address 0x1145 (tests/unit/emit/test_golden.py)
O0_PROLOGUE = {0x1139: bytes.fromhex("55"), 0x113a: bytes.fromhex("4889e5"),
               0x113d: bytes.fromhex("897dec"), 0x1140: bytes.fromhex("488975e0") + b"\x90",
               0x1145: bytes.fromhex("8b45ec")}


def site(script: str, code=O0_PROLOGUE):
    module = server_module()
    module.code = dict(code)
    options = PlanOptions("t.gs", PidNamespace(False), EventTransport.RINGBUF)
    (probe,) = build_plan(parse(script), ModuleSet.of(module), options).probes
    return probe.site


def test_a_block_of_globals_goes_to_the_emulated_entry():
    moved = site('trace handle { print "{} {}", g_count, $pid; }')
    assert (moved.address, moved.file_offset, moved.handling) == (0x1139, 0x1139, "emulated")
    assert moved.placement_note.startswith("at the function's entry, not after its prologue "
                                           "(0x1145, single-stepped)")


def test_parameters_registers_and_backtraces_stay_where_gdb_stops():
    for body in ("print fd;", "print size;", "print $pc;", "print $sp;", "bt;",
                 "if fd == 1 { print g_count; }"):
        kept = site(f"trace handle {{ {body} }}")
        assert (kept.address, kept.handling, kept.placement_note) == \
            (0x1145, "single-stepped", None), body


def test_a_prologue_that_calls_or_stores_elsewhere_keeps_the_probe():
    calls = {**O0_PROLOGUE, 0x1140: bytes.fromhex("e800000000")}
    assert site("trace handle { print g_count; }", calls).address == 0x1145


def test_an_entry_that_is_single_stepped_keeps_the_probe():
    endbr = {**O0_PROLOGUE, 0x1139: bytes.fromhex("f30f1efa")}
    assert site("trace handle { print g_count; }", endbr).address == 0x1145
