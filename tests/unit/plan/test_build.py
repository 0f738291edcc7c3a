"""Planning on a fake module: sources, slot layout, render recipe, errors."""
from __future__ import annotations

import pytest

from gs_cgen.abi import abi
from gs_cgen.dwarf.model import AtAddress, InRegister, VariableKind, VisibleVariable
from gs_cgen.errors import PlanError, UnsupportedError
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import (ConstantSource, ExprLine, FormatLine, GlobalMemorySource,
                                PidNamespace, RegisterSource, SlotRef, SpecialKind,
                                SpecialSource, StackMemorySource, UnavailableSource,
                                module_cookie)
from gs_cgen.script.ast import FormatKind
from gs_cgen.script.parser import parse
from tests.fakes import INT
from tests.unit.emit.test_golden import server_module

OPTIONS = PlanOptions("t.gs", PidNamespace(False), input_pid=77)


def plan(text: str, module=None):
    return build_plan(parse(text), module or server_module(), OPTIONS)


def test_sources_follow_locations():
    probe = plan("trace handle { print fd; print size; print g_count; print ok; }").probes[0]
    sources = [slot.source for slot in probe.slots]
    cookie = module_cookie("/opt/app/bin/server", server_module().build_id)
    assert sources == [StackMemorySource("bp", -20), RegisterSource("si", 0),
                       GlobalMemorySource(cookie, "data", 0x4010),
                       UnavailableSource("not available at this PC", True)]


def test_slots_are_laid_out_after_the_header_without_overlap():
    probe = plan("trace handle { print fd; print size; print $pid; }").probes[0]
    header = abi().structs["gs_event_hdr"].size
    assert probe.slots[0].offset == header
    for before, after in zip(probe.slots, probe.slots[1:]):
        assert after.offset >= before.data_offset + before.size
        assert before.data_offset >= before.offset + 16   # status + failing address
    assert probe.event_size >= probe.slots[-1].data_offset + probe.slots[-1].size


def test_render_recipe_binds_placeholders_to_slots():
    probe = plan('trace handle { print "fd={} {:x}", fd, size; print g_count; }').probes[0]
    assert probe.lines == (FormatLine(("fd=", SlotRef(0, FormatKind.DEFAULT), " ",
                                       SlotRef(1, FormatKind.HEX))),
                           ExprLine("g_count", 2))
    assert [slot.expr_text for slot in probe.slots] == ["fd", "size", "g_count"]


def test_specials_and_input_pid():
    probe = plan("trace handle { print $tid; print $input_pid; print 5; }").probes[0]
    assert [s.source for s in probe.slots] == [SpecialSource(SpecialKind.TID),
                                               ConstantSource(77), ConstantSource(5)]


def test_function_static_is_read_as_a_global():
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("calls", INT, AtAddress(0x4020),
                                                VariableKind.LOCAL)]
    slot = plan("trace handle { print calls; }", module).probes[0].slots[0]
    assert isinstance(slot.source, GlobalMemorySource) and slot.source.address == 0x4020


def test_simd_register_is_reported_not_read():
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("x", INT, InRegister(17), VariableKind.LOCAL)]
    source = plan("trace handle { print x; }", module).probes[0].slots[0].source
    assert source == UnavailableSource("value lives in xmm0, which a uprobe cannot read", False)


def test_probe_site_uses_file_offset():
    site = plan("trace server.c:42 { print fd; }").probes[0].site
    assert (site.address, site.file_offset, site.function, site.source_line) == \
        (0x1150, 0x1150, "handle", 42)


def test_unknown_variable_names_candidates():
    with pytest.raises(PlanError) as info:
        plan("trace handle { print sise; }")
    assert info.value.message == "no variable 'sise' at handle (handle)"
    assert "size" in info.value.candidates
    assert (info.value.span.line, info.value.span.column) == (1, 22)


def test_unknown_function_gets_pattern_span():
    with pytest.raises(Exception) as info:
        plan("trace handel { print fd; }")
    assert info.value.candidates == ("handle",)
    assert (info.value.span.line, info.value.span.column) == (1, 7)


@pytest.mark.parametrize("text, what", [
    ("trace handle { bt; }", "'bt'"),
    ("trace handle { if fd > 1 { print fd; } }", "'if'"),
    ("trace handle { let x = fd; }", "'let'"),
    ("trace handle { print fd + 1; }", "binary operators"),
    ("trace 0x1145 { print fd; }", "address trace patterns"),
])
def test_unsupported_constructs_say_so(text, what):
    with pytest.raises(UnsupportedError) as info:
        plan(text)
    assert info.value.message.startswith("not supported yet: ") and what in info.value.message


def test_input_pid_needs_p():
    options = PlanOptions("t.gs", PidNamespace(False), input_pid=None)
    with pytest.raises(PlanError, match=r"\$input_pid is only available with -p PID"):
        build_plan(parse("trace handle { print $input_pid; }"), server_module(), options)
