"""How the kernel runs the instruction a uprobe replaces: emulated in the
breakpoint handler (~0.5 µs per hit here) or copied out of line and
single-stepped (a second trap, ~10 µs). The cost of every hit depends on
it, so probe placement asks.

The rules are Linux 6.16-6.18's arch/x86/kernel/uprobes.c
arch_uprobe_analyze_insn(), for 64-bit processes:

  branch_setup_xol_ops()
    - the bytes are exactly the kernel's x86_nops[len] for len <= 8
      (ASM_NOP_MAX): 90, 66 90, 0f 1f 00, 0f 1f 40 00, 0f 1f 44 00 00,
      66 0f 1f 44 00 00, 0f 1f 80 00*4, 0f 1f 84 00*5 (commit 610f6e14c29d
      "uprobes/x86: Add support to emulate NOP instructions", v6.16);
      other NOP encodings are single-stepped;
    - opcode 0x90 with any prefixes ("prefix* + nop", e.g. f3 90 pause);
    - jmp rel8/rel32 (eb, e9), call rel32 (e8), jcc rel8 (70-7f) and
      rel32 (0f 80-8f), unless a 0x66 prefix is present (the uprobe is
      then refused: -ENOTSUPP).
  push_setup_xol_ops()
    - push %reg: 50-57 alone, or 41 50-57 (only the REX prefix 0x41).
  everything else (mov, lea, sub, endbr64, push with REX.W, ...) is
  single-stepped. tests/live/test_hitcost_live.py checks this table
  against the running kernel (an emulated hit creates no XOL area).
"""
from __future__ import annotations

from enum import Enum

_X86_NOPS = {bytes.fromhex(h) for h in (
    "90", "6690", "0f1f00", "0f1f4000", "0f1f440000", "660f1f440000",
    "0f1f8000000000", "0f1f840000000000")}
_LEGACY_PREFIXES = frozenset((0xF0, 0xF2, 0xF3, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65, 0x66, 0x67))
_MAX_INSTRUCTION = 15


class UprobeHandling(Enum):
    EMULATED = "emulated"
    SINGLE_STEPPED = "single-stepped"


def uprobe_handling(code: bytes) -> UprobeHandling:
    """How a uprobe on the first instruction of `code` is run. No decoder
    is needed: each x86_nops entry is a whole instruction, and the other
    cases are decided by prefixes and opcode alone."""
    if any(code.startswith(nop) for nop in _X86_NOPS):
        return UprobeHandling.EMULATED
    prefixes, _rex, opcode = _split(code[:_MAX_INSTRUCTION])
    if _is_branch(opcode) and 0x66 not in prefixes:
        return UprobeHandling.EMULATED
    if opcode[:1] == b"\x90":
        return UprobeHandling.EMULATED
    if _is_push(code):
        return UprobeHandling.EMULATED
    return UprobeHandling.SINGLE_STEPPED


def _split(insn: bytes) -> tuple[bytes, int | None, bytes]:
    """(legacy prefixes, REX byte or None, opcode and what follows)."""
    i = 0
    while i < len(insn) and insn[i] in _LEGACY_PREFIXES:
        i += 1
    rex = insn[i] if i < len(insn) and 0x40 <= insn[i] <= 0x4F else None
    return insn[:i], rex, insn[i + (rex is not None):]


def _is_branch(opcode: bytes) -> bool:
    if not opcode:
        return False
    first = opcode[0]
    if first in (0xEB, 0xE9, 0xE8) or 0x70 <= first <= 0x7F:
        return True
    return first == 0x0F and len(opcode) > 1 and 0x80 <= opcode[1] <= 0x8F


def _is_push(code: bytes) -> bool:
    """push %reg alone (50-57) or with REX 0x41 only (r8-r15)."""
    if code and 0x50 <= code[0] <= 0x57:
        return True
    return len(code) > 1 and code[0] == 0x41 and 0x50 <= code[1] <= 0x57


# A prologue instruction that keeps every global as it was: frame set-up
# and parameter spills. Anything else (a call to mcount or a stack probe,
# a string store, a store through another register) may change memory a
# probe reads, so a probe does not move before it.
_STACK_ONLY_MNEMONICS = frozenset((
    "push", "mov", "movq", "movl", "movw", "movb", "movabs", "movaps", "movups", "movapd",
    "movsd", "movss", "movdqa", "movdqu", "sub", "add", "lea", "and", "endbr64", "nop", "xchg"))


def writes_only_stack(code: bytes, address: int) -> bool:
    """True when every instruction of `code` (at `address`) writes memory
    only in the stack frame (through rsp or rbp) and calls nothing."""
    import capstone                 # noqa: PLC0415
    from capstone import x86        # noqa: PLC0415
    decoder = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    decoder.detail = True
    decoded = 0
    for insn in decoder.disasm(code, address):
        decoded += insn.size
        if insn.mnemonic not in _STACK_ONLY_MNEMONICS:
            return False
        for operand in insn.operands:
            if operand.type == x86.X86_OP_MEM and operand.access & capstone.CS_AC_WRITE and \
                    operand.mem.base not in (x86.X86_REG_RSP, x86.X86_REG_RBP):
                return False
    return decoded == len(code)
