"""Lazy lookups into DWARF: address -> CU, CU -> line table and file names,
CU -> top-level functions, and raw byte searches of .debug_info.

Nothing here walks every DIE of a module. A CU is located by .debug_aranges
(or, when that is missing, by each CU's top DIE ranges); line programs are
decoded one CU at a time; globals and type names are found by searching the
raw section bytes for the exact encoding that would reference them, then
parsing only the CU that contains the hit.
"""
from __future__ import annotations

import bisect
import itertools
import os
import struct
from typing import NamedTuple

from elftools.common.exceptions import DWARFError, ELFParseError
from elftools.construct.core import ConstructError
from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_TAG
from elftools.dwarf.ranges import BaseAddressEntry

from gs_cgen.dwarf.abbrev import FastAbbreviations
from gs_cgen.indexcache import IndexCache
from gs_cgen.elf.image import dwarf_section_bytes
from gs_cgen.dwarf.lineprogram import decode_rows
from gs_cgen.dwarf.raw import (UnsupportedHeader, named_die_pattern, read_abbreviations,
                               read_cu_line_info, read_str_offsets_base,
                               read_file_tables, read_top_level_dies, read_top_level_names)
from gs_cgen.dwarf.raw import attribute_at as raw_attribute_at
from gs_cgen.lazydataclass import dataclass

# The raw read of top-level functions (_read_functions_raw).
_SUBPROGRAM = frozenset({0x2E})
_AT_NAME, _AT_LOW_PC, _AT_HIGH_PC, _AT_RANGES = 0x03, 0x11, 0x12, 0x55
_FUNCTION_ATTRIBUTES = (_AT_NAME, _AT_LOW_PC, _AT_HIGH_PC, _AT_RANGES)
_FORM_ADDR = 0x01
_HIGH_PC_FORMS = (_FORM_ADDR, 0x0B, 0x05, 0x06, 0x07, 0x0F)       # addr, data1/2/4/8, udata
_ADDRESS_FORMS = ("DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2",
                  "DW_FORM_addrx3", "DW_FORM_addrx4")


class Row(NamedTuple):
    """One line-table row (DWARF 5 section 6.2.2). A tuple, not a frozen
    dataclass: a libpython CU's table has ~12k rows, each made from its
    cached tuple in a fraction of a frozen dataclass's __init__."""

    address: int
    file: int
    line: int
    is_stmt: bool
    prologue_end: bool
    end_sequence: bool
    discriminator: int = 0


@dataclass(frozen=True)
class LineTable:
    rows: tuple[Row, ...]             # sequences in address order, rows in program order
    files: dict[int, str]             # DWARF file index -> normalized full path
    addresses: tuple[int, ...]        # sorted distinct row addresses (gdb's line boundaries)
    row_addresses: tuple[int, ...] = ()   # rows[i].address, for bisecting rows


@dataclass(frozen=True)
class FunctionEntry:
    name: str | None
    ranges: tuple[tuple[int, int], ...]
    die_offset: int


def origin_having(die, name: str):
    """The DIE itself, or the first DIE along its DW_AT_abstract_origin /
    DW_AT_specification chain, that has attribute `name`: concrete
    instances of inlined or out-of-line functions and definitions of
    declared variables keep name, type and decl_* on the abstract DIE
    (DWARF 5 section 3.3.8.2)."""
    for _ in range(4):                    # chains are 1-2 long; bound them anyway
        if name in die.attributes:
            return die
        ref = next((a for a in ("DW_AT_abstract_origin", "DW_AT_specification")
                    if a in die.attributes), None)
        if ref is None:
            return None
        die = die.get_DIE_from_attribute(ref)
    return None


def inherited_attr(die, name: str):
    owner = origin_having(die, name)
    return owner.attributes[name] if owner is not None else None


def die_name(die) -> str | None:
    attr = inherited_attr(die, "DW_AT_name")
    return attr.value.decode("utf-8", "replace") if attr is not None else None


# DW_LANG_C89, C, C99, C11, C17 (DWARF 5 section 7.12, DWARF 6 draft).
_C_LANGUAGES = frozenset({0x0001, 0x0002, 0x000C, 0x001D, 0x002C})


def gdb_function_name(die) -> str | None:
    """The name gdb's `break NAME` matches a C function's DWARF by: its
    DW_AT_linkage_name when it has one (an asm label, glibc's hidden
    `__GI___libc_read` for `__libc_read`), else DW_AT_name. gdb 13 then
    finds `break __libc_read` through the ELF symbol only, which is why it
    has one location and `break __GI___libc_read` two. Other languages'
    linkage names are mangled: DW_AT_name there."""
    language = die.cu.get_top_DIE().attributes.get("DW_AT_language")
    if language is not None and language.value in _C_LANGUAGES:
        linkage = inherited_attr(die, "DW_AT_linkage_name")
        if linkage is not None:
            return linkage.value.decode("utf-8", "replace")
    return die_name(die)


