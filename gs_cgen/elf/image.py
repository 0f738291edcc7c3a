"""ELF facts without DWARF: PT_LOAD segments, sections, build-id and symbol
tables.

Symbols are decoded straight from the raw section bytes with
`struct.iter_unpack`: pyelftools' `iter_symbols()` builds one construct
Container per symbol, which costs ~0.8 s on libpython's 15k symbols, while
the raw decode takes a few milliseconds.
"""
from __future__ import annotations

import bisect
import functools
import io
import os
import struct
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING

from elftools.common.exceptions import ELFError
from elftools.elf.enums import ENUM_E_MACHINE, ENUM_P_TYPE_BASE

from gs_cgen import indexcache as cache_mod
from gs_cgen.indexcache import open_index_cache
from gs_cgen.elf.demangle import is_rust_symbol
from gs_cgen.elf.model import LoadSegment, TlsSegment
from gs_cgen.elf.symvers import (dynamic_versions, matches, parse_spelling, spell,
                                   version_definitions, version_of)
from gs_cgen.errors import DebugInfoError
from gs_cgen.lazydataclass import dataclass

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

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
_TLS = SymbolKind.TLS.value
# Symbol rows keep the kind's value: reading an enum member's .value per
# symbol was half the cost of decoding libpython's 14k.
_STT_KIND_VALUES = {stt: kind.value for stt, kind in (
    (2, SymbolKind.FUNC), (_STT_GNU_IFUNC, SymbolKind.FUNC), (1, SymbolKind.OBJECT),
    (6, SymbolKind.TLS))}
_OTHER_KIND = SymbolKind.OTHER.value
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
    link: int = 0         # sh_link: a symbol table's string table, by index


# A symbol as decoded: Symbol's fields, in order, its kind as the
# SymbolKind's value (plain data, for the index cache). Tables keep these
# and make a Symbol only for the ones a lookup returns: libpython's 14k
# symbols cost ~45 ms as frozen dataclasses, and a lookup touches a handful.
SymbolRow = tuple
_KINDS = {kind.value: kind for kind in SymbolKind}


