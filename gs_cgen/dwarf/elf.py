"""ELF facts without DWARF: PT_LOAD segments, sections, build-id and symbol
tables.

Symbols are decoded straight from the raw section bytes with
`struct.iter_unpack`: pyelftools' `iter_symbols()` builds one construct
Container per symbol, which costs ~0.8 s on libpython's 15k symbols, while
the raw decode takes a few milliseconds.
"""
from __future__ import annotations

import bisect
import dataclasses
import functools
import struct
from dataclasses import dataclass
from enum import Enum

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from gs_cgen.dwarf.model import LoadSegment, TlsSegment
from gs_cgen.dwarf.symvers import dynamic_versions, matches, parse_spelling, spell, version_of
from gs_cgen.errors import DebugInfoError

_SHF_WRITE = 0x1
_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4
_PF_X = 0x1
_PF_W = 0x2
_ELF64_SYM = struct.Struct("<IBBHQQ")   # Elf64_Sym, gABI "Symbol Table"


class SymbolKind(Enum):
    FUNC = "func"
    OBJECT = "object"
    TLS = "tls"
    OTHER = "other"


_STT_GNU_IFUNC = 10
_STT_KINDS = {2: SymbolKind.FUNC, _STT_GNU_IFUNC: SymbolKind.FUNC,
              1: SymbolKind.OBJECT, 6: SymbolKind.TLS}
_STT_FILE = 4


@dataclass(frozen=True)
class Symbol:
    name: str
    address: int
    size: int
    kind: SymbolKind
    local: bool
    file: str | None      # the STT_FILE that precedes a local symbol
    version: str | None = None    # GLIBC_2.14 (see symvers.py); `name` is bare
    hidden: bool = False          # a non-default version: only `name@version` names it
    ifunc: bool = False           # STT_GNU_IFUNC: `address` is the resolver's

    @property
    def spelling(self) -> str:
        """`memcpy@@GLIBC_2.14`, `memcpy@GLIBC_2.2.5` or the bare name."""
        return spell(self.name, self.version, self.hidden)


@dataclass(frozen=True)
class Section:
    name: str
    address: int
    size: int
    file_offset: int
    flags: int
    nobits: bool


class SymbolTable:
    """name -> symbols and address -> enclosing function."""

    def __init__(self, symbols: list[Symbol]) -> None:
        self.by_name: dict[str, list[Symbol]] = {}
        for sym in symbols:
            self.by_name.setdefault(sym.name, []).append(sym)
        funcs = sorted((s for s in symbols if s.kind is SymbolKind.FUNC and s.address),
                       key=lambda s: s.address)
        self._funcs = funcs
        self._func_starts = [s.address for s in funcs]

    def named(self, name: str, kind: SymbolKind) -> list[Symbol]:
        """Symbols that answer to `name`, which may carry a version
        (`memcpy@GLIBC_2.2.5`); a bare name wants the default version."""
        spelling = parse_spelling(name)
        return [s for s in self.by_name.get(spelling.name, ())
                if s.kind is kind and _placed(s) and matches(spelling, s.version, s.hidden)]

    @functools.cached_property
    def mangled_names(self) -> tuple[str, ...]:
        """Names in the Itanium C++ ABI's mangling (`_Z...`), clones
        (`_Z...Ei.isra.0`) included; none in a C module."""
        return tuple(name for name in self.by_name if name.startswith("_Z"))

    def names(self, kind: SymbolKind) -> list[str]:
        return sorted({s.name for syms in self.by_name.values() for s in syms
                       if s.kind is kind and _placed(s)})

    def versioned_names(self, kind: SymbolKind) -> list[str]:
        return sorted({s.spelling for syms in self.by_name.values() for s in syms
                       if s.kind is kind and s.address and s.version})

    def functions_starting_at(self, address: int) -> list[Symbol]:
        """Every function symbol (aliases, versions) whose value is `address`."""
        i = bisect.bisect_left(self._func_starts, address)
        out = []
        while i < len(self._funcs) and self._func_starts[i] == address:
            out.append(self._funcs[i])
            i += 1
        return out

    def function_at(self, address: int) -> Symbol | None:
        i = bisect.bisect_right(self._func_starts, address) - 1
        # Aliases share a start address; any of them that covers wins.
        start = self._func_starts[i] if i >= 0 else None
        while i >= 0 and self._func_starts[i] == start:
            sym = self._funcs[i]
            if address < sym.address + max(sym.size, 1):
                return sym
            i -= 1
        return None


