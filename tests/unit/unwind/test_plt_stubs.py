"""PLT stubs named as gdb's `bt` names them (elf/plt.py): the layouts ld
emits, decoded from bytes (the stub's `jmp *slot(%rip)` -> the relocation
binding that slot). Bytes as objdump shows them for tests/fixtures/unwind."""
from __future__ import annotations

import struct

from gs_cgen.elf.plt import decode_plt_stubs
from gs_cgen.elf.relocs import R_X86_64_GLOB_DAT, R_X86_64_IRELATIVE, R_X86_64_JUMP_SLOT, \
    Relocation

NAMES = ["", "chain_signal", "puts", "chain_enter", "__cxa_finalize"]


def _jmp(entry_address: int, at: int, slot: int, prefix: bytes = b"") -> bytes:
    end = entry_address + at + len(prefix) + 6
    return prefix + b"\xff\x25" + struct.pack("<i", slot - end)


def lazy_plt(address: int, slots: list[int]) -> bytes:
    """PLT0, then per slot `jmp *slot(%rip); push $i; jmp PLT0`."""
    code = b"\xff\x35" + struct.pack("<i", 0x2fca) + _jmp(address, 6, 0x3ff8) + b"\x0f\x1f\x40\x00"
    for i, slot in enumerate(slots):
        entry = address + 16 * (i + 1)
        code += _jmp(entry, 0, slot) + b"\x68" + struct.pack("<I", i) + b"\xe9" + \
            struct.pack("<i", address - (entry + 16))
    return code


def ibt_plt_sec(address: int, slots: list[int]) -> bytes:
    code = b""
    for i, slot in enumerate(slots):
        entry = address + 16 * i
        code += b"\xf3\x0f\x1e\xfa" + _jmp(entry, 4, slot, b"\xf2") + b"\x0f\x1f\x44\x00\x00"
    return code


def test_lazy_plt_entries_are_named_plt0_is_not():
    relocations = [Relocation(0x4000, R_X86_64_JUMP_SLOT, 1, 0),
                   Relocation(0x4008, R_X86_64_JUMP_SLOT, 2, 0),
                   Relocation(0x4010, R_X86_64_JUMP_SLOT, 3, 0)]
    stubs = decode_plt_stubs([(".plt", 0x1020, lazy_plt(0x1020, [0x4000, 0x4008, 0x4010]), 16)],
                             relocations, NAMES)
    assert [(s.name, s.address, s.size) for s in stubs] == [
        ("chain_signal@plt", 0x1030, 16), ("puts@plt", 0x1040, 16), ("chain_enter@plt", 0x1050, 16)]
    assert stubs.stub_at(0x1020) is None and stubs.stub_at(0x102f) is None      # PLT0
    assert stubs.stub_at(0x1056).name == "chain_enter@plt"     # its push, past the jmp
    assert stubs.stub_at(0x1060) is None


def test_ibt_plt_sec_with_bnd_prefix_and_plt_got():
    relocations = [Relocation(0x4000, R_X86_64_JUMP_SLOT, 3, 0),
                   Relocation(0x3fe0, R_X86_64_GLOB_DAT, 4, 0)]
    plt_got = _jmp(0x1090, 0, 0x3fe0) + b"\x66\x90"
    stubs = decode_plt_stubs([(".plt.sec", 0x10b0, ibt_plt_sec(0x10b0, [0x4000]), 16),
                              (".plt.got", 0x1090, plt_got, 8)], relocations, NAMES)
    assert stubs.stub_at(0x10b0).name == "chain_enter@plt"
    assert stubs.stub_at(0x10b4).section == ".plt.sec"
    assert stubs.stub_at(0x1090).name == "__cxa_finalize@plt"


def test_slots_without_a_symbol_binding_stay_unnamed():
    # an IRELATIVE slot (a static IFUNC) binds no symbol: no name, as gdb's `info symbol`
    relocations = [Relocation(0x4000, R_X86_64_IRELATIVE, 0, 0x1234)]
    stubs = decode_plt_stubs([(".plt", 0x1020, lazy_plt(0x1020, [0x4000]), 16)], relocations, NAMES)
    assert len(stubs) == 0