class DwarfIndex:
    """`cache` (by build-id) keeps line tables, file maps and top-level
    functions across runs; without it everything is decoded each time."""

    def __init__(self, dwarfinfo, cache: IndexCache | None = None) -> None:
        self.dwarfinfo = dwarfinfo
        self._cache = cache
        self._cu_offsets: list[int] | None = None
        self._aranges: list[tuple[int, int, int]] = []
        self._arange_starts: list[int] = []
        self._aranges_loaded = False
        self._cu_range_index: list[tuple[int, int, int]] | None = None
        self._lines: dict[int, LineTable] = {}
        self._file_maps: dict[int, dict[int, str]] = {}
        self._file_maps_loaded = False
        # (comp dir, directory, name) -> path: libpython's 146 CUs name the
        # same headers ~8.5k times.
        self._joined_paths: dict[tuple, str] = {}
        self._abbrev_tables: dict[int, tuple] = {}
        self._str_offsets_bases: dict[int, int | None] = {}     # CU offset -> DW_AT_str_offsets_base
        self._files_by_path: dict[str, list[int]] | None = None
        self._functions: dict[int, tuple[FunctionEntry, ...]] = {}
        # DW_AT_ranges decoded, by DIE offset: scopes are walked at many PCs
        # of one function (`info --lines`).
        self._die_ranges: dict[int, list[tuple[int, int]]] = {}
        self._function_ranges: dict[int, _RangeIndex] = {}
        self._section_bytes: dict[int, bytes] = {}
        self._type_names: dict[str, tuple] | None = None
        FastAbbreviations.install(dwarfinfo, lambda: self.section_data(dwarfinfo.debug_abbrev_sec))

    # ----------------------------------------------------------------- CUs

    def cu_offsets(self) -> list[int]:
        """CU header offsets, from the unit_length fields alone (DWARF 5
        section 7.5.1.1); no DIE is parsed. From the index cache when it
        has them: the walk reads all of .debug_info, and a warm look-up
        reads only the few KB of it that pyelftools parses."""
        if self._cu_offsets is None:
            offsets = self.cached("cu-offsets", _cu_offsets_from_plain)
            if offsets is None:
                offsets = _unit_offsets(self.info_bytes())
                self.store("cu-offsets", offsets)
            self._cu_offsets = offsets
        return self._cu_offsets

    def info_size(self) -> int:
        section = self.dwarfinfo.debug_info_sec
        return section.size if section is not None else 0

    def cu_at(self, offset: int):
        return self.dwarfinfo.get_CU_at(offset)

    def cu_containing(self, info_offset: int):
        offsets = self.cu_offsets()
        return self.cu_at(offsets[bisect.bisect_right(offsets, info_offset) - 1])

    def cu_range(self, cu_offset: int) -> tuple[int, int]:
        """[start, end) of a CU's bytes in .debug_info."""
        offsets = self.cu_offsets()
        i = bisect.bisect_left(offsets, cu_offset)
        end = offsets[i + 1] if i + 1 < len(offsets) else self.info_size()
        return cu_offset, end

    def cu_for_address(self, address: int):
        aranges = self.address_ranges()
        if aranges:
            offset = _cu_offset_at(aranges, self._arange_starts, address)
            return None if offset is None else self.cu_at(offset)
        return self._cu_for_address_by_ranges(address)

    def address_ranges(self) -> list[tuple[int, int, int]]:
        """.debug_aranges as (begin, length, CU offset), sorted by begin
        as pyelftools sorts them; from the index cache when it has them
        (pyelftools decodes libpython's in ~8 ms). Empty without the section."""
        if not self._aranges_loaded:
            self._aranges_loaded = True
            found = self.cached("aranges", _aranges_from_plain)
            if found is None:
                decoded = self.dwarfinfo.get_aranges()
                found = [(e.begin_addr, e.length, e.info_offset)
                         for e in (decoded.entries if decoded is not None else ())]
                self.store("aranges", found)
            self._aranges = found
            self._arange_starts = [begin for begin, _, _ in found]
        return self._aranges

    def _cu_for_address_by_ranges(self, address: int):
        # No .debug_aranges: read each CU's top DIE ranges once.
        if self._cu_range_index is None:
            self._cu_range_index = sorted(
                (lo, hi, off) for off in self.cu_offsets()
                for lo, hi in self._cu_ranges(self.cu_at(off).get_top_DIE()))
        for lo, hi, off in self._cu_range_index:
            if lo <= address < hi:
                return self.cu_at(off)
        return None

    def _cu_ranges(self, top) -> list[tuple[int, int]]:
        """A CU's ranges; for a CU that gives none (they are optional, and
        some producers leave them out) its functions' ranges, as gdb
        finds the function of a PC there."""
        ranges = self.die_ranges(top)
        if ranges or not top.has_children:
            return ranges
        return [r for child in top.iter_children() if child.tag == "DW_TAG_subprogram"
                for r in self.die_ranges(child)]

    def info_bytes(self) -> bytes:
        return self.section_data(self.dwarfinfo.debug_info_sec)

    def section_data(self, section) -> bytes:
        """A DWARF section's bytes, read once."""
        if section is None:
            return b""
        key = id(section)
        if key not in self._section_bytes:
            self._section_bytes[key] = dwarf_section_bytes(section)
        return self._section_bytes[key]

    # -------------------------------------------------------------- ranges

    def die_ranges(self, die) -> list[tuple[int, int]]:
        """[low, high) address ranges of a DIE (DW_AT_low_pc/high_pc or
        DW_AT_ranges, DWARF 5 section 2.17), in the order DWARF lists them
        (gdb 13 takes the first as a block's entry). Empty: none, or none
        that gdb keeps (see pc_bounds)."""
        return self.pc_bounds(die) or []

    def pc_bounds(self, die) -> list[tuple[int, int]] | None:
        """None when the DIE has no address attributes at all; else its
        valid ranges, possibly none. gdb tells the two apart: a lexical
        block without addresses only groups declarations (its children
        belong to the enclosing block), one whose addresses are all invalid
        is dropped with its children (gdb/dwarf2/read.c
        dwarf2_get_pc_bounds: high <= low, or low == 0 where the linker
        discarded the code, is invalid; so is a range entry starting at 0)."""
        attrs = die.attributes
        if "DW_AT_ranges" in attrs:
            return [r for r in self._range_list(die) if r[0] != 0]
        if "DW_AT_low_pc" not in attrs:
            return None
        low = attrs["DW_AT_low_pc"].value
        high_attr = attrs.get("DW_AT_high_pc")
        if high_attr is None:
            return None               # a low_pc alone names no range (gdb: "not present")
        high = high_attr.value if high_attr.form in _ADDRESS_FORMS else low + high_attr.value
        return [(low, high)] if 0 < low < high else []

    def _range_list(self, die) -> list[tuple[int, int]]:
        found = self._die_ranges.get(die.offset)
        if found is None:
            found = self._die_ranges[die.offset] = self._decode_range_list(die)
        return found

    def _decode_range_list(self, die) -> list[tuple[int, int]]:
        cu = die.cu
        attr = die.attributes["DW_AT_ranges"]
        offset = attr.value
        if attr.form == "DW_FORM_rnglistx":
            # raw_value is the index (pyelftools 0.31+ resolves `value` to
            # the list's offset itself; earlier versions leave the index).
            offset = self._rnglistx_offset(cu, attr.raw_value)
        entries = self.dwarfinfo.range_lists().get_range_list_at_offset(offset, cu=cu)
        base = self.cu_base(cu)
        out = []
        for entry in entries:
            if isinstance(entry, BaseAddressEntry):
                base = entry.base_address
            elif entry.is_absolute:
                out.append((entry.begin_offset, entry.end_offset))
            else:
                out.append((base + entry.begin_offset, base + entry.end_offset))
        return [r for r in out if r[0] < r[1]]

    def _rnglistx_offset(self, cu, index: int) -> int:
        top = cu.get_top_DIE()
        base = top.attributes["DW_AT_rnglists_base"].value
        stream = self.dwarfinfo.debug_rnglists_sec.stream
        stream.seek(base + 4 * index)
        return base + struct.unpack("<I", stream.read(4))[0]

    def cu_base(self, cu) -> int:
        """The CU base address for location and range lists."""
        low = cu.get_top_DIE().attributes.get("DW_AT_low_pc")
        return low.value if low is not None else 0

    # --------------------------------------------------------------- lines

    def file_map(self, cu_offset: int) -> dict[int, str]:
        """DWARF file index -> path, from the line-program header only (or
        the cached maps of every CU, when files_by_path stored them)."""
        if cu_offset not in self._file_maps and not self._file_maps_loaded:
            self._file_maps_loaded = True
            self._file_maps.update(self.cached("file-maps", _file_maps_from_plain) or {})
        if cu_offset not in self._file_maps:
            self._file_maps[cu_offset] = self._file_map(cu_offset)
        return self._file_maps[cu_offset]

    def files_by_path(self) -> dict[str, list[int]]:
        """Every source path named by any CU's line-program header -> the
        CUs naming it. Reads one header per CU, never a DIE tree."""
        if self._files_by_path is None:
            maps = self.cached("file-maps", _file_maps_from_plain)
            if maps is None:
                maps = {off: self.file_map(off) for off in self.cu_offsets()}
                self.store("file-maps", maps)
            self._file_maps.update(maps)
            found: dict[str, list[int]] = {}
            for off in sorted(maps):
                for path in set(maps[off].values()):
                    found.setdefault(path, []).append(off)
            self._files_by_path = found
        return self._files_by_path

    def _file_map(self, cu_offset: int) -> dict[int, str]:
        stmt_list, comp_dir = self._cu_line_info(cu_offset)
        if stmt_list is None:
            return {}
        version, dirs, files = self._file_tables(cu_offset, stmt_list)
        dirs = [_text(d) for d in dirs]
        if version < 5:
            dirs = [comp_dir] + dirs      # DWARF 4: directory 0 is the CU's comp_dir
        out, joined = {}, self._joined_paths
        for i, (name, dir_index) in enumerate(files):
            index = i if version >= 5 else i + 1    # DWARF 4 file numbers start at 1
            d = dirs[dir_index] if dir_index < len(dirs) else ""
            # Directory 0 is the comp dir itself (DWARF 5 6.2.4.1): joining
            # it to DW_AT_comp_dir again doubles a relative one (glibc's
            # "./malloc" became "malloc/malloc/malloc.c").
            key = ("" if d == comp_dir else comp_dir, d, name)
            path = joined.get(key)
            if path is None:
                path = joined[key] = os.path.normpath(os.path.join(key[0], d, _text(name)))
            out[index] = path
        return out

    def _cu_line_info(self, cu_offset: int) -> tuple[int | None, str]:
        info = self.dwarfinfo
        try:
            stmt_list, comp_dir = read_cu_line_info(
                self.info_bytes(), self.section_data(info.debug_abbrev_sec), cu_offset,
                self.section_data(info.debug_str_sec), self.section_data(info.debug_line_str_sec))
            return stmt_list, _text(comp_dir)
        except (UnsupportedHeader, IndexError, ValueError):
            attrs = self.cu_at(cu_offset).get_top_DIE().attributes
            stmt = attrs.get("DW_AT_stmt_list")
            comp_dir = attrs.get("DW_AT_comp_dir")
            return (stmt.value if stmt else None), _text(comp_dir.value if comp_dir else "")

    def _file_tables(self, cu_offset: int, stmt_list: int):
        info = self.dwarfinfo
        try:
            return read_file_tables(self.section_data(info.debug_line_sec), stmt_list,
                                    self.section_data(info.debug_line_str_sec), self.section_data(info.debug_str_sec))
        except (UnsupportedHeader, IndexError, ValueError):
            header = info.line_program_for_CU(self.cu_at(cu_offset)).header
            return (header.version, list(header.include_directory),
                    [(e.name, e.dir_index) for e in header.file_entry])

    def line_table(self, cu_offset: int) -> LineTable:
        if cu_offset not in self._lines:
            name = f"lines-{cu_offset}"
            table = self.cached(name, _line_table_from_plain)
            if table is None:
                table = self._decode_lines(cu_offset)
                self.store(name, ([_row_plain(r) for r in table.rows], table.files))
            self._file_maps.setdefault(cu_offset, table.files)
            self._lines[cu_offset] = table
        return self._lines[cu_offset]

    def _decode_lines(self, cu_offset: int) -> LineTable:
        sequences, current = [], []
        for row in self._line_rows(cu_offset):
            current.append(row)
            if row.end_sequence:
                sequences.append(current)
                current = []
        sequences.sort(key=lambda seq: seq[0].address)
        return _line_table(tuple(row for seq in sequences for row in seq), self.file_map(cu_offset))

    def _line_rows(self, cu_offset: int) -> list[Row]:
        """The CU's line-program rows in program order."""
        stmt_list, _ = self._cu_line_info(cu_offset)
        if stmt_list is None:
            return []
        try:
            return list(map(Row._make, decode_rows(self.section_data(self.dwarfinfo.debug_line_sec),
                                                   stmt_list)))
        except (UnsupportedHeader, IndexError, ValueError, struct.error):
            return line_rows_by_pyelftools(self.dwarfinfo, self.cu_at(cu_offset))

    # ----------------------------------------------------------- functions

    def functions(self, cu_offset: int) -> tuple[FunctionEntry, ...]:
        """Top-level DW_TAG_subprogram DIEs that have code, sorted by start
        (in Rust and C++ CUs also those nested in scopes: _nesting_scopes).
        Only the CU's direct children are read otherwise; gcc's
        DW_AT_sibling lets pyelftools skip each function's subtree."""
        if cu_offset not in self._functions:
            name = f"functions-{cu_offset}"
            found = self.cached(name, _functions_from_plain)
            if found is None:
                found = self._read_functions(cu_offset)
                self.store(name, [(f.name, f.ranges, f.die_offset) for f in found])
            self._functions[cu_offset] = found
        return self._functions[cu_offset]

    def _read_functions(self, cu_offset: int) -> tuple[FunctionEntry, ...]:
        try:
            found = self._read_functions_raw(cu_offset)
        except (UnsupportedHeader, IndexError, ValueError, struct.error):
            top = self.cu_at(cu_offset).get_top_DIE()       # forms the raw reader lacks
            found = [self._function_entry(die) for die in _subprograms(top)]
        found = [f for f in found if f is not None]
        found.sort(key=lambda f: f.ranges[0][0])
        return tuple(found)

    def _language(self, cu_offset: int) -> int | None:
        language = self.cu_at(cu_offset).get_top_DIE().attributes.get("DW_AT_language")
        return language.value if language is not None else None

    def _read_functions_raw(self, cu_offset: int) -> list[FunctionEntry | None]:
        """The CU's top-level subprograms from the raw bytes (pyelftools
        parses every DIE: ~40 ms for a libpython CU). A DIE whose name or
        addresses take more than a plain read (DW_AT_ranges, an inherited
        name, an address index) is handed to pyelftools alone."""
        info = self.dwarfinfo
        dies = read_top_level_dies(
            self.info_bytes(), self.section_data(info.debug_abbrev_sec), cu_offset,
            self.section_data(info.debug_str_sec), self.section_data(info.debug_line_str_sec),
            _SUBPROGRAM, _FUNCTION_ATTRIBUTES,
            _nesting_scopes(self._language(cu_offset)))
        found = []
        for offset, _, attrs in dies:
            name, low, high = attrs.get(_AT_NAME), attrs.get(_AT_LOW_PC), attrs.get(_AT_HIGH_PC)
            if _AT_RANGES in attrs or name is None or not isinstance(name[1], bytes) or \
                    (low is not None and low[0] != _FORM_ADDR) or \
                    (high is not None and high[0] not in _HIGH_PC_FORMS):
                found.append(self._function_entry(self.die_at(offset)))
            elif low is not None and high is not None:
                end = high[1] if high[0] == _FORM_ADDR else low[1] + high[1]
                if 0 < low[1] < end:         # pc_bounds: what gdb keeps
                    found.append(FunctionEntry(_text(name[1]), ((low[1], end),), offset))
        return found

    def _function_entry(self, die) -> FunctionEntry | None:
        ranges = tuple(self.die_ranges(die))
        return FunctionEntry(die_name(die), ranges, die.offset) if ranges else None

    def in_code_of(self, address: int, cu_offset: int) -> bool:
        """A function of CU `cu_offset` covers `address`. A raw search's hit
        can decode as a DIE inside another one's bytes; the addresses a
        real DIE names are in its own CU's code."""
        hit = self.function_at(address)
        return hit is not None and hit[0].cu_offset == cu_offset

    def function_at(self, address: int):
        """(CU, FunctionEntry) whose ranges cover `address`, or None."""
        cu = self.cu_for_address(address)
        if cu is None:
            return None
        functions = self.functions(cu.cu_offset)
        index = self._function_ranges.get(cu.cu_offset)
        if index is None:
            index = self._function_ranges[cu.cu_offset] = _RangeIndex(functions)
        found = index.first_covering(address)
        return None if found is None else (cu, functions[found])

    def die_at(self, offset: int):
        return self.cu_containing(offset).get_DIE_from_refaddr(offset)

    # --------------------------------------------------------- type names

    def type_names(self) -> dict[str, tuple[int, ...]]:
        """Every type a CU declares at file scope (base types, typedefs,
        struct/union/enum/class tags): name -> flat (DW_TAG code, DIE
        offset, is_declaration, ...) triples in .debug_info order (see
        type_entries). Built once per build-id from the raw bytes (one pass
        over the CUs' top-level DIEs, subtrees skipped), then read from the
        cache: 0.04 s for libpython3.11 instead of 0.8 s."""
        if self._type_names is None:
            found = self.cached("type-names", _type_names_from_plain)
            if found is None:
                lists: dict[str, list[int]] = {}
                for off in self.cu_offsets():
                    for tag, name, die_offset, declaration in self._top_level_types(off):
                        lists.setdefault(name, []).extend((tag, die_offset, int(declaration)))
                found = {name: tuple(entries) for name, entries in lists.items()}
                self.store("type-names", found)
            self._type_names = found
        return self._type_names

    def type_entries(self, name: str) -> list[tuple[str, int, bool]]:
        """(DW_TAG name, DIE offset, is_declaration) of the file-scope
        types named `name`, in .debug_info order."""
        flat = self.type_names().get(name, ())
        return [(ENUM_DW_TAG_NAMES.get(flat[i], ""), flat[i + 1], bool(flat[i + 2]))
                for i in range(0, len(flat) - 2, 3)]

    def _top_level_types(self, cu_offset: int):
        info = self.dwarfinfo
        try:
            found = read_top_level_names(
                self.info_bytes(), self.section_data(info.debug_abbrev_sec), cu_offset,
                self.section_data(info.debug_str_sec), self.section_data(info.debug_line_str_sec),
                _TYPE_TAG_CODES)
            return [(tag, _text(name), off, decl) for tag, name, off, decl in found]
        except (UnsupportedHeader, IndexError, ValueError, struct.error):
            top = self.cu_at(cu_offset).get_top_DIE()       # forms the raw reader lacks
            return [(ENUM_DW_TAG[die.tag], die_name(die), die.offset,
                     "DW_AT_declaration" in die.attributes)
                    for die in top.iter_children() if die.tag in TYPE_TAGS and die_name(die)]

    # --------------------------------------------------------------- cache

    def cached(self, name: str, convert):
        """A cached value converted back to our types, or None; a value of
        the wrong shape counts as absent."""
        plain = self._cache.load(name) if self._cache is not None else None
        if plain is None:
            return None
        try:
            return convert(plain)
        except (TypeError, ValueError, AttributeError, IndexError):
            return None

    def store(self, name: str, plain) -> None:
        if self._cache is not None:
            self._cache.store(name, plain)

    # ---------------------------------------------------------- raw search

    def find_bytes(self, needle: bytes, limit: int = 64, start: int = 0,
                   end: int | None = None) -> list[int]:
        """Offsets of `needle` in .debug_info[start:end], at most `limit`."""
        data, hits, pos = self.info_bytes(), [], start
        while len(hits) < limit:
            pos = data.find(needle, pos, end)
            if pos < 0:
                break
            hits.append(pos)
            pos += 1
        return hits

    def die_with_attribute_at(self, pos: int, attributes: tuple[str, ...], tags: tuple[str, ...],
                              having: tuple[str, ...] = ()):
        """The DIE with a tag among `tags` and every attribute of `having`,
        one of whose `attributes` has its value at .debug_info offset `pos`
        (a hit of a raw byte search), or None. The DIE starts a few bytes
        before (its abbreviation code and the attributes listed first):
        each start is tried by decoding the CU's abbreviations up to `pos`
        (raw.attribute_at), so a hit inside other data finds nothing, and
        only the DIE found is parsed by pyelftools."""
        cu = self.cu_containing(pos)
        abbreviations, offset_size, address_size = self._abbreviations(cu)
        wanted_tags = {ENUM_DW_TAG[t] for t in tags}
        wanted = {ENUM_DW_AT[a] for a in attributes}
        required = {ENUM_DW_AT[a] for a in having}
        data = self.info_bytes()
        for start in range(pos - 1, max(pos - _MAX_ATTRIBUTE_LEAD, cu.cu_die_offset) - 1, -1):
            found = raw_attribute_at(data, start, pos, abbreviations, offset_size, address_size)
            if found is not None and found[0] in wanted_tags and found[1] in wanted and \
                    required <= {attr for attr, _ in found[2]}:
                die = cu.get_DIE_from_refaddr(start)
                if _decodes_whole(die, data, abbreviations):
                    return die
        return None

    def _abbreviations(self, cu):
        """The CU's abbreviation table, decoded from the raw bytes once
        (pyelftools' takes ~20 ms per libpython CU), and its sizes."""
        if cu.cu_offset not in self._abbrev_tables:
            table = read_abbreviations(self.section_data(self.dwarfinfo.debug_abbrev_sec),
                                       cu["debug_abbrev_offset"])
            self._abbrev_tables[cu.cu_offset] = (table, 8 if cu.dwarf_format() == 64 else 4,
                                                 cu["address_size"])
        return self._abbrev_tables[cu.cu_offset]

    def references_to(self, target, attributes: tuple[str, ...], tags: tuple[str, ...],
                      limit: int = 1 << 20) -> list:
        """DIEs (with a tag among `tags`) of the target's own CU whose
        `attributes` refer to it with a CU-relative 4-byte reference
        (DW_FORM_ref4, what GCC writes), found by searching that CU's bytes
        for the offset: no DIE tree is walked."""
        start, end = self.cu_range(target.cu.cu_offset)
        needle = struct.pack("<I", target.offset - target.cu.cu_offset)
        found = {}
        for pos in self.find_bytes(needle, limit, start, end):
            die = self.die_with_attribute_at(pos, attributes, tags)
            if die is not None and attribute_at(die, pos, attributes).form == "DW_FORM_ref4":
                found.setdefault(die.offset, die)
        return list(found.values())

    def _dies_named_by_index(self, string_offsets: set[int], tags: tuple[str, ...],
                             having: tuple[str, ...], cu_offset: int | None) -> list:
        """The DIEs dies_named wants in CUs that name things by index
        (DW_FORM_strx*, clang's DWARF 5): the index of a string offset in
        the CU's .debug_str_offsets table, searched for after the
        abbreviation codes that can hold it (raw.named_die_pattern)."""
        table = self.section_data(getattr(self.dwarfinfo, "debug_str_offsets_sec", None))
        if not table or not string_offsets:
            return []                           # gcc's DWARF: no string indexes
        found = []
        for cu_start in [cu_offset] if cu_offset is not None else self.cu_offsets():
            for index in self._string_indexes(table, cu_start, string_offsets):
                found += self._dies_with_name_index(cu_start, index, tags, having)
        return found

    def _string_indexes(self, table: bytes, cu_start: int, string_offsets: set[int]) -> list[int]:
        if cu_start not in self._str_offsets_bases:
            self._str_offsets_bases[cu_start] = read_str_offsets_base(
                self.info_bytes(), self.section_data(self.dwarfinfo.debug_abbrev_sec), cu_start)
        base = self._str_offsets_bases[cu_start]
        if base is None or base < 8:
            return []
        # the table's header (DWARF 5 section 7.26) ends at the base
        length = _U32.unpack_from(table, base - 8)[0]
        count = (length - 4) // 4
        offsets = struct.unpack_from(f"<{count}I", table, base)
        return [k for k, offset in enumerate(offsets) if offset in string_offsets]

    def _dies_with_name_index(self, cu_start: int, index: int, tags: tuple[str, ...],
                              having: tuple[str, ...]) -> list:
        cu = self.cu_at(cu_start)
        abbreviations, offset_size, address_size = self._abbreviations(cu)
        pattern = named_die_pattern(abbreviations, frozenset(ENUM_DW_TAG[t] for t in tags),
                                    frozenset(ENUM_DW_AT[a] for a in having),
                                    frozenset(ENUM_DW_AT[a] for a in _NAME_ATTRIBUTES), index,
                                    offset_size, address_size)
        if pattern is None:
            return []
        data, (start, end) = self.info_bytes(), self.cu_range(cu_start)
        found = []
        for match in pattern.finditer(data, cu.cu_die_offset, end):
            try:
                die = cu.get_DIE_from_refaddr(match.start())
            except _DIE_DECODE_ERRORS:             # a match inside other data
                continue
            if die.tag in tags and _decodes_whole(die, data, abbreviations):
                found.append(die)
        return found

    def dies_named(self, name: str, tags: tuple[str, ...], having: tuple[str, ...] = (),
                   cu_offset: int | None = None, limit: int = 4096,
                   template_instances: bool = False) -> list:
        """DIEs (with a tag among `tags` and the attributes `having`) whose
        DW_AT_name or DW_AT_linkage_name is `name` (with `template_instances`,
        also `name<...>`, as GCC names a template's instances), in one CU or
        in all: the name's .debug_str offsets (DW_FORM_strp; the linker may
        share the tail of a longer string) and its inline bytes
        (DW_FORM_string) are searched for, then the DIEs holding a hit."""
        start, end = self.cu_range(cu_offset) if cu_offset is not None else (0, None)
        encoded = name.encode() + b"\0"
        strings = self.section_data(self.dwarfinfo.debug_str_sec)
        inline, string_offsets = [encoded], _string_offsets(strings, encoded, _MAX_STRING_COPIES)
        if template_instances:
            prefix = name.encode() + b"<"
            inline.append(prefix)
            string_offsets += [pos + 1 for pos in _string_offsets(strings, b"\0" + prefix,
                                                                  _MAX_TEMPLATE_INSTANCES)]
        found = {}
        for needle in inline + [_U32.pack(offset) for offset in string_offsets]:
            for hit in self.find_bytes(needle, limit, start, end):
                die = self.die_with_attribute_at(hit, _NAME_ATTRIBUTES, tags, having)
                if die is not None:
                    found.setdefault(die.offset, die)
        for die in self._dies_named_by_index(set(string_offsets), tags, having, cu_offset):
            found.setdefault(die.offset, die)
        return [die for die in found.values()
                if any(_is_named(_text(die.attributes[a].value), name, template_instances)
                       for a in _NAME_ATTRIBUTES if a in die.attributes)]


