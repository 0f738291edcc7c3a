"""Planning on a fake module: sources, slot layout, render recipe, errors."""
from __future__ import annotations

import re

import pytest

from gs_cgen.abi import abi
from gs_cgen.dwarf.types import FloatType, PointerType
from gs_cgen.dwarf.model import AtAddress, FunctionSite, InRegister, VariableKind, VisibleVariable
from gs_cgen.errors import PlanError, UnsupportedError
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan import ir
from gs_cgen.plan.model import (ExprErrorLine, ExprLine, FormatLine, IfStep, MemoryCapture,
                                NoCapture, PidNamespace, PrintStep, ScalarCapture, SlotRef,
                                module_cookie)
from gs_cgen.script.ast import FormatKind
from gs_cgen.script.parser import parse
from tests.fakes import BOOL, INT, LONG, REQUEST_PTR
from tests.unit.emit.test_golden import server_module

OPTIONS = PlanOptions("t.gs", PidNamespace(False), input_pid=77)


def plan(text: str, module=None):
    return build_plan(parse(text), ModuleSet.of(module or server_module()), OPTIONS)


def test_captures_follow_locations():
    probe = plan("trace handle { print fd; print size; print g_count; print ok; }").probes[0]
    captures = [slot.capture for slot in probe.slots]
    cookie = module_cookie("/opt/app/bin/server", server_module().build_id)
    frame_slot = ir.BinaryOp("+", ir.RegisterValue("bp"), ir.Const(-20), False)
    assert captures[0] == MemoryCapture(frame_slot, INT, 4)
    assert captures[1] == ScalarCapture(ir.RegisterValue("si"), LONG)
    assert captures[2] == MemoryCapture(ir.ModuleAddress(cookie, "data", 0x4010), INT, 4)
    assert captures[3] == NoCapture(BOOL, "not available at this PC", True)


def test_slots_are_laid_out_after_header_and_bitmap_without_overlap():
    probe = plan("trace handle { print fd; print size; print $pid; }").probes[0]
    header = abi().structs["gs_event_hdr"].size
    assert probe.bitmap_offset == header and probe.bitmap_words == 1
    assert probe.slots[0].offset == header + 8
    for before, after in zip(probe.slots, probe.slots[1:]):
        assert after.offset >= before.data_offset + before.size
        assert before.data_offset == before.offset + 16   # status, length, address
    assert probe.event_size >= probe.slots[-1].data_offset + probe.slots[-1].size


def test_render_recipe_binds_placeholders_to_slots():
    probe = plan('trace handle { print "fd={} {:x}", fd, size; print g_count; }').probes[0]
    assert probe.lines == (FormatLine(("fd=", SlotRef(0, FormatKind.DEFAULT), " ",
                                       SlotRef(1, FormatKind.HEX)), 0),
                           ExprLine("g_count", 2, 1))
    assert probe.steps == (PrintStep(0, (0, 1)), PrintStep(1, (2,)))
    assert [slot.expr_text for slot in probe.slots] == ["fd", "size", "g_count"]


def test_specials_and_input_pid():
    probe = plan("trace handle { print $tid; print $input_pid; print 5; }").probes[0]
    assert [s.capture.value for s in probe.slots] == [ir.HeaderField("tid"), ir.Const(77),
                                                      ir.Const(5)]


def test_if_else_chain_steps_and_error_lines():
    probe = plan('trace handle { if fd > 1 { print "a"; } else if size == 2 { print "b"; } '
                 'else { print "c"; } }').probes[0]
    (step,) = probe.steps
    assert isinstance(step, IfStep) and step.else_is_chain
    assert isinstance(probe.lines[0], ExprErrorLine) and probe.lines[0].text == "fd > 1"
    (inner,) = step.otherwise
    assert isinstance(inner, IfStep) and not inner.else_is_chain


def test_let_is_an_alias_and_arithmetic_follows_c_types():
    probe = plan("trace handle { let doubled = fd * 2; print doubled + size; }").probes[0]
    capture = probe.slots[0].capture
    assert capture.ctype.name == "long"    # int * int -> int; int + long -> long


