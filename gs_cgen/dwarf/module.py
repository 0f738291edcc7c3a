"""The facade the planner codes against: one ModuleDebugInfo per ELF file.

Every lookup starts from the cheapest index that can answer it (symbol
table, .debug_aranges, line-program headers, raw byte search) and parses
only the one CU it leads to. See DESIGN.md "Speed".
"""
from __future__ import annotations

import dataclasses
import functools
import os
import struct

from elftools.common.exceptions import DWARFError, ELFError

from gs_cgen.dwarf.cache import MIN_DEBUG_INFO, open_index_cache
from gs_cgen.dwarf.callsites import calls_to, tail_call_return
from gs_cgen.dwarf.code import check_instruction_boundary
from gs_cgen.dwarf.uprobe_insn import (UprobeHandling, probeable_successor, uprobe_handling,
                                      uprobe_refusal, writes_only_stack)
from gs_cgen.cppnames import matches, normalize, parse_cpp_name
from gs_cgen.dwarf.cppsymbols import (cpp_qualified_names, cpp_symbols, display_name,
                                      inlined_cpp_instances)
from gs_cgen.dwarf.debugfile import find_debug_info
from gs_cgen.dwarf.cfi import CallFrames, CfaUnavailable, UnwindRow
from gs_cgen.dwarf.inline import SourceFrame, frame_function_name, is_rust_cu, source_frames
from gs_cgen.dwarf.rustsymbols import (demangled_path, rust_candidates, rust_qualified_names,
                                       rust_static_names, rust_statics)
from gs_cgen.dwarf.elf import ElfImage, Symbol, SymbolKind, dwarf_section_read
from gs_cgen.dwarf.ifunc import ifunc_symbol, implementation_name
from gs_cgen.dwarf.index import (TYPE_TAGS, DwarfIndex, FunctionEntry, die_name, inherited_attr,
                                 origin_having)
from gs_cgen.dwarf.locations import LocationReader
from gs_cgen.dwarf.plt import PltStubs, in_plt_section, plt_stubs
from gs_cgen.dwarf.model import (ArrayBound, CodeLocation, FrameScope, FunctionSite, GlobalVariable,
                                 IfuncSymbol, LineSite, LoadSegment, OptimizedOut, ThreadLocal,
                                 TlsSegment, UnsupportedLocation, VariableLocation, VisibleVariable,
                                 register_name)
from gs_cgen.dwarf.relocs import copy_slot, dynamic_relocations, dynamic_symbol_names, import_slots
from gs_cgen.dwarf.resolve import LocationResolver, ResolveContext
from gs_cgen.dwarf.lines import (ChosenLine, FileRows, cached_file_rows, choose_line,
                                 gdb_visible_rows, lowest_per_block)
from gs_cgen.dwarf.scopes import (ScopeContext, array_bound, frame_scope, gdb_block_at, locate_die,
                                  variable_at)
from gs_cgen.dwarf.symvers import parse_spelling
from gs_cgen.dwarf.tls import tls_expression_bytes
from gs_cgen.dwarf.sites import (covering_line, function_probe_address, inlined_instances,
                                 is_optimized_gcc, line_at, match_files)
from gs_cgen.dwarf.typebuild import TypeBuilder
from gs_cgen.dwarf.types import CType, PointerType, type_size
from gs_cgen.errors import DebugInfoError, nearest

_TAG_KEYWORDS = {
    "struct": ("DW_TAG_structure_type", "DW_TAG_class_type"),
    "union": ("DW_TAG_union_type",),
    "enum": ("DW_TAG_enumeration_type",),
    "class": ("DW_TAG_class_type", "DW_TAG_structure_type"),
}
# A name without a keyword: ordinary identifiers first, then tags.
_BARE_NAME_TAGS = (("DW_TAG_typedef",), ("DW_TAG_base_type",),
                   ("DW_TAG_structure_type", "DW_TAG_class_type"), ("DW_TAG_union_type",),
                   ("DW_TAG_enumeration_type",))
_SEARCH_LIMIT = 64
# Canonical C base spellings (script/typename.py) -> the DW_AT_name GCC
# gives the base type, then clang's.
_BASE_SPELLINGS = {
    "short": ("short int", "short"), "unsigned short": ("short unsigned int", "unsigned short"),
    "int": ("int",), "unsigned int": ("unsigned int",),
    "long": ("long int", "long"), "unsigned long": ("long unsigned int", "unsigned long"),
    "long long": ("long long int", "long long"),
    "unsigned long long": ("long long unsigned int", "unsigned long long"),
    "_Bool": ("_Bool", "bool"),
    "__int128": ("__int128",), "unsigned __int128": ("__int128 unsigned", "unsigned __int128"),
    "_Complex float": ("complex float",), "_Complex double": ("complex double",),
    "_Complex long double": ("complex long double",),
    "char": ("char",), "signed char": ("signed char",), "unsigned char": ("unsigned char",),
    "float": ("float",), "double": ("double",), "long double": ("long double",),
}


_MIN_EH_FRAME = 64 * 1024


def _require_x86_64(elf: ElfImage, name: str) -> None:
    # Registers, calling convention and pt_regs are x86_64's throughout.
    if elf.machine != "EM_X86_64" or elf.elfclass != 64:
        machine = str(elf.machine).removeprefix("EM_")
        elf.close()
        raise DebugInfoError(f"'{name}' is {elf.elfclass}-bit {machine} code: unsupported "
                             "architecture (gs-cgen traces x86_64 processes only)")


def _file_line_from_plain(plain) -> tuple[str | None, int | None]:
    file, line = plain
    if not (file is None or isinstance(file, str)) or not (line is None or isinstance(line, int)):
        raise TypeError("a probe line")
    return file, line