def _string_offsets(strings: bytes, needle: bytes, most: int) -> list[int]:
    found, pos = [], strings.find(needle)
    while pos >= 0 and len(found) < most:
        found.append(pos)
        pos = strings.find(needle, pos + 1)
    return found


def _is_named(text: str | None, name: str, template_instances: bool) -> bool:
    return text == name or (template_instances and text is not None and
                            text.startswith(name + "<") and text.endswith(">"))


_U32 = struct.Struct("<I")
_DIE_DECODE_ERRORS = (KeyError, IndexError, ValueError, struct.error, ELFParseError, DWARFError,
                      ConstructError)


TYPE_TAGS = ("DW_TAG_base_type", "DW_TAG_typedef", "DW_TAG_structure_type",
             "DW_TAG_union_type", "DW_TAG_enumeration_type", "DW_TAG_class_type")
_TYPE_TAG_CODES = frozenset(ENUM_DW_TAG[t] for t in TYPE_TAGS)
ENUM_DW_TAG_NAMES = {code: name for name, code in ENUM_DW_TAG.items()}


class _RangeIndex:
    """Address -> the first of a CU's functions (in functions() order)
    whose ranges cover it, by bisection instead of a scan of every range
    (a libpython CU has hundreds of functions, 200 look-ups plan 100 probes)."""

    def __init__(self, functions: tuple[FunctionEntry, ...]) -> None:
        spans = sorted((lo, hi, i) for i, entry in enumerate(functions) for lo, hi in entry.ranges)
        self._starts = [lo for lo, _, _ in spans]
        self._spans = spans
        # The highest end among spans[0..i]: no span at or left of i reaches
        # an address at or above it.
        self._reach, highest = [], 0
        for _, hi, _ in spans:
            highest = max(highest, hi)
            self._reach.append(highest)

    def first_covering(self, address: int) -> int | None:
        i = bisect.bisect_right(self._starts, address) - 1
        best = None
        while i >= 0 and self._reach[i] > address:
            lo, hi, entry = self._spans[i]
            if lo <= address < hi and (best is None or entry < best):
                best = entry
            i -= 1
        return best