def _placed(symbol: Symbol) -> bool:
    # A TLS symbol's value is its offset in the TLS block (gABI "Symbol
    # Values"), and the first one's is 0; any other symbol at 0 is absolute
    # or undefined, not an object or function of the module.
    return bool(symbol.address) or symbol.kind is SymbolKind.TLS


class ElfImage:
    """An opened ELF file; owns the file handle that pyelftools reads."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._stream = open(path, "rb")
        except OSError as exc:
            raise DebugInfoError(f"cannot open '{path}': {exc.strerror}") from exc
        try:
            self.elf = ELFFile(self._stream)
        except ELFError as exc:
            self._stream.close()
            raise DebugInfoError(f"'{path}' is not an ELF file") from exc
        self.is_pie = self.elf.header["e_type"] == "ET_DYN"
        self.machine = self.elf.header["e_machine"]       # "EM_X86_64", "EM_AARCH64", ...
        self.segments = tuple(_load_segments(self.elf))
        self.tls_segment, self.dynamic_vaddr = _tls_and_dynamic(self.elf)
        self.sections = tuple(_sections(self.elf))
        self._by_name = {s.name: s for s in self.sections}
        self._symbols: SymbolTable | None = None
        self._symtab_image = self         # where .symtab is read from

    def section(self, name: str) -> Section | None:
        return self._by_name.get(name)

    def section_bytes(self, name: str) -> bytes:
        sec = self._by_name.get(name)
        if sec is None or sec.nobits:
            return b""
        self._stream.seek(sec.file_offset)
        return self._stream.read(sec.size)

    @property
    def build_id(self) -> str | None:
        data = self.section_bytes(".note.gnu.build-id")
        if len(data) < 16:
            return None
        namesz, descsz, _ = struct.unpack_from("<III", data)
        start = 12 + ((namesz + 3) & ~3)
        return data[start:start + descsz].hex() or None

    def use_symtab_of(self, debug: "ElfImage") -> None:
        """Read .symtab from `debug`, this file's separate debug file, when
        `strip` removed it here (the addresses are the same)."""
        if self.section(".symtab") is None and debug.section(".symtab") is not None:
            self._symtab_image = debug
            self._symbols = None

    @property
    def has_symtab(self) -> bool:
        return self._symtab_image.section(".symtab") is not None

    @property
    def symbols(self) -> SymbolTable:
        if self._symbols is None:
            # .symtab has the local (static) functions too; .dynsym is what
            # survives `strip`, and the only table with every version.
            if not self.has_symtab:
                self._symbols = SymbolTable(self._read_symbols(".dynsym", self._dynamic_versions()))
            elif self.section(".gnu.version_d") is None:      # no versions to add
                self._symbols = SymbolTable(self._symtab_image._read_symbols(".symtab"))
            else:
                static = self._symtab_image._read_symbols(".symtab")
                dynamic = self._read_symbols(".dynsym", self._dynamic_versions())
                self._symbols = SymbolTable(_with_dynamic_versions(static, dynamic))
        return self._symbols

    def _dynamic_versions(self) -> list[tuple[str | None, bool]]:
        return dynamic_versions(self.elf, self.section_bytes(".gnu.version"))

    def _read_symbols(self, name: str, versions=()) -> list[Symbol]:
        """Defined symbols of table `name`; `versions[i]` is (version,
        hidden) of symbol i (.dynsym), else versions come from the names."""
        sec = self.elf.get_section_by_name(name)
        if sec is None:
            return []
        strtab = self.section_bytes(self.sections[sec["sh_link"]].name)
        out: list[Symbol] = []
        current_file = None
        for index, (st_name, info, _, shndx, value, size) in enumerate(
                _ELF64_SYM.iter_unpack(self.section_bytes(name))):
            end = strtab.find(b"\0", st_name)
            sym_name = strtab[st_name:end].decode("utf-8", "replace")
            stt = info & 0xF
            if stt == _STT_FILE:
                current_file = sym_name
                continue
            if not sym_name or shndx == 0:      # SHN_UNDEF: imported, no address here
                continue
            bare, version, hidden = version_of(sym_name) if "@" in sym_name else \
                (sym_name, None, False)
            if index < len(versions):
                version, hidden = versions[index]
            local = (info >> 4) == 0
            out.append(Symbol(bare, value, size, _STT_KINDS.get(stt, SymbolKind.OTHER),
                              local, current_file if local else None, version, hidden,
                              stt == _STT_GNU_IFUNC))
        return out

    def segment_of(self, vaddr: int) -> LoadSegment | None:
        for seg in self.segments:
            if seg.vaddr <= vaddr < seg.vaddr + seg.memsz:
                return seg
        return None

    def vaddr_to_file_offset(self, vaddr: int) -> int:
        seg = self.segment_of(vaddr)
        if seg is None or vaddr >= seg.vaddr + seg.filesz:
            raise DebugInfoError(f"address 0x{vaddr:x} is not in a loaded segment of '{self.path}'")
        return vaddr - seg.vaddr + seg.offset

    def read(self, vaddr: int, size: int) -> bytes:
        """Bytes of the file image at a virtual address (code bytes for
        prologue analysis)."""
        self._stream.seek(self.vaddr_to_file_offset(vaddr))
        return self._stream.read(size)

    def section_of(self, vaddr: int) -> str:
        for sec in self.sections:
            if sec.flags & _SHF_ALLOC and sec.address <= vaddr < sec.address + sec.size:
                return _section_class(sec.nobits, sec.flags & _SHF_EXECINSTR, sec.flags & _SHF_WRITE)
        seg = self.segment_of(vaddr)
        if seg is None:
            raise DebugInfoError(f"address 0x{vaddr:x} is not in a loaded segment of '{self.path}'")
        return _section_class(vaddr >= seg.vaddr + seg.filesz, seg.executable, seg.writable)

    def close(self) -> None:
        self._stream.close()


def _with_dynamic_versions(static: list[Symbol], dynamic: list[Symbol]) -> list[Symbol]:
    """.symtab symbols, each global one that .symtab spells bare given the
    version .dynsym records for the same name and address."""
    versions = {(s.name, s.address): s for s in dynamic if s.version}
    out = []
    for sym in static:
        exported = versions.get((sym.name, sym.address))
        if sym.version is None and not sym.local and exported is not None:
            sym = dataclasses.replace(sym, version=exported.version, hidden=exported.hidden)
        out.append(sym)
    return out


def _section_class(nobits, executable, writable) -> str:
    if nobits:
        return "bss"
    if executable:
        return "text"
    return "data" if writable else "rodata"


def _load_segments(elf: ELFFile):
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD":
            yield LoadSegment(vaddr=seg["p_vaddr"], memsz=seg["p_memsz"], offset=seg["p_offset"],
                              filesz=seg["p_filesz"], executable=bool(seg["p_flags"] & _PF_X),
                              writable=bool(seg["p_flags"] & _PF_W))


def _tls_and_dynamic(elf: ELFFile) -> tuple[TlsSegment | None, int | None]:
    """PT_TLS (the module's thread-local storage template) and where
    PT_DYNAMIC is (ld.so's link_map names the module by it: l_ld)."""
    tls = dynamic = None
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_TLS" and seg["p_memsz"]:
            tls = TlsSegment(vaddr=seg["p_vaddr"], filesz=seg["p_filesz"], memsz=seg["p_memsz"],
                             align=max(seg["p_align"], 1))
        elif seg["p_type"] == "PT_DYNAMIC":
            dynamic = seg["p_vaddr"]
    return tls, dynamic


def _sections(elf: ELFFile):
    for sec in elf.iter_sections():
        yield Section(name=sec.name, address=sec["sh_addr"], size=sec["sh_size"],
                      file_offset=sec["sh_offset"], flags=sec["sh_flags"],
                      nobits=sec["sh_type"] == "SHT_NOBITS")
