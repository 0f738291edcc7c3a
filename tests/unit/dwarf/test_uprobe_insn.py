"""The kernel's uprobe emulation table (Linux 6.16-6.18
arch/x86/kernel/uprobes.c), as elf/uprobe_insn.py encodes it;
tests/live/test_hitcost_live.py checks it against the running kernel."""
from __future__ import annotations

import pytest

from gs_cgen.elf.uprobe_insn import (UprobeHandling, probeable_successor, uprobe_handling,
                                      uprobe_refusal, writes_only_stack)

EMULATED, STEPPED = UprobeHandling.EMULATED, UprobeHandling.SINGLE_STEPPED


@pytest.mark.parametrize("code, expected", [
    ("90", EMULATED),                    # nop
    ("6690", EMULATED),                  # x86_nops[2]
    ("0f1f440000", EMULATED),            # x86_nops[5]
    ("660f1f440000", EMULATED),          # x86_nops[6]
    ("0f1f840000000000", EMULATED),      # x86_nops[8]
    ("f390", EMULATED),                  # pause: opcode 0x90 with a prefix
    ("662e0f1f840000000000", STEPPED),   # GCC's 10-byte nop: not an x86_nops entry
    ("0f1f0400", STEPPED),               # a 4-byte nopl the kernel does not list
    ("55", EMULATED), ("53", EMULATED),  # push %rbp, push %rbx
    ("4154", EMULATED),                  # push %r12 (REX 0x41 only)
    ("4855", STEPPED),                   # push with REX.W
    ("eb00", EMULATED), ("e900000000", EMULATED), ("e800000000", EMULATED),
    ("7405", EMULATED), ("0f8400000000", EMULATED),   # jcc rel8, rel32
    ("66e80000", STEPPED),               # 16-bit call: refused by the kernel, never emulated
    ("f30f1efa", STEPPED),               # endbr64
    ("4889e5", STEPPED), ("897dfc", STEPPED), ("488d442408", STEPPED),   # mov, spill, lea
    ("4883ec10", STEPPED),               # sub $16,%rsp
])
def test_handling(code, expected):
    assert uprobe_handling(bytes.fromhex(code) + b"\xc3" * 8) is expected


def test_a_frame_setup_with_spills_writes_only_the_stack():
    # push %rbp; mov %rsp,%rbp; mov %edi,-0x4(%rbp); mov %rsi,-0x10(%rbp)
    assert writes_only_stack(bytes.fromhex("554889e5897dfc488975f0"), 0x1189)


@pytest.mark.parametrize("code", [
    "554889e5e800000000",                # a call (mcount, a stack probe)
    "554889e548890500000000",            # a store through %rip: a global
    "554889e54889c7f3ab",                # rep stos through %rdi
    "5548",                              # bytes that do not decode whole
])
def test_anything_else_in_a_prologue_keeps_the_probe_after_it(code):
    assert not writes_only_stack(bytes.fromhex(code), 0)


@pytest.mark.parametrize("code, reason", [
    ("c501efff", "a VEX instruction with opcode byte 0xef"),     # vpxor: glibc's __strcmp_avx2
    ("c5fe6f07", "a VEX instruction with opcode byte 0x6f"),     # vmovdqu (%rdi),%ymm0
    ("c5f81007", None),                  # vmovups: opcode 0x10 is adc's, which is allowed
    ("c4e27d7807", None),                # vpbroadcastb (VEX3): 0x78 is js's
    ("62f17c481007", None),              # EVEX vmovups
    ("3effe0", "its 0x3e prefix"),       # notrack jmp *%rax
    ("f0830701", "its 0xf0 prefix"),     # lock addl
    ("3e90", "its 0x3e prefix"),
    ("e410", "the instruction with opcode byte 0xe4"),           # in $0x10,%al
    ("8ed0", "a move to %ss, which masks the single-step exception"),
    ("66e900000000", "a branch with a 0x66 prefix"),
    ("89f8", None), ("55", None), ("f30f1efa", None), ("0f1f440000", None),
    ("660f3800c1", None),                # pshufb: three-byte opcodes pass on 0x0f
])
def test_refusal(code, reason):
    """tests/live/test_refused_insns_live.py checks these against the kernel."""
    assert uprobe_refusal(bytes.fromhex(code) + b"\xc3" * 8) == reason


def test_the_next_probeable_instruction_is_found_in_a_straight_line():
    # vpxor; vmovdqu (%rdi),%ymm0; mov %edi,%eax
    code = bytes.fromhex("c501efff" "c5fe6f07" "89f8" "c3")
    assert probeable_successor(code, 0x1000) == (
        0x1008, "vpxor xmm15, xmm15, xmm7; vmovdqu ymm0, ymmword ptr [rdi]")
    assert probeable_successor(bytes.fromhex("c501efff" "eb00" "c3"), 0x1000) == (0x1004, \
        "vpxor xmm15, xmm15, xmm7")      # the jmp itself takes a probe
    assert probeable_successor(bytes.fromhex("3effe0" "c3"), 0x1000) is None   # it branches
    assert probeable_successor(bytes.fromhex("89f8"), 0x1000) is None           # not refused