def _cu_offset_at(aranges: list[tuple[int, int, int]], starts: list[int],
                  address: int) -> int | None:
    # pyelftools' ARanges.cu_offset_at_addr, to the letter: the entry with
    # the greatest begin <= address (the last one when none is) must cover it.
    begin, length, cu_offset = aranges[bisect.bisect_right(starts, address) - 1]
    return cu_offset if begin <= address < begin + length else None


def _unit_offsets(data: bytes) -> list[int]:
    offsets, pos = [], 0
    while pos + 4 <= len(data):
        offsets.append(pos)
        (length,) = struct.unpack_from("<I", data, pos)
        if length == 0xFFFFFFFF:
            (length,) = struct.unpack_from("<Q", data, pos + 4)
            pos += 12 + length
        else:
            pos += 4 + length
    return offsets


def _cu_offsets_from_plain(plain) -> list[int]:
    if not isinstance(plain, list) or not all(isinstance(o, int) for o in plain):
        raise TypeError("cu-offsets")
    return plain


def _aranges_from_plain(plain) -> list[tuple[int, int, int]]:
    if not isinstance(plain, list) or not all(
            isinstance(e, tuple) and len(e) == 3 for e in plain[:1] + plain[-1:]):
        raise TypeError("aranges")
    return plain


def _type_names_from_plain(plain) -> dict[str, tuple[int, ...]]:
    if not isinstance(plain, dict) or not all(isinstance(v, tuple) and len(v) % 3 == 0
                                               for v in plain.values()):
        raise TypeError("type names")
    return plain