def test_function_static_is_read_as_a_global():
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("calls", INT, AtAddress(0x4020),
                                                VariableKind.LOCAL)]
    capture = plan("trace handle { print calls; }", module).probes[0].slots[0].capture
    assert capture.address.address == 0x4020


def test_simd_register_is_reported_not_read():
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("x", INT, InRegister(17), VariableKind.LOCAL)]
    capture = plan("trace handle { print x; }", module).probes[0].slots[0].capture
    assert capture == NoCapture(INT, "value lives in xmm0, which a uprobe cannot read", False)


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


def test_address_pattern_resolves_in_the_default_module():
    site = plan("trace 0x1145 { print fd; }").probes[0].site
    assert (site.address, site.function) == (0x1145, "handle")


def test_float_arithmetic_is_refused_clearly():
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("ratio", FloatType("double", 8),
                                                InRegister(6), VariableKind.LOCAL)]
    with pytest.raises(PlanError, match="floating-point arithmetic is not supported"):
        plan("trace handle { print ratio * 2; }", module)


def test_input_pid_needs_p():
    options = PlanOptions("t.gs", PidNamespace(False), input_pid=None)
    with pytest.raises(PlanError, match=r"\$input_pid is only available with -p PID"):
        build_plan(parse("trace handle { print $input_pid; }"), ModuleSet.of(server_module()), options)


def test_assembly_site_names_why_a_variable_is_missing():
    module = server_module()
    module.functions["__strlen_avx2"] = [FunctionSite(
        "__strlen_avx2", 0x1500, 0x1580, 0x1500, "strlen-avx2.S", 65,
        "__strlen_avx2 is hand-written assembly (strlen-avx2.S): DWARF describes no "
        "parameters or locals")]
    probe = plan("trace __strlen_avx2 { print $pid; print g_count; }", module).probes[0]
    assert probe.site.no_variables and len(probe.slots) == 2
    with pytest.raises(PlanError) as err:
        plan("trace __strlen_avx2 { print s; }", module)
    assert err.value.message == (
        "no variable 's' at __strlen_avx2 (__strlen_avx2): __strlen_avx2 is hand-written "
        "assembly (strlen-avx2.S): DWARF describes no parameters or locals")
    assert err.value.hints == ("special variables such as $pid and $tid, and globals, can be "
                               "read there",)


def test_dump_of_an_object_in_memory_reads_its_storage():
    """GhostScope's rule: `{:x.4}` of an int in memory shows its own bytes."""
    probe = plan('trace handle { print "{:x.4} {:x.2}", fd, g_count; }').probes[0]
    frame_slot = ir.BinaryOp("+", ir.RegisterValue("bp"), ir.Const(-20), False)
    cookie = module_cookie("/opt/app/bin/server", server_module().build_id)
    assert [slot.capture.address for slot in probe.slots] == [
        frame_slot, ir.ModuleAddress(cookie, "data", 0x4010)]


def test_dump_of_a_value_without_storage_is_refused():
    for text, name in (('print "{:x.4}", size;', "size"), ('print "{:x.4}", 10;', "10"),
                       ('print "{:x.4}", fd + 1;', "fd + 1")):
        with pytest.raises(PlanError, match=f"'{re.escape(name)}' has no address to dump"):
            plan(f"trace handle {{ {text} }}")


def test_enumeration_constants_are_names_after_variables():
    """`if g_color == GREEN`: an enumerator is a typed constant, as in C and
    gdb; a variable of the same name would come first."""
    from tests.fakes import COLOR
    module = server_module()
    module.enums.append(COLOR)
    probe = plan("trace handle { print g_color == GREEN; print BLUE; }", module).probes[0]
    assert probe.slots[1].capture == ScalarCapture(ir.Const(6), COLOR)


def test_a_member_of_a_pointer_to_pointer_names_the_declared_type():
    """`f.a` with f a `struct request**`: refused (one automatic
    dereference only, as GhostScope), naming f's own type, not its target's."""
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("pp", PointerType(lambda: REQUEST_PTR),
                                                InRegister(5), VariableKind.PARAMETER)]
    with pytest.raises(PlanError) as err:
        plan("trace handle { print pp.id; }", module)
    assert err.value.message == "'pp' has type 'struct request**', which has no member 'id'"