class SymbolTable:
    """name -> symbols and address -> enclosing function."""

    def __init__(self, rows: list[SymbolRow], name_order: list[int] | None = None) -> None:
        """`name_order`: the row numbers sorted by name (name_order_of)."""
        self._rows = rows
        self._made: dict[int, Symbol] = {}
        # Look-ups bisect the rows in name order: a dict of every name took
        # ~6 ms for libpython's 14k, for the handful a look-up asks for.
        self._order = name_order if name_order is not None else name_order_of(rows)
        self._name_of = lambda i: rows[i][0]
        self.by_name: Mapping[str, list[Symbol]] = _SymbolsByName(self)

    @functools.cached_property
    def _funcs(self) -> list[int]:
        """Row numbers of the functions, by address (for address lookups only)."""
        rows, func = self._rows, SymbolKind.FUNC.value
        return sorted((i for i, row in enumerate(rows) if row[3] == func and row[1]),
                      key=lambda i: rows[i][1])

    @functools.cached_property
    def _func_starts(self) -> list[int]:
        return [self._rows[i][1] for i in self._funcs]

    def _symbol(self, i: int) -> Symbol:
        symbol = self._made.get(i)
        if symbol is None:
            row = self._rows[i]
            symbol = self._made[i] = Symbol(row[0], row[1], row[2], _KINDS[row[3]], *row[4:])
        return symbol

    def numbers_named(self, name: str) -> list[int]:
        """Row numbers of the symbols called `name`, in table order."""
        order, rows = self._order, self._rows
        i = bisect.bisect_left(order, name, key=self._name_of)
        found = []
        while i < len(order) and rows[order[i]][0] == name:
            found.append(order[i])
            i += 1
        return found

    def _names_starting(self, prefix: str) -> list[str]:
        """The names that start with `prefix`, in the order they first
        appear in the table."""
        order, rows = self._order, self._rows
        i = bisect.bisect_left(order, prefix, key=self._name_of)
        first: dict[str, int] = {}
        while i < len(order) and rows[order[i]][0].startswith(prefix):
            first.setdefault(rows[order[i]][0], order[i])
            i += 1
        return sorted(first, key=first.__getitem__)

    def named(self, name: str, kind: SymbolKind) -> list[Symbol]:
        """Symbols that answer to `name`, which may carry a version
        (`memcpy@GLIBC_2.2.5`); a bare name wants the default version."""
        spelling = parse_spelling(name)
        found = (self._symbol(i) for i in self.numbers_named(spelling.name)
                 if self._rows[i][3] == kind.value)
        return [s for s in found if _placed(s.address, s.kind.value)
                and matches(spelling, s.version, s.hidden)]

    def named_with_clones(self, name: str, kind: SymbolKind) -> list[Symbol]:
        """named(), then GCC's suffixed copies of `name` (clones and
        function-level statics: f.constprop.0, counter.1)."""
        return self.named(name, kind) + [
            s for n in self.suffixed_names(name) for s in self.named(n, kind)]

    def suffixed_names(self, name: str) -> list[str]:
        """Names that are `name` plus a dotted suffix (GCC's clones
        `f.constprop.0`, function-level statics `counter.1`), in table order."""
        return self._names_starting(name + ".")

    @functools.cached_property
    def mangled_names(self) -> tuple[str, ...]:
        """Names in the Itanium C++ ABI's mangling (`_Z...`), clones
        (`_Z...Ei.isra.0`) included; none in a C module."""
        return tuple(self._names_starting("_Z"))

    @functools.cached_property
    def rust_names(self) -> tuple[str, ...]:
        """Names in rustc's v0 (`_R...`) and legacy (`_ZN...17h<hash>E`)
        manglings; none in a C or C++ module."""
        return tuple(self._names_starting("_R")) + \
            tuple(n for n in self.mangled_names if is_rust_symbol(n))

    @functools.cached_property
    def _distinct_names(self) -> dict[str, None]:
        return dict.fromkeys(row[0] for row in self._rows)

    def names(self, kind: SymbolKind) -> list[str]:
        # From the rows: making a Symbol of each of libpython's 14k took
        # ~50 ms of the error that offers the nearest names.
        return sorted({row[0] for row in self._rows
                       if row[3] == kind.value and _placed(row[1], row[3])})

    def versioned_names(self, kind: SymbolKind) -> list[str]:
        # A row is Symbol's fields in order: [6] version, [7] hidden.
        return sorted({spell(row[0], row[6], row[7]) for row in self._rows
                       if row[3] == kind.value and row[1] and row[6]})

    def names_at(self, address: int, kind: SymbolKind) -> set[str]:
        """The names of every `kind` symbol whose value is `address` (an
        object's aliases: program_invocation_short_name is __progname)."""
        return {row[0] for row in self._rows if row[1] == address and row[3] == kind.value}

    def functions_starting_at(self, address: int) -> list[Symbol]:
        """Every function symbol (aliases, versions) whose value is `address`."""
        i = bisect.bisect_left(self._func_starts, address)
        out = []
        while i < len(self._funcs) and self._func_starts[i] == address:
            out.append(self._symbol(self._funcs[i]))
            i += 1
        return out

    def function_at(self, address: int) -> Symbol | None:
        i = bisect.bisect_right(self._func_starts, address) - 1
        # Aliases share a start address; any of them that covers wins.
        start = self._func_starts[i] if i >= 0 else None
        while i >= 0 and self._func_starts[i] == start:
            sym = self._symbol(self._funcs[i])
            if address < sym.address + max(sym.size, 1):
                return sym
            i -= 1
        return None


