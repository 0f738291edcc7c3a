"""Return probes on a fake module (plan/retprobe.py, plan/retval.py):
the site pair, the entry record, $retval by the psABI's classes, errors."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf.types import (ArrayType, BaseClass, ComplexType, FloatType, PointerType,
                                 StructMember, StructType, VoidType)
from gs_cgen.errors import DebugInfoError, PlanError
from gs_cgen.plan import ir
from gs_cgen.plan.model import EntryCapture, MemoryCapture, NoCapture, ScalarCapture
from gs_cgen.plan.retval import ReturnClass, classify, return_value_place
from gs_cgen.dwarf.model import FunctionSite
from tests.fakes import CHAR, INT, LONG, REQUEST
from tests.unit.plan.test_build import plan
from tests.unit.emit.test_golden import server_module

DOUBLE = FloatType("double", 8)
FLOAT = FloatType("float", 4)
LONG_DOUBLE = FloatType("long double", 16)


def struct(name: str, *members: tuple[str, object, int], size: int) -> StructType:
    return StructType("struct", name, size,
                      lambda: tuple(StructMember(n, t, o) for n, t, o in members))


def test_a_return_block_is_a_uretprobe_at_the_entry_paired_with_entry_probes():
    probe = plan("trace handle:return { print $retval; print $entry(fd); }").probes[0]
    # handle: first instruction 0x1139, gdb's `break handle` 0x1145.
    assert probe.site.at_return and probe.site.address == 0x1139
    assert not probe.entry.site.at_return and probe.entry.site.address == 0x1139
    assert probe.entry_capture.site.address == 0x1145
    assert probe.slots[0].capture == ScalarCapture(ir.Convert(ir.RegisterValue("ax"), 4, True), INT)
    copied = probe.slots[1].capture
    assert isinstance(copied, EntryCapture) and copied.ctype == INT
    # The record: CFA, return address, entry pc, then fd (filled at 0x1145).
    record = probe.entry.slots
    assert record[0].capture == ScalarCapture(
        ir.BinaryOp("+", ir.RegisterValue("sp"), ir.Const(8), False), record[0].capture.ctype)
    assert record[1].capture.value == ir.Load(ir.RegisterValue("sp"), 8, False)
    assert isinstance(record[3].capture, NoCapture) and copied.record_offset == record[3].offset
    # The capture probe finds the record by the CFA from the CFI (rbp + 16)
    # and fills fd, read as `trace handle { print fd; }` reads it.
    capture = probe.entry_capture
    assert capture.slots[0].capture.value == \
        ir.BinaryOp("+", ir.RegisterValue("bp"), ir.Const(16), False)
    assert capture.slots[3].capture == MemoryCapture(
        ir.BinaryOp("+", ir.RegisterValue("bp"), ir.Const(-20), False), INT, 4)
    assert [step.slots for step in capture.steps] == [(3,)]


def test_entry_values_are_recorded_once_and_read_at_the_entry_when_it_is_the_probe_site():
    module = server_module()
    module.functions["handle"] = [FunctionSite("handle", 0x1145, 0x1180, 0x1145, "server.c", 40)]
    probe = plan("trace handle:return { print $entry(size); print \"{}\", $entry(size) + 1; "
                 "print $entry(size); }", module).probes[0]
    assert probe.entry_capture is None
    assert len(probe.entry.slots) == 4           # CFA, return address, entry pc, size
    assert probe.entry.slots[3].capture == ScalarCapture(ir.RegisterValue("si"), LONG)
    assert probe.slots[0].capture.record_offset == probe.slots[2].capture.record_offset


def test_duration_is_now_minus_the_recorded_entry_time():
    probe = plan("trace handle:return { print $duration; }").probes[0]
    assert probe.slots[0].capture.value == ir.BinaryOp(
        "-", ir.HeaderField("timestamp_ns"), ir.EntryRecordValue(0), False)


@pytest.mark.parametrize("ctype, expected", [
    (INT, ReturnClass.INTEGER),
    (PointerType(lambda: CHAR), ReturnClass.INTEGER),
    (struct("pair", ("first", LONG, 0), ("second", INT, 8), size=16), ReturnClass.INTEGER),
    (struct("big", ("v", ArrayType(LONG, 4), 0), ("tag", INT, 32), size=40), ReturnClass.MEMORY),
    (struct("mixed", ("d", DOUBLE, 0), ("l", LONG, 8), size=16), ReturnClass.SSE),
    (struct("floats", ("a", FLOAT, 0), ("b", FLOAT, 4), size=8), ReturnClass.SSE),
    # An int and a float share one eightbyte: INTEGER (psABI merge rule).
    (struct("intfloat", ("a", INT, 0), ("b", FLOAT, 4), size=8), ReturnClass.INTEGER),
    (struct("ld", ("x", LONG_DOUBLE, 0), size=16), ReturnClass.X87),
    (DOUBLE, ReturnClass.SSE),
    (LONG_DOUBLE, ReturnClass.X87),
    (ComplexType("complex double", 16, DOUBLE), ReturnClass.SSE),
    (REQUEST, ReturnClass.MEMORY),           # 24 bytes: more than two eightbytes
])
def test_psabi_classes(ctype, expected):
    assert classify(ctype) is expected


def derived(base: StructType, offset: int | None, *members, size: int) -> StructType:
    return StructType("struct", "Derived", size,
                      lambda: tuple(StructMember(n, t, o) for n, t, o in members),
                      bases_loader=lambda: (BaseClass(base, offset, offset is None, -24),))


def test_a_base_class_is_classified_with_the_members():
    """A C++ base's bytes count (`struct D : B { long y; }` with B's double
    in the first eightbyte is SSE, so $retval is not read from rax);
    a class with a virtual base is returned in memory."""
    doubles = struct("B", ("x", DOUBLE, 0), size=8)
    assert classify(derived(doubles, 0, ("y", LONG, 8), size=16)) is ReturnClass.SSE
    ints = struct("B", ("x", INT, 0), size=4)
    assert classify(derived(ints, 0, ("y", INT, 4), size=8)) is ReturnClass.INTEGER
    assert classify(derived(ints, None, ("y", INT, 8), size=16)) is ReturnClass.MEMORY


def test_retval_places_by_class():
    pair = struct("pair", ("first", LONG, 0), ("second", INT, 8), size=16)
    place = return_value_place(pair, "make_pair", None)
    assert isinstance(place, ir.CompositePlace)
    assert [(p.offset, p.size, p.place.value) for p in place.parts] == \
        [(0, 8, ir.RegisterValue("ax")), (8, 8, ir.RegisterValue("dx"))]
    big = struct("big", ("v", ArrayType(LONG, 4), 0), size=32)
    assert return_value_place(big, "make_big", None) == \
        ir.MemoryPlace(ir.NonNull(ir.RegisterValue("ax")), big)
    # rax's upper 32 bits are undefined for an int: C's value is the low ones, sign-extended
    assert return_value_place(INT, "f", None) == \
        ir.ValuePlace(ir.Convert(ir.RegisterValue("ax"), 4, True), INT)
    assert return_value_place(LONG, "f", None) == ir.ValuePlace(ir.RegisterValue("ax"), LONG)


@pytest.mark.parametrize("ctype, message", [
    (DOUBLE, "'f' returns 'double', which the x86-64 ABI returns in xmm0/xmm1; a uprobe sees "
             "only the general-purpose registers (struct pt_regs), so $retval cannot be read"),
    (LONG_DOUBLE, "'f' returns 'long double', which the x86-64 ABI returns in st0 (the x87 "
                  "stack)"),
    (VoidType(), "'f' returns void: there is no $retval"),
])
def test_unreadable_returns_are_errors(ctype, message):
    with pytest.raises(PlanError) as caught:
        return_value_place(ctype, "f", None)
    assert caught.value.message.startswith(message)


def test_parameters_in_a_return_block_suggest_entry():
    with pytest.raises(PlanError) as caught:
        plan("trace handle:return { print fd; }")
    assert caught.value.message == ("'fd' is a parameter or local of 'handle', which is not "
                                    "readable when it returns")
    assert caught.value.hints == ("write $entry(fd) for its value when the call was entered",)
    # Globals are read at the return; `let` names too.
    plan("trace handle:return { let x = $entry(fd); print g_count; print x; }")


@pytest.mark.parametrize("text, name", [
    ("trace handle { print $retval; }", "$retval"),
    ("trace handle { if $duration > 3 { print 1; } }", "$duration"),
    ("trace server.c:42 { print $entry(fd); }", "$entry(...)"),
])
def test_return_specials_outside_a_return_block(text, name):
    with pytest.raises(PlanError) as caught:
        plan(text)
    assert caught.value.message.startswith(f"{name} is only available in a return block")


def test_nested_return_specials_inside_entry():
    with pytest.raises(PlanError) as caught:
        plan("trace handle:return { print $entry($duration); }")
    assert "cannot be used inside $entry" in caught.value.message


def test_a_function_that_exists_only_inlined():
    module = server_module()
    module.functions["handle"] = [FunctionSite("handle", 0x1145, 0x1180, 0x1145, "server.c", 40,
                                               frame_die=0x99)]
    module.inlined_dies = {0x99}
    with pytest.raises(DebugInfoError) as caught:
        plan("trace handle:return { print $duration; }", module)
    assert caught.value.message == ("'handle' exists only inlined into its callers: it has no "
                                    "return instruction of its own to probe")


def test_inlined_copies_a_return_probe_skips_are_a_note():
    """A call through an inlined copy never reaches the uretprobe: the
    user is told, not left with a trace that prints nothing."""
    module = server_module()
    module.functions["handle"] += [
        FunctionSite("handle", 0x1200, 0x1220, 0x1200, "server.c", 40, frame_die=0x98),
        FunctionSite("handle", 0x1300, 0x1320, 0x1300, "server.c", 40, frame_die=0x99)]
    module.inlined_dies = {0x98, 0x99}
    probes = plan("trace handle:return { print $duration; }", module).probes
    assert [p.site.address for p in probes] == [0x1139]
    assert probes[0].notes == ("note: 'handle:return' probes the out-of-line handle only; its "
                               "2 inlined copies return into their callers (`trace handle "
                               "{ ... }` sees them on entry)",)


def test_a_string_entry_is_its_characters_in_a_print_and_its_pointer_in_an_expression():
    from gs_cgen.plan.model import StringCapture
    probe = plan('trace handle:return { print $entry(req->path); '
                 'if $entry(g_name) == "x" { print 1; } }').probes[0]
    record = probe.entry.slots
    # req->path is a char[16] in memory: printed whole. g_name (char *, a
    # global): its pointer is recorded for the comparison, not its text.
    assert isinstance(probe.slots[0].capture, EntryCapture)
    captured = [slot.capture for slot in probe.entry_capture.slots[3:]]
    assert [type(c).__name__ for c in captured] == ["MemoryCapture", "MemoryCapture"]
    assert captured[1].size == 8 and len(record) == 5
    assert not any(isinstance(slot.capture, StringCapture) for slot in record)


def test_args_and_locals_in_a_return_block_suggest_entry():
    with pytest.raises(PlanError) as caught:
        plan("trace handle:return { print $args; }")
    assert caught.value.message == ("$args lists variables of 'handle', which are not readable "
                                    "when it returns")
    assert caught.value.hints == ("print their values at entry: $entry(req), $entry(fd), "
                                  "$entry(size)",)
