"""DW_OP_entry_value(DW_OP_regN): usable only while the function has not
written register N; otherwise reported as optimized out, never guessed."""
from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.elf.code import canonical_register
from collections import namedtuple

from gs_cgen.dwarf.location.callsites import translate_value
from gs_cgen.dwarf.model import CallSiteValue, InRegister, UnsupportedLocation, ValueExpression
from gs_cgen.dwarf.types import IntType

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "entry_values.c"
INT = IntType("int", 4, True)
Op = namedtuple("Op", "op_name args")


@pytest.mark.parametrize("name, full", [
    ("eax", "rax"), ("al", "rax"), ("ah", "rax"), ("esi", "rsi"), ("sil", "rsi"),
    ("edi", "rdi"), ("dil", "rdi"), ("r8d", "r8"), ("r10w", "r10"), ("r11b", "r11"),
    ("bpl", "rbp"), ("rsp", "rsp"), ("rflags", "rflags"), ("xmm3", "xmm3"), ("ymm3", "xmm3"),
    ("zmm12", "xmm12")])
def test_canonical_register(name, full):
    assert canonical_register(name) == full


def test_call_value_programs_translate_to_trees():
    ops = [Op("DW_OP_breg12", [-1]), Op("DW_OP_lit7", []), Op("DW_OP_mul", []),
           Op("DW_OP_plus_uconst", [2])]
    assert translate_value(ops, frozenset()) == ValueExpression(
        ("+", ("*", ("reg", 12, -1), ("const", 7)), ("const", 2)))
    # r12 rewritten by the callee, or a caller-saved register: unknowable
    assert translate_value(ops, frozenset({"r12"})) is None
    assert translate_value([Op("DW_OP_breg5", [0])], frozenset()) is None
    assert translate_value([Op("DW_OP_deref", [])], frozenset()) is None
    # A static object's address (main passing its array): relocated by the probe.
    assert translate_value([Op("DW_OP_addr", [0x2020])], frozenset()) == \
        ValueExpression(("static", 0x2020))


def test_entry_value_after_the_loop_comes_from_the_call_site(tmp_path):
    binary = tmp_path / "entry_values"
    subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(binary), str(FIXTURE)],
                   check=True)
    module = open_module(str(binary))
    line = next(n for n, text in enumerate(FIXTURE.read_text().splitlines(), 1)
                if "g += s;" in text)
    (site,) = module.find_lines(FIXTURE.name, line)
    variables = {v.name: v for v in module.variables_at(site.address)}
    # The loop rewrote edi (add %ecx,%edi), so the register is useless; gdb 13
    # shows a=a@entry=N from main's DW_AT_call_value, and so do we.
    location = variables["a"].location
    assert isinstance(location, CallSiteValue) and len(location.cases) == 1
    assert variables["b"].location == InRegister(4)


def test_removed_parameter_comes_from_the_call_site(tmp_path):
    """DW_OP_GNU_parameter_ref (param_ref.c): the call site that names the
    parameter is found; its value (main's argc at main's entry) is one no
    call site of main describes, so `factor` is optimized out — gdb says
    the same — and says why, never a stale number."""
    source = FIXTURE.parent / "param_ref.c"
    binary = tmp_path / "param_ref"
    subprocess.run(["gcc", "-g", "-O2", "-o", str(binary), str(source)], check=True)
    module = open_module(str(binary))
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1)
                if "marker: scale" in text)
    (site,) = module.find_lines(source.name, line)
    factor = {v.name: v for v in module.variables_at(site.address)}["factor"]
    assert factor.location.reason == ("entry value of a parameter the compiler removed, and no "
                                      "call site says how it was computed")


def test_caller_registers_come_from_the_callees_cfi():
    """gdb's rule: a callee-saved register the callee has saved at the PC
    (CFI offset(N)) is read at [CFA + N]; one it has not saved there still
    holds the caller's value; without CFI only never-written registers count."""
    ops = [Op("DW_OP_breg12", [8])]
    at_cfa = ("deref", ("reg", 7, 16 - 24), 8)
    assert translate_value(ops, frozenset({"r12"}), {12: at_cfa}) == ValueExpression(
        ("+", at_cfa, ("const", 8)))
    assert translate_value(ops, frozenset({"r12"}), {3: at_cfa}) == ValueExpression(("reg", 12, 8))
    assert translate_value(ops, frozenset({"r12"}), None) is None
    assert translate_value([Op("DW_OP_breg5", [0])], frozenset(), {}) is None   # rdi: caller-saved


def test_float_arguments_come_from_constant_call_sites(tmp_path):
    """float_args.c at -O2: f and d are in xmm0/xmm1 at mix()'s entry (no
    probe reads those); main's call sites pass constants (DW_OP_const_type),
    whose bits are the values. The third call computes f: two cases for f,
    three for d. After note() (a call clobbers every SIMD register), d,
    still in xmm1 by DWARF, is unsupported."""
    source = FIXTURE.parent / "float_args.c"
    binary = tmp_path / "float_args"
    subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(binary), str(source)],
                   check=True)
    module = open_module(str(binary))
    (site,) = module.find_functions("mix")
    found = {v.name: v.location for v in module.variables_at(site.probe_address)}
    bits = {pc: value.tree for pc, value in found["f"].cases}
    assert sorted(bits.values()) == [("const", struct.unpack("<I", struct.pack("<f", x))[0])
                                     for x in (0.75, 1.5)]
    doubles = sorted(value.tree[1] for _, value in found["d"].cases)
    assert doubles == sorted(struct.unpack("<Q", struct.pack("<d", x))[0] for x in (-2.5, 4.0, 2.0))
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1)
                if "LINE: after the call" in text)
    (after,) = module.find_lines(source.name, line)
    found = {v.name: v.location for v in module.variables_at(after.address)}
    assert isinstance(found["f"], CallSiteValue)          # DW_OP_entry_value(xmm0)
    assert found["d"] == UnsupportedLocation("value in SIMD register xmm1 (not in pt_regs)")


def test_a_raw_hit_that_returns_outside_its_cus_code_is_no_call_site():
    """pyrsistent -O3: a raw hit for a reference to a callee decoded as a
    "call site" returning to 0xa00000000001908, whose children did not
    parse (`internal error: KeyError: 3644`). A real one returns into a
    function of its own CU."""
    from types import SimpleNamespace as NS
    from gs_cgen.dwarf.location.callsites import _in_its_cus_code
    cu = NS(cu_offset=0x100)
    index = NS(in_code_of=lambda pc, cu_offset: 0x1000 <= pc < 0x2000 and cu_offset == cu.cu_offset)

    def call_site(return_pc, cu_offset=0x100):
        return NS(attributes={"DW_AT_call_return_pc": NS(value=return_pc)},
                  cu=NS(cu_offset=cu_offset))
    assert _in_its_cus_code(index, call_site(0x1010))
    assert _in_its_cus_code(index, call_site(0x2000))           # a call that ends the function
    assert not _in_its_cus_code(index, call_site(0xA00000000001908))
    assert not _in_its_cus_code(index, call_site(0x1010, cu_offset=0x900))
    assert not _in_its_cus_code(index, NS(attributes={}, cu=cu))