# Bytes a DIE's abbreviation code and first attributes take before the one
# searched for (GCC puts names and origins first; a call site's return pc,
# 8 bytes, precedes its origin).
_MAX_ATTRIBUTE_LEAD = 24


_DW_LANG_RUST = 0x1C
# Where rustc puts functions: in their module's namespace, methods in their type's.
_RUST_SCOPE_TAGS = ("DW_TAG_namespace", "DW_TAG_structure_type", "DW_TAG_union_type",
                    "DW_TAG_enumeration_type")
_RUST_SCOPES = frozenset(ENUM_DW_TAG[t] for t in _RUST_SCOPE_TAGS)


# g++ puts a lambda's operator() (and a local class's methods) inside the
# closure type, inside the function (or block) that defines it; gdb finds
# them there. Every other C++ definition is a child of the CU.
_CXX_LANGUAGES = frozenset({0x04, 0x19, 0x1A, 0x21})   # C++, C++03, C++11, C++14
_CXX_SCOPE_TAGS = ("DW_TAG_subprogram", "DW_TAG_lexical_block", "DW_TAG_structure_type",
                   "DW_TAG_class_type", "DW_TAG_union_type", "DW_TAG_namespace")
_CXX_SCOPES = frozenset(ENUM_DW_TAG[t] for t in _CXX_SCOPE_TAGS)