class _SymbolsByName(Mapping):
    """name -> its symbols, each made when first asked for; names in the
    order they first appear in the table."""

    def __init__(self, table: SymbolTable) -> None:
        self._table = table

    def __getitem__(self, name: str) -> list[Symbol]:
        numbers = self._table.numbers_named(name)
        if not numbers:
            raise KeyError(name)
        return [self._table._symbol(i) for i in numbers]

    def __iter__(self):
        return iter(self._table._distinct_names)

    def __len__(self) -> int:
        return len(self._table._distinct_names)

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and bool(self._table.numbers_named(name))


# DWARFInfo's keyword -> the section (pyelftools' get_dwarf_info list).
_DWARF_SECTIONS = {
    "debug_info_sec": ".debug_info", "debug_aranges_sec": ".debug_aranges",
    "debug_abbrev_sec": ".debug_abbrev", "debug_frame_sec": ".debug_frame",
    "eh_frame_sec": ".eh_frame", "debug_str_sec": ".debug_str", "debug_loc_sec": ".debug_loc",
    "debug_ranges_sec": ".debug_ranges", "debug_line_sec": ".debug_line",
    "debug_pubtypes_sec": ".debug_pubtypes", "debug_pubnames_sec": ".debug_pubnames",
    "debug_addr_sec": ".debug_addr", "debug_str_offsets_sec": ".debug_str_offsets",
    "debug_line_str_sec": ".debug_line_str", "debug_loclists_sec": ".debug_loclists",
    "debug_rnglists_sec": ".debug_rnglists", "debug_sup_sec": ".debug_sup",
    "gnu_debugaltlink_sec": ".gnu_debugaltlink", "debug_types_sec": ".debug_types",
}
_PYELFTOOLS_ONLY = (".zdebug_info", ".gnu_debugaltlink", ".debug_sup")
_SHF_COMPRESSED = 0x800


_BEYOND_THE_FILE = "a DWARF section extends beyond the end of its file"


