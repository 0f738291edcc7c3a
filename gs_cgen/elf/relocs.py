"""Dynamic relocations that tell where a process keeps the address of a
function once ld.so has relocated it (x86-64 psABI, "Relocation Types"):

  - R_X86_64_IRELATIVE: the slot at r_offset receives the result of
    calling the resolver at r_addend (a GNU IFUNC the module calls
    itself). ld.so applies these eagerly at load, lazy binding or not.
  - R_X86_64_GLOB_DAT / R_X86_64_JUMP_SLOT: the slot receives the address
    of the named symbol (a JUMP_SLOT only once bound, when binding is lazy).
  - R_X86_64_COPY: an executable built without -fPIE that reads a
    library's global gets its own copy at r_offset; ld.so copies the
    library's initial value there and binds every reference to the name,
    the library's own included, to the copy.

Only the file's SHF_ALLOC SHT_RELA sections (.rela.dyn, .rela.plt) count.
"""
from __future__ import annotations

import struct

from gs_cgen.lazydataclass import dataclass

_ELF64_RELA = struct.Struct("<QQq")    # r_offset, r_info, r_addend
_ELF64_SYM = struct.Struct("<IBBHQQ")
_SHF_ALLOC = 0x2
R_X86_64_COPY = 5
R_X86_64_GLOB_DAT = 6
R_X86_64_JUMP_SLOT = 7
R_X86_64_IRELATIVE = 37


@dataclass(frozen=True)
class Relocation:
    offset: int          # link-time address of the slot
    type: int
    symbol: int          # .dynsym index
    addend: int


def dynamic_relocations(image) -> list[Relocation]:
    """Every relocation of the ElfImage's allocated SHT_RELA sections."""
    out = []
    for section in image.elf.iter_sections():
        if section["sh_type"] != "SHT_RELA" or not section["sh_flags"] & _SHF_ALLOC:
            continue
        for offset, info, addend in _ELF64_RELA.iter_unpack(image.section_bytes(section.name)):
            out.append(Relocation(offset, info & 0xFFFF_FFFF, info >> 32, addend))
    return out


def irelative_slots(relocations: list[Relocation], resolver: int) -> tuple[int, ...]:
    """Slots that hold what the IFUNC resolver at `resolver` returned."""
    return tuple(r.offset for r in relocations
                 if r.type == R_X86_64_IRELATIVE and r.addend == resolver)


def import_slots(relocations: list[Relocation], names: list[str], name: str) -> tuple[int, ...]:
    """Slots bound to the dynamic symbol `name` (GLOB_DAT first: those are
    bound at load; a lazy JUMP_SLOT holds a PLT address until first call)."""
    wanted = [r for r in relocations if r.type in (R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT)
              and r.symbol < len(names) and names[r.symbol] == name]
    wanted.sort(key=lambda r: r.type != R_X86_64_GLOB_DAT)
    return tuple(r.offset for r in wanted)


def copy_slot(relocations: list[Relocation], names: list[str], name: str) -> int | None:
    """Where this executable holds its copy of the library object `name`."""
    for r in relocations:
        if r.type == R_X86_64_COPY and r.symbol < len(names) and names[r.symbol] == name:
            return r.offset
    return None


def dynamic_symbol_names(image) -> list[str]:
    """.dynsym names by index, undefined (imported) symbols included."""
    section = image.elf.get_section_by_name(".dynsym")
    if section is None:
        return []
    strtab = image.section_bytes(image.sections[section["sh_link"]].name)
    names = []
    for st_name, *_ in _ELF64_SYM.iter_unpack(image.section_bytes(".dynsym")):
        end = strtab.find(b"\0", st_name)
        names.append(strtab[st_name:end].decode("utf-8", "replace"))
    return names