def _nesting_scopes(language: int | None) -> frozenset[int]:
    """The DIE tags whose children may hold a function definition."""
    if language == _DW_LANG_RUST:
        return _RUST_SCOPES
    return _CXX_SCOPES if language in _CXX_LANGUAGES else frozenset()


def _scope_tags(language: int | None) -> tuple[str, ...]:
    if language == _DW_LANG_RUST:
        return _RUST_SCOPE_TAGS
    return _CXX_SCOPE_TAGS if language in _CXX_LANGUAGES else ()


def _subprograms(top):
    """The CU's subprograms: its children, and in a Rust or C++ CU those
    nested in its scopes (_nesting_scopes)."""
    language = top.attributes.get("DW_AT_language")
    descend = _scope_tags(language.value if language is not None else None)
    for die in top.iter_children():
        if die.tag == "DW_TAG_subprogram":
            yield die
        if die.tag in descend and die.has_children:
            yield from _subprograms_in(die, descend)


def _subprograms_in(scope, descend):
    for die in scope.iter_children():
        if die.tag == "DW_TAG_subprogram":
            yield die
        if die.tag in descend and die.has_children:
            yield from _subprograms_in(die, descend)


def _decodes_whole(die, info: bytes, abbreviations: dict) -> bool:
    """Bytes a few before a hit can decode as a DIE by chance (rustc's
    template parameter before a variable read as a subprogram): a real
    DIE's strings resolve, and the next DIE (or a 0 terminator) follows it."""
    if any(attr.value is None for attr in die.attributes.values()
           if attr.form in ("DW_FORM_strp", "DW_FORM_line_strp", "DW_FORM_strx",
                            "DW_FORM_strx1", "DW_FORM_strx2", "DW_FORM_strx4")):
        return False
    end = die.offset + die.size
    if end >= len(info):
        return False
    code, shift, pos = 0, 0, end
    while pos < len(info):
        byte = info[pos]
        code |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            break
    return code == 0 or code in abbreviations
