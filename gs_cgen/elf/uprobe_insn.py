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

Some instructions the kernel refuses to probe at all (uprobe_init_insn(),
-ENOTSUPP): one with a CS/DS/ES/SS segment or LOCK prefix (`notrack jmp`
is 3e ff), `mov %reg,%ss`, and one whose first opcode byte its
good_insns_64 table marks bad (in/out, int3, hlt, ...). For a VEX or EVEX
instruction the kernel's decoder takes the byte after the VEX prefix as
that opcode, so `vpxor` (c5 .. ef) and `vmovdqu` (c5 .. 6f) are refused
while `vmovups` (c5 .. 10) is not: glibc's AVX2 string functions begin
so. A refused probe on a file no process maps yet registers without
complaint and never fires, so placement must know beforehand.
"""
from __future__ import annotations

from enum import Enum

_X86_NOPS = {bytes.fromhex(h) for h in (
    "90", "6690", "0f1f00", "0f1f4000", "0f1f440000", "660f1f440000",
    "0f1f8000000000", "0f1f840000000000")}
_LEGACY_PREFIXES = frozenset((0xF0, 0xF2, 0xF3, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65, 0x66, 0x67))
_MAX_INSTRUCTION = 15
_REFUSED_PREFIXES = frozenset((0x26, 0x2E, 0x36, 0x3E, 0xF0))
# good_insns_64, a row of 16 opcodes per string: 1 = may be probed.
_GOOD_OPCODES = "".join((
    "1111110011111101", "1111110011111100", "1111111011111110", "1111111011111110",
    "1111111111111111", "1111111111111111", "0001111111110000", "1111111111111111",
    "1101111111111111", "1111111111011111", "1111111111111111", "1111111111111111",
    "1111111111110000", "1111000111111111", "1111000011010000", "1011011111001111"))
_VEX_PREFIX_BYTES = {0xC5: 2, 0xC4: 3, 0x62: 4}      # VEX2, VEX3, EVEX (64-bit mode)


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


def uprobe_refusal(code: bytes) -> str | None:
    """Why the kernel refuses a uprobe on the first instruction of `code`
    (see above), or None when it takes it."""
    prefixes, rex, rest = _split(code[:_MAX_INSTRUCTION])
    refused = [p for p in prefixes if p in _REFUSED_PREFIXES]
    if refused:
        return f"its 0x{refused[0]:02x} prefix"
    if not rest:
        return "an undecodable instruction"
    encoding = "the instruction"
    opcode = rest[0]
    if rex is None and opcode in _VEX_PREFIX_BYTES:
        encoding = "an EVEX instruction" if opcode == 0x62 else "a VEX instruction"
        if len(rest) <= _VEX_PREFIX_BYTES[opcode]:
            return "an undecodable instruction"
        opcode = rest[_VEX_PREFIX_BYTES[opcode]]
    elif opcode == 0x8E and len(rest) > 1 and (rest[1] >> 3) & 7 == 2:
        return "a move to %ss, which masks the single-step exception"
    if _GOOD_OPCODES[opcode] == "0":
        return f"{encoding} with opcode byte 0x{opcode:02x}"
    if _is_branch(rest) and 0x66 in prefixes:
        return "a branch with a 0x66 prefix"
    return None


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


def probeable_successor(code: bytes, address: int, limit: int = 4) -> tuple[int, str] | None:
    """The first instruction of `code` (at `address`) the kernel takes a
    uprobe on, reached from `address` in a straight line through refused
    ones that neither branch nor move the stack pointer (a return probe
    still finds the return address at sp); with what it passed
    (`vpxor %xmm15,%xmm15,%xmm15`). None when there is no such one within
    `limit` instructions."""
    import capstone                 # noqa: PLC0415
    decoder = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    decoder.detail = True
    passed = []
    for insn in decoder.disasm(code, address):
        if uprobe_refusal(bytes(insn.bytes)) is None:
            return (insn.address, "; ".join(passed)) if passed else None
        flow = (capstone.CS_GRP_JUMP, capstone.CS_GRP_CALL, capstone.CS_GRP_RET,
                capstone.CS_GRP_INT, capstone.CS_GRP_IRET)
        if len(passed) == limit or any(insn.group(g) for g in flow) or \
                any(insn.reg_name(r) in ("rsp", "esp", "sp") for r in insn.regs_access()[1]):
            return None
        passed.append(f"{insn.mnemonic} {insn.op_str}".strip())
    return None


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
