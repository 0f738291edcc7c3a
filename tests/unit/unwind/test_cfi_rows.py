"""CFI rows and the expression evaluator on real .eh_frame bytes: ld's
PLT rule (a CFA expression over rsp and rip) and glibc's signal
trampoline (an 'S' CIE whose register rules are expressions)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.cfi import RuleKind
from gs_cgen.unwind.expression import OutsideCopy, evaluate
from gs_cgen.unwind.model import RBX, RIP, RSP, StackCopy
from tests.prerequisites import require

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "unwind"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


@pytest.fixture(scope="module")
def chain_main(tmp_path_factory):
    out = tmp_path_factory.mktemp("cfi")
    flags = ["-O2", "-g", "-fomit-frame-pointer"]
    subprocess.run(["gcc", *flags, "-fPIC", "-shared", "-o", str(out / "libchain.so"),
                    str(FIXTURES / "chain_lib.c")], check=True)
    subprocess.run(["gcc", *flags, "-o", str(out / "chain_main"), str(FIXTURES / "chain_main.c"),
                    "-L", str(out), "-lchain"], check=True)
    return out / "chain_main"


def section_address(path: Path, name: str) -> int:
    text = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True).stdout
    line = next(l for l in text.splitlines() if f" {name} " in l)
    return int(line.split(name)[1].split()[1], 16)


def test_plt_cfa_expression(chain_main):
    module = open_module(str(chain_main))
    plt = section_address(chain_main, ".plt")
    # A PLT entry is 16 bytes: `jmp *GOT` (6), `push n` (5), `jmp PLT0`;
    # after the push the CFA is rsp + 16, before it rsp + 8 (ld's rule).
    entry = plt + 16
    for offset, expected in ((0, 8), (6, 8), (11, 16), (15, 16)):
        row = module.unwind_row_at(entry + offset)
        assert row is not None and row.cfa is None and row.cfa_expression
        registers = {RSP: 0x7000, RIP: 0x555555554000 + entry + offset}
        # the expression reads rip's low 4 bits only: a run-time rip with
        # the same page offset gives the same CFA
        assert evaluate(row.cfa_expression, registers, StackCopy(0, b"")) == 0x7000 + expected


def restore_rt_address() -> int:
    # a local symbol of libc6-dbg's .symtab
    text = subprocess.run(["readelf", "-sW", open_module(LIBC).debug_path or LIBC],
                          capture_output=True, text=True).stdout
    found = [int(l.split()[1], 16) for l in text.splitlines() if l.endswith(" __restore_rt")]
    require(None if found else "no symbol table for glibc (libc6-dbg)")
    return found[0]


def test_signal_trampoline_row():
    require(None if Path(LIBC).exists() else "no glibc")
    row = open_module(LIBC).unwind_row_at(restore_rt_address())
    assert row is not None and row.signal_frame
    assert row.registers[RIP].kind is RuleKind.EXPRESSION
    # glibc: CFA = *(rsp + 160) (uc_mcontext.rsp); rip at rsp + 168.
    assert row.cfa_expression is not None
    stack = StackCopy(0x1000, bytes(160) + (0x2222).to_bytes(8, "little") +
                      (0x3333).to_bytes(8, "little"))
    assert evaluate(row.cfa_expression, {RSP: 0x1000}, stack) == 0x2222
    assert evaluate(row.registers[RIP].expression, {RSP: 0x1000}, stack, (0x2222,)) == 0x1000 + 168
    with pytest.raises(OutsideCopy):
        evaluate(row.cfa_expression, {RSP: 0x1000}, StackCopy(0x1000, bytes(16)))


def test_ordinary_rows_are_offsets():
    row = open_module(LIBC).unwind_row_at(restore_rt_address() - 0x40)
    assert row is None or all(r.kind in RuleKind for r in row.registers.values())
    assert RBX not in (row.registers if row else {}) or row.registers[RBX].kind is RuleKind.OFFSET