class _SectionLoader:
    """A section's bytes: read whole (a BytesIO, for the raw decoders) on
    first use of `get`; until then pyelftools reads only what it parses,
    through `stream`, and `read_at` reads pieces. BytesIO over a bytes
    object shares it (no copy) until written, and nothing writes."""

    def __init__(self, file, offset: int, size: int) -> None:
        # The file object, not its descriptor: once closed, a read fails
        # rather than reading whatever file took the number.
        self._file, self._offset, self._size = file, offset, size
        self._whole = None
        self._window = None
        self._read_apart = 0            # bytes read in pieces, each counted as at least a page

    @property
    def size(self) -> int:
        return self._size

    def get(self) -> io.BytesIO:
        if self._whole is None:
            data = os.pread(self._file.fileno(), self._size, self._offset)
            if len(data) != self._size:
                raise DebugInfoError(_BEYOND_THE_FILE)
            self._whole = io.BytesIO(data)
        return self._whole

    def stream(self):
        """What pyelftools reads: the whole bytes once something has read
        them, else the file itself. Parsing a function's DIEs reads a few
        KB of libpython's 9 MB .debug_info; copying it all took ~11 ms of
        every warm look-up there."""
        if self._whole is not None:
            return self._whole
        if self._window is None:
            self._window = io.BufferedReader(_SectionWindow(self), buffer_size=1 << 14)
        return self._window

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to `size` bytes at `offset` (fewer at the section's end)."""
        # Pieces until they add up to half the section (a walk all over
        # it): from then on the whole, read once, costs less.
        if self._whole is None and self._read_apart < self._size // 2:
            if not self._read_apart:
                self._read_ahead()
            self._read_apart += max(size, 4096)
            want = max(0, min(size, self._size - offset))
            data = os.pread(self._file.fileno(), want, self._offset + offset)
            if len(data) != want:
                raise DebugInfoError(_BEYOND_THE_FILE)
            return data
        return self.get().getvalue()[offset:offset + size]

    def _read_ahead(self) -> None:
        # Pieces of a file that is not in the page cache are read from the
        # disk one request each (libpython's 146 CU headers read so took
        # ~45 ms); asked for at once, the kernel reads the section in large
        # requests while we go on. ~0.2 ms when it is cached.
        try:
            os.posix_fadvise(self._file.fileno(), self._offset, self._size, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass


class _SectionWindow(io.RawIOBase):
    """A section as a file of its own, for io.BufferedReader."""

    def __init__(self, loader: _SectionLoader) -> None:
        super().__init__()
        self._loader, self._pos = loader, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._loader.read_at(self._pos, len(buffer))
        buffer[:len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._loader.size}[whence]
        if base + pos < 0:
            raise ValueError(f"negative seek position {base + pos}")
        self._pos = base + pos
        return self._pos

    def tell(self) -> int:
        return self._pos


def dwarf_section_bytes(section) -> bytes:
    """The bytes of a pyelftools section descriptor: ours read whole once,
    pyelftools' own out of its BytesIO."""
    if isinstance(section, _lazy_descriptor_type()):
        return tuple.__getitem__(section, 0).get().getvalue()
    return section.stream.getvalue()


def dwarf_section_read(section, offset: int, size: int) -> bytes:
    """Up to `size` bytes at `offset` of a section descriptor, without
    reading the rest of it where it is ours."""
    if isinstance(section, _lazy_descriptor_type()):
        return tuple.__getitem__(section, 0).read_at(offset, size)
    return section.stream.getvalue()[offset:offset + size]


@functools.cache
def _dwarfinfo_parameters() -> frozenset[str]:
    # The sections this pyelftools' DWARFInfo takes (0.32 and 0.33 differ).
    import inspect  # noqa: PLC0415 - imported by dataclasses already
    from elftools.dwarf.dwarfinfo import DWARFInfo  # noqa: PLC0415
    return frozenset(inspect.signature(DWARFInfo.__init__).parameters)


@functools.cache
def _lazy_descriptor_type():
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor  # noqa: PLC0415

    class LazySection(DebugSectionDescriptor):
        """pyelftools' descriptor whose `stream` is read when first used."""

        __slots__ = ()

        @property
        def stream(self):
            return tuple.__getitem__(self, 0).stream()

    return LazySection


def name_order_of(rows: list[SymbolRow]) -> list[int]:
    """Row numbers sorted by name; equal names keep their table order."""
    return sorted(range(len(rows)), key=lambda i: rows[i][0])


def _symbol_entry_sound(entry) -> bool:
    # A cached value of the wrong shape counts as absent (cache.py). The
    # entry's CRC and format version already vouch for its bytes; every row
    # was written by one _read_symbols, so the first and last show the shape.
    if not (isinstance(entry, tuple) and len(entry) == 2):
        return False
    rows, order = entry
    return isinstance(rows, list) and isinstance(order, list) and len(order) == len(rows) and all(
        isinstance(row, tuple) and len(row) == 9 and isinstance(row[0], str) and row[3] in _KINDS
        for row in rows[:1] + rows[-1:]) and all(
        isinstance(i, int) and 0 <= i < len(rows) for i in order[:1] + order[-1:])


def _placed(address: int, kind_value: str) -> bool:
    # A TLS symbol's value is its offset in the TLS block (gABI "Symbol
    # Values"), and the first one's is 0; any other symbol at 0 is absolute
    # or undefined, not an object or function of the module.
    return bool(address) or kind_value == _TLS


class ElfImage:
    """An opened ELF file; owns the file handle that pyelftools reads.
    Headers, sections and segments are decoded from the raw bytes (ELF64
    little-endian; anything else through pyelftools): pyelftools' construct
    parsing of them took ~10 ms per module, and `-p PID` opens every
    module the process maps."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._stream = open(path, "rb")
        except OSError as exc:
            raise DebugInfoError(f"cannot open '{path}': {exc.strerror}") from exc
        try:
            headers = _raw_headers(self._stream)
            if headers is None:
                headers = _pyelftools_headers(self.elf)
        except (ELFError, struct.error, ValueError, IndexError, OSError) as exc:
            self._stream.close()
            raise DebugInfoError(f"'{path}' is not an ELF file") from exc
        e_type, machine, self.elfclass, programs, self.sections = headers
        self.is_pie = e_type == _ET_DYN
        self.machine = _MACHINES.get(machine, str(machine))     # "EM_X86_64", "EM_AARCH64", ...
        self.segments = tuple(_load_segments(programs))
        self.tls_segment, self.dynamic_vaddr = _tls_and_dynamic(programs)
        self._by_name = {s.name: s for s in self.sections}
        self._symbols: SymbolTable | None = None
        self._symtab_image = self         # where .symtab is read from

    @functools.cached_property
    def elf(self) -> ELFFile:
        """pyelftools' view, for the rarer tables (built when first asked for;
        imported then too: elftools.elf costs ~8 ms of imports that a
        function or line look-up does without)."""
        from elftools.elf.elffile import ELFFile  # noqa: PLC0415
        return ELFFile(self._stream)

    def dwarf_info(self):
        """pyelftools' DWARFInfo over this file's DWARF sections (and
        .eh_frame), each read from the file when first used, in one read
        and without pyelftools' second copy: a lookup in libpython touches
        7 of its 17 MB (.debug_line stays unread when its tables are in the
        index cache). Compressed sections and supplementary DWARF files
        (dwz) are left to pyelftools' own reader."""
        from elftools.dwarf.dwarfinfo import DWARFInfo, DwarfConfig  # noqa: PLC0415
        if any(name in self._by_name for name in _PYELFTOOLS_ONLY) or any(
                self._by_name[name].flags & _SHF_COMPRESSED
                for name in _DWARF_SECTIONS.values() if name in self._by_name):
            return self.elf.get_dwarf_info(relocate_dwarf_sections=False)
        sections = {argument: self._lazy_section(name) for argument, name in _DWARF_SECTIONS.items()}
        accepted = _dwarfinfo_parameters()
        if any(section is not None and argument not in accepted
               for argument, section in sections.items()):
            return self.elf.get_dwarf_info(relocate_dwarf_sections=False)   # another pyelftools
        try:
            return DWARFInfo(config=DwarfConfig(little_endian=True, machine_arch="x64",
                                                default_address_size=8),
                             **{a: s for a, s in sections.items() if a in accepted})
        except TypeError:       # a pyelftools that wants other arguments
            return self.elf.get_dwarf_info(relocate_dwarf_sections=False)

    def _lazy_section(self, name: str):
        sec = self._by_name.get(name)
        if sec is None or sec.nobits:
            return None
        loader = _SectionLoader(self._stream, sec.file_offset, sec.size)
        return _lazy_descriptor_type()(loader, name, sec.file_offset, sec.size, sec.address)

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
            self._symbols = self._cached_symbol_table()
        return self._symbols

    def _cached_symbol_table(self) -> SymbolTable:
        """The table, from the index cache by build-id when large
        (libpython's 14k rows decode in ~25 ms and load in ~8 ms), with
        the rows' name order."""
        table = self._symtab_image.section(".symtab") or self.section(".dynsym")
        cache = open_index_cache(self.build_id, table.size if table else 0,
                                 cache_mod.MIN_SYMBOL_TABLE)
        if cache is None:
            return SymbolTable(self._symbol_rows())
        # Named by the table read: the same build-id has only .dynsym until
        # its separate debug file (with .symtab) is installed.
        name = "symbols-symtab" if self.has_symtab else "symbols-dynsym"
        entry = cache.load(name)
        if not _symbol_entry_sound(entry):
            rows = self._symbol_rows()
            entry = (rows, name_order_of(rows))
            cache.store(name, entry)
        return SymbolTable(*entry)

    def _symbol_rows(self) -> list[SymbolRow]:
        # .symtab has the local (static) functions too; .dynsym is what
        # survives `strip`, and the only table with every version.
        if not self.has_symtab:
            return self._read_symbols(".dynsym", self._dynamic_versions())
        if self.section(".gnu.version_d") is None:      # no versions to add
            return self._symtab_image._read_symbols(".symtab")
        static = self._symtab_image._read_symbols(".symtab")
        dynamic = self._read_symbols(".dynsym", self._dynamic_versions())
        return _with_dynamic_versions(static, dynamic)

    def _dynamic_versions(self) -> list[tuple[str | None, bool]]:
        versym = self.section_bytes(".gnu.version")
        return dynamic_versions(self._version_definitions(), versym) if versym else []

    def _version_definitions(self) -> dict[int, str]:
        # From the raw bytes: pyelftools' parse of them imported elftools.elf
        # and cost ~10 ms for each module `-p PID` opens.
        section = self.section(".gnu.version_d")
        if section is None:
            return {}
        try:
            return version_definitions(self.section_bytes(".gnu.version_d"),
                                       self.section_bytes(self.sections[section.link].name))
        except (ValueError, IndexError) as exc:
            raise DebugInfoError(f"'{self.path}': unreadable .gnu.version_d ({exc})") from None

    def _read_symbols(self, name: str, versions=()) -> list[SymbolRow]:
        """Defined symbols of table `name`; `versions[i]` is (version,
        hidden) of symbol i (.dynsym), else versions come from the names."""
        sec = self.section(name)
        if sec is None:
            return []
        strtab = self.section_bytes(self.sections[sec.link].name)
        # An ASCII table (nearly all) is decoded once, not per name.
        text = strtab.decode("ascii") if strtab.isascii() else None
        out: list[SymbolRow] = []
        current_file = None
        for index, (st_name, info, _, shndx, value, size) in enumerate(
                _ELF64_SYM.iter_unpack(self.section_bytes(name))):
            if text is not None:
                sym_name = text[st_name:text.find("\0", st_name)]
            else:
                sym_name = strtab[st_name:strtab.find(b"\0", st_name)].decode("utf-8", "replace")
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
            out.append((bare, value, size, _STT_KIND_VALUES.get(stt, _OTHER_KIND), local,
                        current_file if local else None, version, hidden, stt == _STT_GNU_IFUNC))
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


def _with_dynamic_versions(static: list[SymbolRow], dynamic: list[SymbolRow]) -> list[SymbolRow]:
    """.symtab symbols, each global one that .symtab spells bare given the
    version .dynsym records for the same name and address."""
    # Rows are (name, address, size, kind, local, file, version, hidden, ifunc).
    versions = {(row[0], row[1]): row for row in dynamic if row[6]}
    out = []
    for row in static:
        exported = versions.get((row[0], row[1]))
        if row[6] is None and not row[4] and exported is not None:
            row = (*row[:6], exported[6], exported[7], row[8])
        out.append(row)
    return out


def _section_class(nobits, executable, writable) -> str:
    if nobits:
        return "bss"
    if executable:
        return "text"
    return "data" if writable else "rodata"


# ELF64 (gABI "ELF Header", "Program Header", "Sections"), little-endian.
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")       # p_type p_flags p_offset p_vaddr p_paddr p_filesz p_memsz p_align
_SHDR = struct.Struct("<IIQQQQIIQQ")     # sh_name type flags addr offset size link info addralign entsize
_ET_DYN = 3
_PT_LOAD, _PT_DYNAMIC, _PT_TLS = 1, 2, 7
_SHT_NOBITS = 8
_SHN_XINDEX = 0xFFFF
_MACHINES = {code: name for name, code in ENUM_E_MACHINE.items() if name.startswith("EM_")}
_CLASSES = {1: 32, 2: 64}


def _raw_headers(stream):
    """(e_type, e_machine, ELF class, program headers as _PHDR tuples,
    sections) of an ELF64 little-endian file; None for another kind (the
    caller asks pyelftools). Raises ValueError for what is no ELF file."""
    stream.seek(0)
    header = stream.read(_EHDR.size)
    if len(header) < 16 or header[:4] != b"\x7fELF":
        raise ValueError("no ELF magic")
    if header[4] != 2 or header[5] != 1 or len(header) < _EHDR.size:
        return None                                   # not ELFCLASS64 / ELFDATA2LSB
    (_, e_type, e_machine, _, _, e_phoff, e_shoff, _, _, e_phentsize, e_phnum,
     e_shentsize, e_shnum, e_shstrndx) = _EHDR.unpack(header)
    if (e_phnum and e_phentsize != _PHDR.size) or (e_shnum and e_shentsize != _SHDR.size) or \
            (e_shoff and not e_shnum) or e_shstrndx == _SHN_XINDEX:
        return None                                   # extended numbering: rare, pyelftools has it
    programs = list(_PHDR.iter_unpack(_read_at(stream, e_phoff, e_phnum * _PHDR.size)))
    raw = list(_SHDR.iter_unpack(_read_at(stream, e_shoff, e_shnum * _SHDR.size)))
    names = b""
    if raw and e_shstrndx < len(raw):
        strtab = raw[e_shstrndx]
        names = _read_at(stream, strtab[4], strtab[5])
    sections = tuple(
        Section(name=_name_at(names, sh[0]), address=sh[3], size=sh[5], file_offset=sh[4],
                flags=sh[2], nobits=sh[1] == _SHT_NOBITS, link=sh[6])
        for sh in raw)
    return e_type, e_machine, 64, programs, sections


def _read_at(stream, offset: int, size: int) -> bytes:
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("ELF headers beyond the end of the file")
    return data


def _name_at(names: bytes, offset: int) -> str:
    end = names.find(b"\0", offset)
    return names[offset:end if end >= 0 else len(names)].decode("utf-8", "replace")


def _pyelftools_headers(elf: ELFFile):
    """_raw_headers' answer for the kinds of ELF file it leaves alone."""
    programs = [(ENUM_P_TYPE_BASE.get(seg["p_type"], -1) if isinstance(seg["p_type"], str)
                 else seg["p_type"], seg["p_flags"], seg["p_offset"], seg["p_vaddr"],
                 seg["p_paddr"], seg["p_filesz"], seg["p_memsz"], seg["p_align"])
                for seg in elf.iter_segments()]
    sections = tuple(Section(name=sec.name, address=sec["sh_addr"], size=sec["sh_size"],
                             file_offset=sec["sh_offset"], flags=sec["sh_flags"],
                             nobits=sec["sh_type"] == "SHT_NOBITS", link=sec["sh_link"])
                     for sec in elf.iter_sections())
    machine = ENUM_E_MACHINE.get(elf.header["e_machine"], elf.header["e_machine"])
    e_type = _ET_DYN if elf.header["e_type"] == "ET_DYN" else 0
    return e_type, machine, elf.elfclass, programs, sections


def _load_segments(programs):
    for p_type, flags, offset, vaddr, _, filesz, memsz, _ in programs:
        if p_type == _PT_LOAD:
            yield LoadSegment(vaddr=vaddr, memsz=memsz, offset=offset, filesz=filesz,
                              executable=bool(flags & _PF_X), writable=bool(flags & _PF_W))


def _tls_and_dynamic(programs) -> tuple[TlsSegment | None, int | None]:
    """PT_TLS (the module's thread-local storage template) and where
    PT_DYNAMIC is (ld.so's link_map names the module by it: l_ld)."""
    tls = dynamic = None
    for p_type, _, _, vaddr, _, filesz, memsz, align in programs:
        if p_type == _PT_TLS and memsz:
            tls = TlsSegment(vaddr=vaddr, filesz=filesz, memsz=memsz, align=max(align, 1))
        elif p_type == _PT_DYNAMIC:
            dynamic = vaddr
    return tls, dynamic