def open_module(path: str, name: str | None = None, target_root: str = "") -> "ModuleDebugInfo":
    """Open (or reuse) the debug info of the ELF file at `path`.

    `name` is the file's path in its process's own view, when the tracer
    opens it through another (/proc/PID/root/..., /proc/PID/map_files/...);
    `target_root` stands for that process's `/` when it is not ours. Both
    are needed to find separate debug files; `name` is what messages say."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise DebugInfoError(f"cannot open '{name or path}': {exc.strerror}") from exc
    if name is None and not target_root:
        path = os.path.realpath(path)       # one entry for every spelling of a host path
    return _open_cached(path, name, target_root, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _open_cached(path: str, name: str | None, target_root: str, _dev: int, _ino: int,
                 _mtime_ns: int, _size: int) -> "ModuleDebugInfo":
    # The file's identity, mtime and size are part of the key so that a
    # rebuilt binary, or another file behind the same /proc path, is re-read.
    return ModuleDebugInfo(path, name, target_root)


class ModuleDebugInfo:
    """The debug info of one ELF file. `path` is the module's name as the
    user knows it (the target's view); `open_path` is the file read here,
    and where uprobes are attached."""

    def __init__(self, path: str, name: str | None = None, target_root: str = "") -> None:
        # Segments, symbols, CFI and code bytes come from the file itself;
        # DWARF (and .symtab, when stripped here) may come from a separate
        # debug file with the same addresses.
        self._elf = ElfImage(path)
        _require_x86_64(self._elf, name or path)
        self.open_path = path
        self.path = name or path
        self.target_root = target_root
        self.build_id = self._elf.build_id
        self.is_pie = self._elf.is_pie
        self.segments: tuple[LoadSegment, ...] = self._elf.segments
        self.tls_segment: TlsSegment | None = self._elf.tls_segment    # PT_TLS
        self.dynamic_vaddr: int | None = self._elf.dynamic_vaddr       # PT_DYNAMIC
        search = find_debug_info(self._elf, self.path, target_root)
        self._debug_elf = search.image
        self._debug_searched = search.searched
        self._debug_failure = search.failure
        # No DWARF because debuginfod had none or did not answer.
        self.debuginfod_failed = search.failure is not None
        if self._debug_elf is not None and self._debug_elf is not self._elf:
            self._elf.use_symtab_of(self._debug_elf)
        self.has_debug_info = self._debug_elf is not None
        # The file the DWARF is read from: `path` or its separate debug file.
        self.debug_path = self._debug_elf.path if self._debug_elf is not None else None
        self._types = TypeBuilder()
        self._tail_calls: dict[tuple[int, int], int | None] = {}
        self._file_rows: dict[tuple[int, str], FileRows] = {}

    # ------------------------------------------------------------- plumbing

    @functools.cached_property
    def _dwarf(self) -> DwarfIndex:
        self.require_debug_info()
        # Linked executables and shared objects need no relocation of DWARF.
        debug = self._debug_elf
        return DwarfIndex(debug.dwarf_info(),
                          open_index_cache(self.build_id, debug.section(".debug_info").size))

    @functools.cached_property
    def _locations(self) -> LocationReader:
        return LocationReader(self._dwarf.dwarfinfo, self._dwarf.cu_base, dwarf_section_read)

    @functools.cached_property
    def _frames(self) -> CallFrames:
        hdr = self._elf.section(".eh_frame_hdr")
        data = self._elf.section_bytes(".eh_frame_hdr") if hdr else b""
        dwarfinfo = self._dwarf.dwarfinfo
        # A separate debug file keeps .eh_frame only as a NOBITS header.
        eh_info = dwarfinfo if self._debug_elf is self._elf else \
            self._elf.dwarf_info()
        return CallFrames(dwarfinfo, data, hdr.address if hdr else 0, eh_frame_info=eh_info)

    @functools.cached_property
    def _unwind_frames(self) -> CallFrames:
        # Unwinding needs only .eh_frame: it works without debug info too.
        if self.has_debug_info:
            return self._frames
        hdr = self._elf.section(".eh_frame_hdr")
        data = self._elf.section_bytes(".eh_frame_hdr") if hdr else b""
        own = self._elf.elf.get_dwarf_info(relocate_dwarf_sections=False)
        return CallFrames(own, data, hdr.address if hdr else 0)

    def derived_cache(self):
        """The on-disk cache by build-id (dwarf/cache.py) for what tools
        derive from this module per address (unwind/memo.py); None without
        a build-id, or for a module cheap to decode: under MIN_DEBUG_INFO
        of .debug_info, as for the DWARF index, and under 64 KiB of
        .eh_frame (libc's is 150 KiB)."""
        debug_info = self._debug_elf.section(".debug_info") if self.has_debug_info else None
        eh_frame = self._elf.section(".eh_frame")
        large = (debug_info is not None and debug_info.size >= MIN_DEBUG_INFO) or \
            (eh_frame is not None and eh_frame.size >= _MIN_EH_FRAME)
        return open_index_cache(self.build_id, 1, minimum=0) if large else None

    def unwind_row_at(self, vaddr: int) -> UnwindRow | None:
        """The CFI row (.eh_frame, else .debug_frame) covering `vaddr`, for
        backtraces; None when no FDE covers it."""
        return self._unwind_frames.unwind_row_at(vaddr)

    @functools.cached_property
    def _scope_context(self) -> ScopeContext:
        return ScopeContext(self._dwarf, self._types, self._locations, self._cfa_at, self._decl_file,
                            self._line_at)

    def _cfa_at(self, pc: int):
        try:
            rule = self._frames.cfa_at(pc)
        except CfaUnavailable as exc:
            return UnsupportedLocation(str(exc))
        return rule.register, rule.offset

    def _decl_file(self, cu, index: int) -> str | None:
        return self._dwarf.file_map(cu.cu_offset).get(index)

    def _line_at(self, cu, address: int) -> int | None:
        return covering_line(self._dwarf.line_table(cu.cu_offset), address)

    # --------------------------------------------------------------- ELF

    def require_debug_info(self) -> None:
        if not self.has_debug_info:
            searched = ", ".join(self._debug_searched) or "nowhere: it has no build-id or .gnu_debuglink"
            if self._debug_failure is not None:
                failure = self._debug_failure
                raise DebugInfoError(failure.message, hints=(
                    *failure.hints, f"separate debug info searched: {searched}"))
            raise DebugInfoError(
                f"'{self.path}' has no DWARF debug info "
                "(compile with -g or install the -dbgsym package)",
                hints=(f"separate debug info searched: {searched}",))

    def vaddr_to_file_offset(self, vaddr: int) -> int:
        return self._elf.vaddr_to_file_offset(vaddr)

    def section_of(self, vaddr: int) -> str:
        return self._elf.section_of(vaddr)

    def function_names(self) -> list[str]:
        """Names to offer as candidates: C names, versioned names, and C++
        functions by their qualified names (never mangled)."""
        symbols = self._elf.symbols
        return _base_names(symbols.names(SymbolKind.FUNC)) + \
            symbols.versioned_names(SymbolKind.FUNC) + \
            cpp_qualified_names(symbols, SymbolKind.FUNC) + rust_qualified_names(symbols)

    def global_names(self) -> list[str]:
        symbols = self._elf.symbols
        return _base_names(symbols.names(SymbolKind.OBJECT) + symbols.names(SymbolKind.TLS)) + \
            cpp_qualified_names(symbols, SymbolKind.OBJECT) + rust_static_names(symbols)

    def symbol_address(self, name: str) -> int | None:
        """The link-time address of data object `name` (`_r_debug` in
        ld.so), from the symbol tables alone: no DWARF needed."""
        symbols = self._elf.symbols.named(name, SymbolKind.OBJECT)
        return symbols[0].address if symbols else None

    # ---------------------------------------------------------- functions

    def find_functions(self, name: str) -> list[FunctionSite]:
        """Out-of-line instances of function `name` (statics in several
        CUs and GCC clones such as `name.constprop.0` included). `name` may
        be an alias or a versioned name (`memcpy@GLIBC_2.2.5`): the DWARF
        subprogram at the symbol's address is the function, whatever its
        DW_AT_name (`malloc` is `__libc_malloc`), as for gdb's `break`."""
        self.require_debug_info()
        bare = parse_bare(name)
        symbols = [s for s in self._symbols_named(name, SymbolKind.FUNC) if not s.ifunc]
        # One site per address, as gdb sets one breakpoint location per address.
        found: dict[int, FunctionSite] = {}
        for sym in symbols:
            hit = self._dwarf.function_at(sym.address)
            # An alias may name any subprogram; a clone (f.constprop.0) must be f's.
            if hit is not None and hit[1].ranges[0][0] == sym.address and \
                    (sym.name == bare or hit[1].name == name):
                site = self._function_site(*hit, display_name(sym.name))
                found.setdefault(site.probe_address, site)
        for site in self._cpp_functions(name) + self._rust_functions(name):
            found.setdefault(site.probe_address, site)
        if not found and not self._elf.has_symtab:
            for cu, entry in self._scan_functions(name):
                site = self._function_site(cu, entry)
                found.setdefault(site.probe_address, site)
        for site in self._inlined_sites(name):
            found.setdefault(site.probe_address, site)
        if not found:          # known to the symbol table only: attach, no variables
            found = {s.address: self._symbol_site(s.address, s.name) for s in symbols
                     if s.name == bare}
        if not found:
            self._raise_not_found(name)
        return sorted(found.values(), key=lambda site: site.probe_address)

    def _cpp_functions(self, name: str) -> list[FunctionSite]:
        """Every out-of-line copy of the C++ functions `name` names as
        gdb's `break` does (dwarf/cppsymbols.py): `add` is `geo::add` and
        `other::add`, every overload and template instance; each named as
        gdb lists its location (`geo::add(int, int)`)."""
        sites = []
        for sym, cpp in cpp_symbols(self._elf.symbols, name, SymbolKind.FUNC):
            if sym.ifunc:
                continue
            hit = self._dwarf.function_at(sym.address)
            if hit is not None and hit[1].ranges[0][0] == sym.address:
                sites.append(self._function_site(*hit, cpp.display()))
            else:                 # no DWARF for it: attach, no variables
                sites.append(self._symbol_site(sym.address, cpp.display()))
        return sites

    def _rust_functions(self, name: str) -> list[FunctionSite]:
        """Every out-of-line copy of the Rust functions `name` names
        (dwarf/rustsymbols.py), named by its DWARF path as gdb does."""
        table = self._elf.symbols
        pattern = parse_cpp_name(name) if table.rust_names else None
        if pattern is None:
            return []
        sites = []
        for sym in rust_candidates(table, pattern):
            hit = self._dwarf.function_at(sym.address)
            if hit is not None and (hit[1].ranges[0][0] != sym.address or not is_rust_cu(hit[0])):
                continue
            path = frame_function_name(self._dwarf.die_at(hit[1].die_offset)) if hit else None
            parsed = parse_cpp_name(path) if path else None
            demangled = demangled_path(sym)
            if not any(n is not None and matches(pattern, n) for n in (parsed, demangled)):
                continue
            shown = path or (demangled.qualified if demangled else sym.name)
            sites.append(self._function_site(*hit, shown) if hit else
                         self._symbol_site(sym.address, shown))
        return sites

    def _raise_not_found(self, name: str):
        if self.ifunc_named(name) is not None:
            raise DebugInfoError(f"'{name}' in '{self.path}' is a GNU indirect function (IFUNC): "
                                 "the code that runs is chosen when the process loads")
        raise DebugInfoError(f"no function '{name}' in '{self.path}'",
                             candidates=nearest(name, self.function_names()))

    def function_site_at(self, address: int, wanted: str) -> FunctionSite:
        """The function whose code starts at `address`, named for display
        as the implementation of `wanted` (what an IFUNC resolver chose)."""
        self.require_debug_info()
        name = implementation_name(self._elf.symbols, address, wanted)
        hit = self._dwarf.function_at(address)
        if hit is None or hit[1].ranges[0][0] != address:
            return self._symbol_site(address, name)
        site = self._function_site(*hit)
        reason = site.no_variables and self._assembly_reason(name, hit[0])
        return dataclasses.replace(site, name=name, no_variables=reason)

    def _symbol_site(self, address: int, name: str) -> FunctionSite:
        """A function known only to the symbol table: probed at its first
        instruction, where the arguments are still in their registers."""
        symbol = self._elf.symbols.function_at(address)
        size = symbol.size if symbol is not None and symbol.address == address else 1
        where = self.describe_address(address)
        why = self._split_dwarf_note(address) or "assembly, or a file built without -g"
        return FunctionSite(name=name, low_pc=address, high_pc=address + max(size, 1),
                            probe_address=address, decl_file=where.file, decl_line=where.line,
                            no_variables=f"{name} has no DWARF description ({why})")

    def _split_dwarf_note(self, address: int) -> str | None:
        """Why the DWARF of `address` is not here, when its CU is a
        skeleton (-gsplit-dwarf): the rest is in a .dwo or .dwp file."""
        cu = self._dwarf.cu_for_address(address) if self.has_debug_info else None
        if cu is None:
            return None
        top = self._dwarf.cu_at(cu.cu_offset).get_top_DIE()
        name = next((top.attributes[a].value for a in ("DW_AT_dwo_name", "DW_AT_GNU_dwo_name")
                     if a in top.attributes), None)
        if top.tag != "DW_TAG_skeleton_unit" and name is None:
            return None
        dwo = name.decode(errors="replace") if isinstance(name, bytes) else name
        return (f"its DWARF is split out to {dwo or 'a .dwo file'} (-gsplit-dwarf), which "
                "gs-cgen does not read: rebuild without -gsplit-dwarf")

    def ifunc_named(self, name: str) -> IfuncSymbol | None:
        """The GNU IFUNC `name` names here (its resolver, the GOT slots
        holding its choice, its candidate implementations), else None."""
        if not any(s.ifunc for s in self._elf.symbols.named(name, SymbolKind.FUNC)):
            return None       # the dynamic relocations are read for an IFUNC only
        return ifunc_symbol(self._elf, self._relocations, name)

    def import_slots(self, name: str) -> tuple[int, ...]:
        """GOT slots of this file bound to the dynamic symbol `name`."""
        return import_slots(self._relocations, self._dynamic_names, parse_bare(name))

    def copy_of(self, name: str) -> int | None:
        """The address of this executable's copy of another module's global
        `name` (an R_X86_64_COPY relocation), where the process keeps it."""
        return copy_slot(self._relocations, self._dynamic_names, parse_bare(name))

    def exports_object(self, name: str) -> bool:
        """A global or weak definition of the object `name` here."""
        return any(not s.local for s in self._elf.symbols.named(name, SymbolKind.OBJECT))

    def exports_function(self, name: str) -> bool:
        """A global or weak (not file-local) definition of `name` here: what
        the dynamic linker would bind the name to."""
        return any(not s.local for s in self._elf.symbols.named(name, SymbolKind.FUNC))

    @functools.cached_property
    def _relocations(self):
        return dynamic_relocations(self._elf)

    @functools.cached_property
    def _dynamic_names(self) -> list[str]:
        return dynamic_symbol_names(self._elf)

    @functools.cached_property
    def _plt_stubs(self) -> PltStubs:
        return plt_stubs(self._elf, self._relocations, self._dynamic_names)

    def plt_stub_name(self, vaddr: int) -> str | None:
        """`NAME@plt` for an address in a PLT stub (dwarf/plt.py), as gdb
        names it; None elsewhere."""
        if not in_plt_section(self._elf, vaddr):
            return None
        stub = self._plt_stubs.stub_at(vaddr)
        return stub.name if stub is not None else None

    def inlined_sites(self, name: str) -> list[FunctionSite]:
        """The inlined copies of `name` alone, for a function no symbol
        table of the process names (one that exists only inlined here)."""
        self.require_debug_info()
        return sorted(self._inlined_sites(name), key=lambda site: site.probe_address)

    def _inlined_sites(self, name: str) -> list[FunctionSite]:
        """Inlined instances of `name`, in every CU: gdb sets a location on
        each. Raw searches find them (dwarf/sites.py inlined_instances), so
        no CU's DIE tree is walked, whatever the module's size."""
        sites = [self._inline_site(die, name) for die in inlined_instances(self._dwarf, name)]
        if not sites and self._elf.symbols.mangled_names:
            sites = [dataclasses.replace(self._inline_site(die, name), name=display)
                     for die, display in inlined_cpp_instances(self._dwarf, name)]
        return sites

    def _inline_site(self, die, name: str) -> FunctionSite:
        """gdb 13's location for an inlined copy: the start of its first
        range (BLOCK_ENTRY_PC; DW_AT_entry_pc is not used, and GCC's may lie
        outside the ranges: PyUnicode_New's does), moved past the enclosing
        function's prologue in code without trustworthy location lists."""
        low, high = self._dwarf.die_ranges(die)[0]
        probe = low
        hit = None if self._locations_valid(die.cu) else self._dwarf.function_at(low)
        if hit is not None:
            probe = max(low, self._probe_address(hit[0], *hit[1].ranges[0]))
        origin = origin_having(die, "DW_AT_decl_file")
        line_attr = inherited_attr(die, "DW_AT_decl_line")
        decl_file = origin.attributes["DW_AT_decl_file"].value if origin is not None else None
        # Named as its out-of-line copy is (DW_AT_name), whatever gdb matched.
        return FunctionSite(name=die_name(die) or name, low_pc=low, high_pc=high, probe_address=probe,
                            decl_file=self._decl_file(origin.cu, decl_file) if origin else None,
                            decl_line=line_attr.value if line_attr else None,
                            frame_die=die.offset)

    def _symbols_named(self, name: str, kind: SymbolKind):
        # GCC suffixes clones and function-level statics: f.constprop.0, counter.1
        table = self._elf.symbols
        return table.named(name, kind) + [
            s for n in table.suffixed_names(name) for s in table.named(n, kind)]

    def _scan_functions(self, name: str):
        # Only without .symtab: walks every CU's top-level DIEs.
        for off in self._dwarf.cu_offsets():
            for entry in self._dwarf.functions(off):
                if entry.name == name:
                    yield self._dwarf.cu_at(off), entry

    def _function_site(self, cu, entry: FunctionEntry, name: str | None = None) -> FunctionSite:
        """`name`: how to show it, when not its DW_AT_name (a C++
        function's demangled name)."""
        die = self._dwarf.die_at(entry.die_offset)
        low, high = entry.ranges[0]
        file_attr = inherited_attr(die, "DW_AT_decl_file")
        line_attr = inherited_attr(die, "DW_AT_decl_line")
        probe = self._probe_address(cu, low, high)
        decl_file = self._decl_file(cu, file_attr.value) if file_attr else None
        decl_line = line_attr.value if line_attr else None
        if decl_file is None:           # assembly: where the line table puts it
            where = self.describe_address(probe)
            decl_file, decl_line = where.file, where.line
        return FunctionSite(
            name=name or entry.name or "", low_pc=low, high_pc=high, probe_address=probe,
            decl_file=decl_file, decl_line=decl_line,
            no_variables=self._assembly_reason(entry.name or f"0x{low:x}", cu),
            frame_die=entry.die_offset)

    def _assembly_reason(self, name: str, cu) -> str | None:
        """Why a function of `cu` has no variables, when `cu` is assembly."""
        top = cu.get_top_DIE()
        language = top.attributes.get("DW_AT_language")
        if language is None or language.value != _DW_LANG_MIPS_ASSEMBLER:
            return None
        source = top.attributes.get("DW_AT_name")
        where = f" ({source.value.decode('utf-8', 'replace')})" if source else ""
        return f"{name} is hand-written assembly{where}: DWARF describes no parameters or locals"

    def _probe_address(self, cu, low: int, high: int) -> int:
        if self._locations_valid(cu):
            return low                # no line table needed
        return function_probe_address(self._dwarf.line_table(cu.cu_offset), low, high,
                                      False, self._elf.read(low, 16))

    def _locations_valid(self, cu) -> bool:
        producer = cu.get_top_DIE().attributes.get("DW_AT_producer")
        return is_optimized_gcc(producer.value.decode("utf-8", "replace") if producer else None)

    # -------------------------------------------------------------- lines

    def find_lines(self, file: str, line: int) -> list[LineSite]:
        """Probe sites for `file:line`, as gdb's `break file:line` places
        its locations (dwarf/lines.py)."""
        self.require_debug_info()
        target = self._match_one_file(file)
        cus = self._dwarf.files_by_path()[target]
        chosen = choose_line({off: self._rows_of(off, target) for off in cus}, line)
        if chosen is None:
            raise DebugInfoError(f"no code at or after line {line} of '{target}'")
        sites: list[LineSite] = []
        for off, addresses in chosen.addresses.items():
            sites.extend(self._line_sites(off, target, chosen, addresses))
        return sorted(sites, key=lambda s: s.address)

    def function_source_lines(self, address: int) -> tuple[tuple[tuple[int, int], ...],
                                                          list[tuple[str, int]]]:
        """The ranges of the out-of-line function covering `address`, and
        the (file, line) of every statement row gdb keeps in them
        (dwarf/lines.py), in line order: the lines a `trace FILE:LINE` may
        probe inside it (for `gs-cgen info --lines`)."""
        cu, entry = self._function_hit(address)
        table = self._dwarf.line_table(cu.cu_offset)
        inside = lambda pc: any(lo <= pc < hi for lo, hi in entry.ranges)   # noqa: E731
        lines = {(table.files.get(row.file, str(row.file)), row.line)
                 for row in gdb_visible_rows(table)
                 if row.is_stmt and row.line and not row.end_sequence and inside(row.address)}
        return entry.ranges, sorted(lines, key=lambda fl: (fl[1], fl[0]))

    def _match_one_file(self, file: str) -> str:
        paths = list(self._dwarf.files_by_path())
        matches = match_files(file, paths)
        if not matches:
            pool = {os.path.basename(p) for p in paths} | set(paths)
            raise DebugInfoError(f"no source file '{file}' in '{self.path}'",
                                 candidates=nearest(file, pool))
        if len(matches) > 1:
            raise DebugInfoError(f"source file '{file}' is ambiguous in '{self.path}'",
                                 hints=("give more of the path",), candidates=tuple(sorted(matches)))
        return matches[0]

    def _line_sites(self, cu_offset: int, path: str, chosen: ChosenLine,
                    addresses: tuple[int, ...]) -> list[LineSite]:
        functions = self._dwarf.functions(cu_offset)
        cu = self._dwarf.cu_at(cu_offset)
        sites = []
        for address in lowest_per_block(addresses, lambda pc: self._block_at(functions, pc)):
            entry = _function_covering(functions, address)
            site_line, frame_die = chosen.line, None
            if entry is not None:
                # gdb's skip_prologue_sal: an address before the end of the
                # prologue moves there, as for `break f`, and stops in the
                # function's frame (dwarf/scopes.py).
                probe = self._probe_address(cu, *entry.ranges[0])
                if address < probe:
                    address, frame_die = probe, entry.die_offset
                    site_line = line_at(self._dwarf.line_table(cu_offset), probe) or chosen.line
            sites.append(LineSite(path, site_line, address, entry.name if entry else None,
                                  frame_die, chosen.statements))
        return sites

    def _rows_of(self, cu_offset: int, path: str) -> FileRows:
        key = (cu_offset, path)
        if key not in self._file_rows:
            self._file_rows[key] = cached_file_rows(self._dwarf, cu_offset, path)
        return self._file_rows[key]

    def _block_at(self, functions, pc: int):
        entry = _function_covering(functions, pc)
        if entry is None:
            return None
        return gdb_block_at(self._dwarf, self._dwarf.die_at(entry.die_offset), pc)

    # ---------------------------------------------------------- variables

    def variables_at(self, pc: int, frame_die: int | None = None) -> list[VisibleVariable]:
        """Parameters and locals in scope at `pc` in the frame gdb selects
        there (dwarf/scopes.py): the innermost, or, for a probe on a
        function, that function's copy `frame_die` (FunctionSite.frame_die).
        Innermost block first, each located at `pc`."""
        return list(self.frame_at(pc, frame_die).variables)

    def frame_at(self, pc: int, frame_die: int | None = None) -> FrameScope:
        """variables_at, with the frame they belong to and the frames
        around it (for `gs-cgen info`)."""
        hit = self._function_hit(pc)
        die = self._dwarf.die_at(hit[1].die_offset)
        frame = frame_scope(self._scope_context, die, pc, frame_die)
        return dataclasses.replace(frame, variables=tuple(self._resolved(hit, pc, frame.variables)),
                                   outer=tuple(self._resolved(hit, pc, frame.outer)))

    def frame_variables_at(self, pc: int, frame_die: int) -> list[VisibleVariable]:
        """The variables of the frame whose DIE (function or inlined
        instance) is `frame_die`, at `pc`: one frame of a backtrace."""
        hit = self._function_hit(pc)
        die = self._dwarf.die_at(hit[1].die_offset)
        frame = frame_scope(self._scope_context, die, pc, frame_die, exact=True)
        return list(self._resolved(hit, pc, frame.variables))

    def variable_at(self, die_offset: int, pc: int) -> VisibleVariable | None:
        """The parameter or local DIE at `die_offset`, located at `pc` exactly
        as variables_at locates it — for tools and tests that walk DWARF
        rather than scopes. None for a DIE that is not a named variable."""
        hit = self._function_hit(pc)
        function = self._dwarf.die_at(hit[1].die_offset)
        found = variable_at(self._scope_context, function, self._dwarf.die_at(die_offset), pc)
        return None if found is None else self._resolved(hit, pc, [found])[0]

    def _function_hit(self, pc: int):
        self.require_debug_info()
        hit = self._dwarf.function_at(pc)
        if hit is None:
            split = self._split_dwarf_note(pc)
            raise DebugInfoError(f"no function with debug info covers address 0x{pc:x}"
                                 + (f": {split}" if split else ""))
        return hit

    def array_bound(self, bound_die: int, pc: int) -> ArrayBound | None:
        """How the VLA dimension of subrange DIE `bound_die`
        (ArrayType.bound_die) is sized at `pc`, located as variables_at
        locates variables there; None when its form is not one read here."""
        hit = self._function_hit(pc)
        function = self._dwarf.die_at(hit[1].die_offset)
        bound = array_bound(self._scope_context, function, self._dwarf.die_at(bound_die), pc)
        if bound is None:
            return None
        location = self._location_resolver(hit, pc).resolve(bound.location)
        if location is not bound.location:
            bound = dataclasses.replace(bound, location=location)
        return bound

    def _resolved(self, hit, pc: int, found) -> list[VisibleVariable]:
        """What scopes.py cannot decide alone, decided with the ELF file
        (dwarf/resolve.py)."""
        resolver = self._location_resolver(hit, pc)
        out = []
        for variable in found:
            location = resolver.resolve(variable.location)
            if isinstance(location, ThreadLocal):
                location = self._thread_local(location)
            out.append(variable if location is variable.location
                       else dataclasses.replace(variable, location=location))
        return out

    def _location_resolver(self, hit, pc: int) -> LocationResolver:
        function = hit[1]
        die = self._dwarf.die_at(function.die_offset)
        return LocationResolver(ResolveContext(
            elf=self._elf, pc=pc, ranges=function.ranges, cu_offset=die.cu.cu_offset,
            call_sites=lambda: calls_to(self._dwarf, die), cfa=lambda: self._cfa_at(pc),
            saved_registers=lambda: self._frames.saved_registers_at(pc),
            locate_die=lambda offset: locate_die(self._scope_context, die,
                                                 self._dwarf.die_at(offset), pc)))

    def _thread_local(self, location: ThreadLocal) -> VariableLocation:
        # ld leaves the offset of a discarded object too: it must be in PT_TLS.
        tls = self.tls_segment
        if tls is None or location.offset >= tls.memsz:
            size = "none" if tls is None else f"0x{tls.memsz:x} bytes"
            return OptimizedOut(f"TLS offset 0x{location.offset:x} is outside the module's TLS "
                                f"block ({size}; discarded by the linker)")
        return location

    def find_global(self, name: str) -> GlobalVariable | None:
        """A global, file-scope static or function-level static, or one of
        those declared __thread / _Thread_local."""
        self.require_debug_info()
        for sym in self._symbols_named(name, SymbolKind.OBJECT):
            die = self._aliased_variable_die((b"\x03" + struct.pack("<Q", sym.address),),
                                             name, sym.address, SymbolKind.OBJECT)
            if die is not None:
                glob = self._global(die, name, sym.address)
                slots = () if sym.local else self.import_slots(name)
                return dataclasses.replace(glob, got_slot=slots[0]) if slots else glob
        for sym in self._symbols_named(name, SymbolKind.TLS) if self.tls_segment else ():
            # st_value of an STT_TLS symbol is its offset in the TLS block.
            die = self._aliased_variable_die(tls_expression_bytes(sym.address), name, sym.address,
                                             SymbolKind.TLS)
            if die is not None:
                return self._global(die, name, sym.address, thread_local=True)
        return self._cpp_global(name) or self._rust_global(name) or self._constant_global(name)

    def _aliased_variable_die(self, needles, name: str, address: int, kind: SymbolKind):
        """The variable DIE at `address` (searched for by `needles`) called
        `name`, else by another symbol of that address: DWARF names an
        object once, and its aliases (__libc_errno for errno,
        program_invocation_short_name for __progname) are symbols only, as
        gdb's `print` finds them."""
        for names in ({name}, self._elf.symbols.names_at(address, kind) - {name}):
            for needle in needles if names else ():
                die = self._variable_die_at(needle, names)
                if die is not None:
                    return die
        return None

    def _cpp_global(self, name: str) -> GlobalVariable | None:
        """A C++ object by its qualified name (`geo::counter`,
        `geo::Shape::instances`) or by its trailing components
        (`counter`, `Shape::instances`), as GhostScope looks them up; one
        that names several objects is an error listing them. Its `name`
        is its symbol's (mangled) name: what linkage lookups use."""
        hits = cpp_symbols(self._elf.symbols, name, SymbolKind.OBJECT)
        exact = [(sym, cpp) for sym, cpp in hits if cpp.qualified == normalize(name)]
        objects = {sym.address: (sym, cpp) for sym, cpp in exact or hits}
        if len(objects) > 1:
            names = sorted(cpp.qualified for _, cpp in objects.values())
            raise DebugInfoError(f"'{name}' names {len(names)} C++ objects in '{self.path}'",
                                 hints=("qualify the name",), candidates=tuple(names))
        for sym, cpp in objects.values():
            die = self._variable_die_at(b"\x03" + struct.pack("<Q", sym.address), {cpp.leaf})
            if die is not None:
                glob = self._global(die, sym.name, sym.address)
                slots = () if sym.local else self.import_slots(sym.name)
                return dataclasses.replace(glob, got_slot=slots[0]) if slots else glob
        return None

    def _rust_global(self, name: str) -> GlobalVariable | None:
        """A Rust static by its path or trailing components (`G_COUNTER`,
        `config::LIMIT`), as gdb's `print` finds it from the crate's code;
        several statics of that name are an error listing their paths."""
        table = self._elf.symbols
        pattern = parse_cpp_name(name) if table.rust_names else None
        statics = rust_statics(table, pattern) if pattern is not None else {}
        if len(statics) > 1:
            names = sorted(path.qualified for _, path in statics.values())
            raise DebugInfoError(f"'{name}' names {len(names)} Rust statics in '{self.path}'",
                                 hints=("write its path",), candidates=tuple(names))
        for sym, path in statics.values():
            die = self._variable_die_at(b"\x03" + struct.pack("<Q", sym.address), {path.leaf})
            if die is not None:
                return self._global(die, sym.name, sym.address)
        return None

    def _constant_global(self, name: str) -> GlobalVariable | None:
        """A file-scope object GCC keeps only as DW_AT_const_value (a
        `static const char s[] = "..."` folded into its uses at -O1 and
        up): no symbol, no storage, but gdb prints its value."""
        for die in self._dwarf.dies_named(name, ("DW_TAG_variable",), ("DW_AT_const_value",),
                                          limit=16):
            if die.get_parent() is None or die.get_parent().tag != "DW_TAG_compile_unit":
                continue
            value = die.attributes["DW_AT_const_value"].value
            glob = self._global(die, name, 0)
            size = type_size(glob.type)
            data = value.to_bytes(max(size, 1), "little", signed=value < 0) \
                if isinstance(value, int) else bytes(value)
            return dataclasses.replace(glob, section="const", constant=data)
        return None

    def _variable_die_at(self, needle: bytes, names: set[str]):
        # DW_AT_location [DW_OP_addr <address>] (DWARF 5 section 2.5.1.1),
        # or the TLS shape (dwarf/tls.py): search the raw bytes, then parse
        # only the CU holding the hit.
        for pos in self._dwarf.find_bytes(needle, _SEARCH_LIMIT):
            die = self._die_enclosing(pos)
            if die is not None and die.tag == "DW_TAG_variable" and die_name(die) in names:
                return die
        return None

    def _die_enclosing(self, pos: int):
        """The DIE whose attribute bytes include .debug_info offset `pos`."""
        parent = self._dwarf.cu_containing(pos).get_top_DIE()
        while parent.has_children:
            last = None
            for child in parent.iter_children():
                if child.offset > pos:
                    break
                last = child
            if last is None:
                return None
            if pos < last.offset + last.size:
                return last
            parent = last
        return None

    def _global(self, die, name: str, address: int, thread_local: bool = False) -> GlobalVariable:
        typed = origin_having(die, "DW_AT_type") or die
        file_attr = inherited_attr(die, "DW_AT_decl_file")
        line_attr = inherited_attr(die, "DW_AT_decl_line")
        return GlobalVariable(
            name=name, type=self._types.type_of(typed), address=address,
            section="tls" if thread_local else self.section_of(address) if address else "const",
            decl_file=self._decl_file(die.cu, file_attr.value) if file_attr else None,
            decl_line=line_attr.value if line_attr else None, thread_local=thread_local)

    def struct_member_offsets(self, name: str, members: tuple[str, ...]) -> dict[str, int] | None:
        """Byte offsets of `members` in the definition of `struct name`
        that has them all (glibc's ld.so has two `struct link_map`: the
        public one of <link.h> and its own, longer one); None if none has."""
        self.require_debug_info()
        for tag, offset, declaration in self._dwarf.type_entries(name):
            if tag == "DW_TAG_structure_type" and not declaration:
                found = _member_offsets(self._dwarf.die_at(offset), members)
                if found is not None:
                    return found
        return None

    # -------------------------------------------------------------- types

    def has_function_symbol(self, name: str) -> bool:
        """Cheap pre-check (symbol tables only) before find_functions."""
        return bool(self._symbols_named(name, SymbolKind.FUNC)) or \
            bool(cpp_symbols(self._elf.symbols, name, SymbolKind.FUNC))

    def function_return(self, frame_die: int | None) -> tuple[bool, CType | None]:
        """For a function copy's DIE (FunctionSite.frame_die): whether it
        is an inlined copy (it has no return of its own to probe), and its
        DWARF return type (void when it has none; None: no DWARF)."""
        if frame_die is None or not self.has_debug_info:
            return False, None
        die = self._dwarf.die_at(frame_die)
        typed = origin_having(die, "DW_AT_type") or die
        return die.tag == "DW_TAG_inlined_subroutine", self._types.type_of(typed)

    def call_frame_rule(self, pc: int):
        """CFA at `pc` as (DWARF register name, offset), from the CFI; an
        UnsupportedLocation with the reason when there is no plain rule."""
        rule = self._cfa_at(pc)
        return rule if isinstance(rule, UnsupportedLocation) else (register_name(rule[0]), rule[1])

    def uprobe_handling(self, vaddr: int) -> UprobeHandling:
        """Whether a uprobe at instruction `vaddr` is emulated or
        single-stepped by the kernel (dwarf/uprobe_insn.py)."""
        return uprobe_handling(self._elf.read(vaddr, 15))

    def uprobe_refusal(self, vaddr: int) -> str | None:
        """Why the kernel would refuse a uprobe on instruction `vaddr`
        (dwarf/uprobe_insn.py), None when it takes one."""
        return uprobe_refusal(self._elf.read(vaddr, 15))

    def probeable_successor(self, vaddr: int) -> tuple[int, str] | None:
        """The next instruction after refused `vaddr` that takes a uprobe,
        reached in a straight line, and what lies between (uprobe_insn.py)."""
        return probeable_successor(self._elf.read(vaddr, 64), vaddr)

    def writes_only_stack(self, low: int, high: int) -> bool:
        """The instructions in [low, high) write only their stack frame and
        call nothing (a prologue that keeps every global as it was)."""
        return writes_only_stack(self._elf.read(low, high - low), low)

    def check_code_address(self, vaddr: int) -> str:
        """The function containing instruction `vaddr`; DebugInfoError when it
        is not in code or not at an instruction boundary."""
        return check_instruction_boundary(self._elf, vaddr, self._plt_stub_symbol(vaddr))

    def _plt_stub_symbol(self, vaddr: int):
        """The PLT stub covering `vaddr` as a symbol (code.py decodes from
        its start), None outside the PLT."""
        if self._elf.symbols.function_at(vaddr) is not None or not in_plt_section(self._elf, vaddr):
            return None
        stub = self._plt_stubs.stub_at(vaddr)
        if stub is None:
            return None
        return Symbol(stub.name, stub.address, stub.size, SymbolKind.FUNC, True, None)

    def describe_address(self, vaddr: int) -> CodeLocation:
        """Function and source line of an instruction (gdb's `info symbol`
        + `info line`). The function is named as DWARF names it
        (`__libc_malloc`, not its alias `malloc`), as gdb's `bt`."""
        symbol = self._elf.symbols.function_at(vaddr)
        function = symbol.name if symbol else self.plt_stub_name(vaddr)
        if not self.has_debug_info:
            return CodeLocation(function, None, None)
        described = self._dwarf.function_at(vaddr)
        if described is not None and described[1].name:
            function = described[1].name
        return CodeLocation(function, *self.line_at(vaddr))

    def probe_line(self, vaddr: int) -> tuple[str | None, int | None]:
        """line_at for a probe site, kept in the index cache by build-id:
        the CU's whole line table, decoded or loaded, cost ~20 ms of a warm
        libpython `info function` for the one row a site shows."""
        if not self.has_debug_info:
            return None, None
        name = f"probe-line-{vaddr:x}"
        found = self._dwarf.cached(name, _file_line_from_plain)
        if found is None:
            found = self.line_at(vaddr)
            self._dwarf.store(name, list(found))
        return found

    def line_at(self, vaddr: int) -> tuple[str | None, int | None]:
        """(file, line) of an instruction, as gdb's `info line *ADDR` and
        `break` report it: the line-table row with the largest address not
        above `vaddr` in the same sequence; (None, None) where no row is."""
        cu = self._dwarf.cu_for_address(vaddr) if self.has_debug_info else None
        if cu is None:
            return None, None
        table = self._dwarf.line_table(cu.cu_offset)
        best = None
        for row in table.rows:
            if row.address > vaddr:
                continue
            if row.end_sequence:
                if best is not None and best.address <= row.address <= vaddr:
                    best = None        # that sequence ended before vaddr
                continue
            # gdb's find_pc_sect_line: the last row at the address, but an
            # is_stmt one there over a later non-statement row.
            if row.line and (best is None or row.address > best.address or
                             (row.address == best.address and (row.is_stmt or not best.is_stmt))):
                best = row
        if best is None:
            return None, None
        return table.files.get(best.file), best.line

    def tail_call_return(self, return_pc: int, callee_pc: int) -> int | None:
        """Where gdb shows a frame between a caller returning to `return_pc`
        and a frame at `callee_pc` that the function it called reached by a
        tail call (dwarf/callsites.py tail_call_return); None when none."""
        if not self.has_debug_info:
            return None
        key = (return_pc, callee_pc)
        if key not in self._tail_calls:
            try:
                callee = self._dwarf.function_at(callee_pc)
                found = tail_call_return(self._dwarf, return_pc, callee[1]) if callee else None
            except (ELFError, DWARFError, KeyError, ValueError, IndexError):
                found = None             # DWARF this reader cannot follow: no such frame
            self._tail_calls[key] = found
        return self._tail_calls[key]

    def source_frames_at(self, vaddr: int, frame_die: int | None = None,
                         skip_at_entry: bool = False) -> list[SourceFrame]:
        """The frames gdb's `bt` shows for one machine frame at `vaddr`,
        innermost first: inlined calls, then the function (dwarf/inline.py).
        Without DWARF for `vaddr`: one frame named by the symbol table."""
        where = self.describe_address(vaddr)
        hit = self._dwarf.function_at(vaddr) if self.has_debug_info else None
        if hit is None:
            return [SourceFrame(where.function, where.file, where.line, False)]
        cu = hit[0]

        def call_file(die):
            attr = die.attributes.get("DW_AT_call_file")
            return self._decl_file(cu, attr.value) if attr is not None else None

        frames = source_frames(self._dwarf, self._dwarf.die_at(hit[1].die_offset), vaddr,
                               (where.file, where.line), call_file, frame_die, skip_at_entry)
        # The out-of-line function is named as describe_address names it
        # (C: the DWARF name, not an alias); C++ by its qualified name.
        qualified = frames[-1].function != die_name(self._dwarf.die_at(hit[1].die_offset))
        outer = frames[-1] if qualified else \
            dataclasses.replace(frames[-1], function=where.function or frames[-1].function)
        return [*frames[:-1], outer]

    def find_type(self, name: str) -> CType | None:
        """A named type, for tools: `int`, `struct point`, `point_t`,
        `struct point *` (casts parse their type names in script/typename.py
        and use find_named_type)."""
        self.require_debug_info()
        base = " ".join(name.rstrip(" *").split())
        keyword, _, rest = base.partition(" ")
        if keyword in _TAG_KEYWORDS and rest:
            ctype = self.find_named_type(keyword, rest, False)
        else:
            ctype = self.find_named_type(None, base, base in _BASE_SPELLINGS)
        for _ in range(name.count("*") if ctype is not None else 0):
            ctype = PointerType(lambda target=ctype: target)
        return ctype

    def find_named_type(self, keyword: str | None, name: str, is_base: bool,
                        near_pc: int | None = None) -> CType | None:
        """The file-scope type `keyword name` (`struct` / `union` / `enum` /
        `class`), or with no keyword a typedef, base type or tag named
        `name` (in that order, as C's ordinary identifiers come before
        tags); `is_base`: `name` is a canonical C base spelling ("unsigned
        long"), matched against the names compilers give it. A definition
        in the compile unit holding `near_pc` comes first (as gdb looks in
        the current unit first), then the first one in the module, then a
        declaration. None when the module names no such type."""
        self.require_debug_info()
        if is_base:
            names, tag_groups = _BASE_SPELLINGS.get(name, (name,)), (("DW_TAG_base_type",),)
        elif keyword is not None:
            names, tag_groups = (name,), (_TAG_KEYWORDS[keyword],)
        else:
            names, tag_groups = (name,), _BARE_NAME_TAGS
        entries = [e for n in names for e in self._dwarf.type_entries(n)]
        for tags in tag_groups:
            chosen = self._choose_type_entry([e for e in entries if e[0] in tags], near_pc)
            if chosen is not None:
                return self._types.build(self._dwarf.die_at(chosen))
        return self._rust_type(name, near_pc) if self._elf.symbols.rust_names else None

    def _rust_type(self, name: str, near_pc: int | None) -> CType | None:
        """A Rust type, nested in its module's namespace, by its path or
        trailing components (`Pair`, `orders::Order`), one in the compile
        unit holding `near_pc` first."""
        pattern = parse_cpp_name(name)
        if pattern is None:
            return None
        found = []
        for die in self._dwarf.dies_named(pattern.leaf, TYPE_TAGS, limit=64):
            if not is_rust_cu(die.cu) or "DW_AT_declaration" in die.attributes:
                continue
            ctype = self._types.build(die)
            scope = getattr(ctype, "scope", "")
            path = parse_cpp_name(f"{scope}::{pattern.leaf}" if scope else pattern.leaf)
            if path is not None and matches(pattern, path):
                found.append((die.cu.cu_offset, ctype))
        cu = self._dwarf.cu_for_address(near_pc) if near_pc is not None and found else None
        local = [t for offset, t in found if cu is not None and offset == cu.cu_offset]
        return (local or [t for _, t in found] or [None])[0]

    def _choose_type_entry(self, entries, near_pc: int | None) -> int | None:
        definitions = [off for _, off, declaration in entries if not declaration]
        if near_pc is not None and definitions:
            cu = self._dwarf.cu_for_address(near_pc)
            if cu is not None:
                start, end = self._dwarf.cu_range(cu.cu_offset)
                local = [off for off in definitions if start <= off < end]
                if local:
                    return local[0]
        if definitions:
            return definitions[0]
        return entries[0][1] if entries else None

    def find_enumerator(self, name: str, near_pc: int | None = None):
        """(EnumType, value) of the enumeration constant `name` (C's
        ordinary identifiers: `if s == ACTIVE`), one in the compile unit
        holding `near_pc` first, as gdb looks in the current unit first."""
        self.require_debug_info()
        dies = self._dwarf.dies_named(name, ("DW_TAG_enumerator",), ("DW_AT_const_value",))
        if not dies:
            return None
        cu = self._dwarf.cu_for_address(near_pc) if near_pc is not None else None
        local = [d for d in dies if cu is not None and d.cu.cu_offset == cu.cu_offset]
        die = (local or dies)[0]
        enumeration = _enumeration_holding(die)
        if enumeration is None:
            return None
        enum = self._types.build(enumeration)
        value = dict(enum.enumerators).get(name)
        return None if value is None else (enum, value)

    def type_names(self) -> list[str]:
        """Names of the file-scope types, for an unknown name's candidates."""
        self.require_debug_info()
        return list(self._dwarf.type_names())


def _enumeration_holding(enumerator):
    """The DW_TAG_enumeration_type an enumerator DIE found by a raw search
    belongs to: its enumerators are its first children, so it is the last
    enumeration type before the enumerator in its CU (a DIE parsed on its
    own has no parent link in pyelftools)."""
    holder = None
    try:
        for die in enumerator.cu.iter_DIEs():
            if die.offset == enumerator.offset:
                return holder
            if die.tag == "DW_TAG_enumeration_type":
                holder = die
    except (ValueError, KeyError, IndexError):
        return None
    return None


# What GNU as records for a .S file (DWARF 5 section 7.12 leaves assembly
# languages to vendors; gas, gdb and LLVM use the MIPS value).
_DW_LANG_MIPS_ASSEMBLER = 0x8001
def _member_offsets(struct_die, members: tuple[str, ...]) -> dict[str, int] | None:
    found = {}
    for child in struct_die.iter_children():
        location = child.attributes.get("DW_AT_data_member_location")
        name = die_name(child)
        if child.tag == "DW_TAG_member" and name in members and location is not None and \
                isinstance(location.value, int):
            found[name] = location.value
    return found if len(found) == len(members) else None


def _function_covering(functions, address: int) -> FunctionEntry | None:
    for entry in functions:
        if any(lo <= address < hi for lo, hi in entry.ranges):
            return entry
    return None


def parse_bare(name: str) -> str:
    """`memcpy` of `memcpy@@GLIBC_2.14`."""
    return parse_spelling(name).name


def _base_names(names: list[str]) -> list[str]:
    # Mangled C++ names are offered by their demangled names instead.
    return sorted({n.split(".", 1)[0] for n in names
                   if n and not n.startswith((".", "_Z"))})
