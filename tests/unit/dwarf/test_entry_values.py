"""DW_OP_entry_value(DW_OP_regN): usable only while the function has not
written register N; otherwise reported as optimized out, never guessed."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.code import canonical_register
from gs_cgen.dwarf.model import EntryValue, InRegister, OptimizedOut, VariableKind, VisibleVariable
from gs_cgen.dwarf.module import _resolve_entry_value
from gs_cgen.dwarf.types import IntType

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "entry_values.c"
INT = IntType("int", 4, True)


@pytest.mark.parametrize("name, full", [
    ("eax", "rax"), ("al", "rax"), ("ah", "rax"), ("esi", "rsi"), ("sil", "rsi"),
    ("edi", "rdi"), ("dil", "rdi"), ("r8d", "r8"), ("r10w", "r10"), ("r11b", "r11"),
    ("bpl", "rbp"), ("rsp", "rsp"), ("rflags", "rflags")])
def test_canonical_register(name, full):
    assert canonical_register(name) == full


def test_untouched_register_keeps_its_entry_value():
    var = VisibleVariable("a", INT, EntryValue(5), VariableKind.PARAMETER)
    assert _resolve_entry_value(var, frozenset({"rax"})).location == InRegister(5)
    gone = _resolve_entry_value(var, frozenset({"rdi"})).location
    assert gone == OptimizedOut("entry value of rdi, which this function overwrites")


def test_entry_value_after_the_loop_is_optimized_out(tmp_path):
    binary = tmp_path / "entry_values"
    subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(binary), str(FIXTURE)],
                   check=True)
    module = open_module(str(binary))
    line = next(n for n, text in enumerate(FIXTURE.read_text().splitlines(), 1)
                if "g += s;" in text)
    (site,) = module.find_lines(FIXTURE.name, line)
    variables = {v.name: v for v in module.variables_at(site.address)}
    # gdb 13 shows a=a@entry from the caller's call-site value; the register
    # itself was rewritten by the loop (add %ecx,%edi), so we must not read it.
    assert isinstance(variables["a"].location, OptimizedOut)
    assert variables["b"].location == InRegister(4)
