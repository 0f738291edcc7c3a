"""Planning values wider than the probe's 64-bit registers, on gcc's DWARF
for tests/fixtures/wide_types.c (-O0): long double, __int128, _Complex and
vectors are printed from memory (captured as bytes, like structs) but take
no part in arithmetic or comparisons, which the probe computes in 64 bits
and without floating point; each refusal says so."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import InRegister, VariableKind, VisibleVariable
from gs_cgen.dwarf.types import FloatType, IntType, VectorType, type_size
from gs_cgen.errors import PlanError
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import MemoryCapture, NoCapture, PidNamespace
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script.parser import parse
from tests.unit.emit.test_golden import server_module

OPTIONS = PlanOptions("t.gs", PidNamespace(False))
LONG_DOUBLE = FloatType("long double", 16)
V4SI = VectorType(IntType("int", 4, True), 4)


@pytest.fixture(scope="module")
def module(wide_types_bin):
    return open_module(wide_types_bin)


def plan(module, text: str):
    return build_plan(parse(text), ModuleSet.of(module), OPTIONS).probes[0]


@pytest.mark.parametrize("name", ["x", "y", "c", "v", "u", "*w", "w.ld", "w.cld", "g_ld_third",
                                  "g_vld", "g_cq"])
def test_wide_values_are_captured_whole_from_memory(module, name):
    (slot,) = plan(module, f"trace wide_params {{ print {name}; }}").slots
    assert isinstance(slot.capture, MemoryCapture)
    assert slot.capture.size == type_size(slot.capture.ctype) == slot.size


def test_vector_elements_are_indexed_in_memory(module):
    slots = plan(module, "trace wide_params { print v[1]; print g_vi[3]; }").slots
    assert [(type(s.capture), s.capture.size) for s in slots] == [(MemoryCapture, 4)] * 2


@pytest.mark.parametrize("script, message", [
    ("print x + 1;", "'x' is a long double: floating-point arithmetic is not supported"),
    ("if x > 0 { print 1; }", "'x' is a long double: floating-point arithmetic"),
    ("print w.ld == 0;", "'w.ld' is a long double: floating-point arithmetic"),
    ("print y + 1;", "'y' is a __int128: 128-bit integers cannot take part in arithmetic or "
                     "comparisons (the probe computes in 64 bits); print the value itself"),
    ("print u == 0;", "'u' is a __int128 unsigned: 128-bit integers cannot take part"),
    ("if y { print 1; }", "'y' is a __int128: 128-bit integers"),
    ("print -y;", "'y' is a __int128: 128-bit integers"),
    ("print g_vi[y];", "'y' is a __int128: 128-bit integers"),
    ("print c * 2;", "'c' is a complex double: complex arithmetic is not supported"),
    ("print v + 1;", "'v' is a v4si: vector arithmetic is not supported; print the vector "
                     "or one element (v[0])"),
    ("print cast(y, \"int\");", "'y' is a __int128: 128-bit integers"),
])
def test_arithmetic_and_comparisons_are_refused_with_the_reason(module, script, message):
    with pytest.raises(PlanError) as error:
        plan(module, f"trace wide_params {{ {script} }}")
    assert error.value.message.startswith(message), error.value.message


def test_hex_of_int128_is_planned(module):
    # {:x} formats the captured bytes (128-bit hex), no arithmetic needed
    (slot,) = plan(module, 'trace wide_params { print "{:x}", y; }').slots
    assert isinstance(slot.capture, MemoryCapture) and slot.capture.size == 16


@pytest.mark.parametrize("register, name, ctype", [
    (33, "st0", LONG_DOUBLE), (40, "st7", LONG_DOUBLE), (17, "xmm0", V4SI),
    (18, "xmm1", LONG_DOUBLE)])
def test_value_in_x87_or_simd_register_is_unavailable_with_that_reason(register, name, ctype):
    # gcc -O2 keeps a long double in st0 (DW_OP_regx 33) and a vector in xmm0;
    # struct pt_regs has neither, so the probe cannot read them.
    fake = server_module()
    fake.variables[0x1145] = [VisibleVariable("z", ctype, InRegister(register),
                                              VariableKind.LOCAL)]
    (slot,) = plan(fake, "trace handle { print z; print $pid; }").slots[:1]
    assert slot.capture == NoCapture(ctype, f"value lives in {name}, which a uprobe cannot "
                                     "read", False)
