"""PLT stubs named as gdb names them: `chain_enter@plt`.

The symbol tables have no entry for a PLT stub; gdb gets `NAME@plt` from
BFD's synthetic symbols (elf_x86_64_get_synthetic_symtab), which decode
each stub's indirect jump to find the GOT slot it jumps through and name
the stub after the symbol the slot's relocation binds. We do the same:

  - .plt (lazy binding, no IBT): 16-byte entries `jmp *slot(%rip); push
    $index; jmp .plt`, the first entry (PLT0) is the resolver's and jumps
    through no relocated slot;
  - .plt.sec (-fcf-protection, IBT): `endbr64; [bnd] jmp *slot(%rip)`;
    the .plt entries then only push and jump to PLT0, and are not named;
  - .plt.got (functions whose address is also taken, or bound at load):
    `jmp *slot(%rip)` through a GLOB_DAT slot.

An entry whose slot has no JUMP_SLOT / GLOB_DAT relocation (PLT0, an
IRELATIVE slot) gets no name, as in gdb ("No symbol matches").
"""
from __future__ import annotations

import bisect

from gs_cgen.elf.relocs import R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, Relocation
from gs_cgen.lazydataclass import dataclass

PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got")
_JMP_RIP = b"\xff\x25"          # jmp *disp32(%rip); `bnd` (f2) may precede it
_DEFAULT_ENTRY = 16


@dataclass(frozen=True)
class PltStub:
    name: str                   # `puts@plt`
    address: int                # link-time address of the entry
    size: int
    section: str


class PltStubs:
    """address -> the stub entry that covers it."""

    def __init__(self, stubs: list[PltStub]) -> None:
        self._stubs = sorted(stubs, key=lambda s: s.address)
        self._starts = [s.address for s in self._stubs]

    def __len__(self) -> int:
        return len(self._stubs)

    def __iter__(self):
        return iter(self._stubs)

    def stub_at(self, address: int) -> PltStub | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and address < self._stubs[i].address + self._stubs[i].size:
            return self._stubs[i]
        return None


def decode_plt_stubs(sections: list[tuple[str, int, bytes, int]], relocations: list[Relocation],
                     names: list[str]) -> PltStubs:
    """`sections`: (name, address, bytes, entry size or 0) of the PLT
    sections; `names`: .dynsym names by index (undefined ones included)."""
    bound = {r.offset: names[r.symbol] for r in relocations
             if r.type in (R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT) and 0 < r.symbol < len(names)
             and names[r.symbol]}
    stubs = []
    for section, address, data, entry_size in sections:
        size = entry_size or _DEFAULT_ENTRY
        for start in range(0, len(data) - size + 1, size):
            slot = _jump_slot(data[start:start + size], address + start)
            if slot in bound:
                stubs.append(PltStub(f"{bound[slot]}@plt", address + start, size, section))
    return PltStubs(stubs)


def _jump_slot(entry: bytes, address: int) -> int | None:
    """The slot the entry's `jmp *disp32(%rip)` jumps through, if it has one."""
    at = entry.find(_JMP_RIP)
    if at < 0 or at + 6 > len(entry):
        return None
    disp = int.from_bytes(entry[at + 2:at + 6], "little", signed=True)
    return address + at + 6 + disp


def plt_stubs(image, relocations: list[Relocation], names: list[str]) -> PltStubs:
    """The stubs of an ElfImage (elf/image.py); none when it has no PLT."""
    sections = []
    for name in PLT_SECTIONS:
        section = image.section(name)
        if section is None or section.nobits or not section.size:
            continue
        header = image.elf.get_section_by_name(name)
        entry_size = header["sh_entsize"] if header is not None else 0
        sections.append((name, section.address, image.section_bytes(name), entry_size))
    return decode_plt_stubs(sections, relocations, names) if sections else PltStubs([])


def in_plt_section(image, address: int) -> bool:
    """Cheap check before decoding the stubs."""
    for name in PLT_SECTIONS:
        section = image.section(name)
        if section is not None and section.address <= address < section.address + section.size:
            return True
    return False