_MAX_STRING_COPIES = 16
_MAX_TEMPLATE_INSTANCES = 256
_NAME_ATTRIBUTES = ("DW_AT_name", "DW_AT_linkage_name")


def attribute_at(die, pos: int, attributes: tuple[str, ...]):
    """The attribute of `die` among `attributes` whose value is at `pos`."""
    return next((die.attributes[a] for a in attributes
                 if a in die.attributes and die.attributes[a].offset == pos), None)


def _line_table(rows: tuple[Row, ...], files: dict[int, str]) -> LineTable:
    # gdb drops line-0 rows, so they are not line boundaries either.
    addresses = tuple(sorted({r.address for r in rows if r.line or r.end_sequence}))
    return LineTable(rows, files, addresses, tuple(r.address for r in rows))


# Cached forms are plain tuples and dicts (see cache.py); these convert
# back, raising TypeError/ValueError on anything of the wrong shape.

def _row_plain(row: Row) -> tuple:
    return tuple(row)


def _line_table_from_plain(plain) -> LineTable:
    rows, files = plain
    return _line_table(tuple(map(Row._make, rows)), _file_map_from_plain(files))


def _file_map_from_plain(plain) -> dict[int, str]:
    # The entry's CRC and format version vouch for its bytes, and one writer
    # made every item: the first shows the shape (checking all 8.6k of
    # libpython's file names took ~10 ms a run).
    if not isinstance(plain, dict) or not all(
            isinstance(k, int) and isinstance(v, str) for k, v in itertools.islice(plain.items(), 1)):
        raise TypeError("file map")
    return plain


def _file_maps_from_plain(plain) -> dict[int, dict[int, str]]:
    return {int(off): _file_map_from_plain(files) for off, files in plain.items()}


def _functions_from_plain(plain) -> tuple[FunctionEntry, ...]:
    return tuple(FunctionEntry(name, tuple((lo, hi) for lo, hi in ranges), off)
                 for name, ranges, off in plain)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")


def line_rows_by_pyelftools(dwarfinfo, cu) -> list[Row]:
    """The rows decode_rows gives, by pyelftools: for what decode_rows
    refuses, and the reference its test compares with."""
    program = dwarfinfo.line_program_for_CU(cu)
    states = (entry.state for entry in (program.get_entries() if program else ()))
    return [Row(s.address, s.file, s.line, bool(s.is_stmt), bool(s.prologue_end),
                bool(s.end_sequence), s.discriminator) for s in states if s is not None]
