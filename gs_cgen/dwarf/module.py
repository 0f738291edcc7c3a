"""The facade the planner codes against: one ModuleDebugInfo per ELF file.

Every lookup starts from the cheapest index that can answer it (symbol
table, .debug_aranges, line-program headers, raw byte search) and parses
only the one CU it leads to. See DESIGN.md "Speed".

The facade holds what every look-up shares (the ELF image, the DWARF
index, the type builder, the CFI) and answers the ELF questions itself;
each kind of look-up by name or address is a part of its own, created on
first use: functions (function_lookup.py), globals (global_lookup.py),
types (type_lookup.py), source lines (line_lookup.py) and the variables
at a PC (variable_lookup.py).
"""
from __future__ import annotations

import dataclasses
import functools
import os

from elftools.common.exceptions import DWARFError, ELFError

from gs_cgen.indexcache import MIN_DEBUG_INFO, open_index_cache
from gs_cgen.dwarf.location.callsites import tail_call_return
from gs_cgen.dwarf.cfi import CallFrames, CfaUnavailable, UnwindRow
from gs_cgen.elf.code import check_instruction_boundary
from gs_cgen.dwarf.debugfile import find_debug_info
from gs_cgen.elf.image import ElfImage, Symbol, SymbolKind, dwarf_section_read
from gs_cgen.dwarf.function_lookup import FunctionLookup, parse_bare
from gs_cgen.dwarf.global_lookup import GlobalLookup
from gs_cgen.elf.ifunc import ifunc_symbol
from gs_cgen.dwarf.index import DwarfIndex, die_name, origin_having
from gs_cgen.dwarf.inline import SourceFrame, source_frames
from gs_cgen.dwarf.line_lookup import LineLookup
from gs_cgen.dwarf.location.reader import LocationReader
from gs_cgen.dwarf.model import (ArrayBound, CodeLocation, FrameScope, FunctionSite, GlobalVariable,
                                 IfuncSymbol, LineSite, LoadSegment, TlsSegment,
                                 UnsupportedLocation, VisibleVariable, register_name)
from gs_cgen.elf.plt import PltStubs, in_plt_section, plt_stubs
from gs_cgen.elf.relocs import copy_slot, dynamic_relocations, dynamic_symbol_names, import_slots
from gs_cgen.dwarf.scopes import ScopeContext
from gs_cgen.dwarf.sites import covering_line
from gs_cgen.dwarf.type_lookup import TypeLookup
from gs_cgen.dwarf.typebuild import TypeBuilder
from gs_cgen.dwarf.types import CType
from gs_cgen.elf.uprobe_insn import (UprobeHandling, probeable_successor, uprobe_handling,
                                      uprobe_refusal, writes_only_stack)
from gs_cgen.dwarf.variable_lookup import VariableLookup
from gs_cgen.errors import DebugInfoError

_MIN_EH_FRAME = 64 * 1024


def _require_x86_64(elf: ElfImage, name: str) -> None:
    # Registers, calling convention and pt_regs are x86_64's throughout.
    if elf.machine != "EM_X86_64" or elf.elfclass != 64:
        machine = str(elf.machine).removeprefix("EM_")
        elf.close()
        raise DebugInfoError(f"'{name}' is {elf.elfclass}-bit {machine} code: unsupported "
                             "architecture (gs-cgen traces x86_64 processes only)")


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
        """The on-disk cache by build-id (indexcache.py) for what tools
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

    def symbol_address(self, name: str) -> int | None:
        """The link-time address of data object `name` (`_r_debug` in
        ld.so), from the symbol tables alone: no DWARF needed."""
        symbols = self._elf.symbols.named(name, SymbolKind.OBJECT)
        return symbols[0].address if symbols else None

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
        """`NAME@plt` for an address in a PLT stub (elf/plt.py), as gdb
        names it; None elsewhere."""
        if not in_plt_section(self._elf, vaddr):
            return None
        stub = self._plt_stubs.stub_at(vaddr)
        return stub.name if stub is not None else None

    # ---------------------------------------------------------- the parts

    @functools.cached_property
    def _functions(self) -> FunctionLookup:
        return FunctionLookup(self)

    @functools.cached_property
    def _globals(self) -> GlobalLookup:
        return GlobalLookup(self)

    @functools.cached_property
    def _type_lookup(self) -> TypeLookup:
        return TypeLookup(self)

    @functools.cached_property
    def _lines(self) -> LineLookup:
        return LineLookup(self)

    @functools.cached_property
    def _variables(self) -> VariableLookup:
        return VariableLookup(self)

    # ---------------------------------------------------------- functions

    def function_names(self) -> list[str]:
        """Names to offer as candidates: C names, versioned names, and C++
        functions by their qualified names (never mangled)."""
        return self._functions.names()

    def find_functions(self, name: str) -> list[FunctionSite]:
        """Out-of-line instances of function `name` (statics in several
        CUs and GCC clones such as `name.constprop.0` included), then its
        inlined copies (dwarf/function_lookup.py). `name` may be an alias
        or a versioned name (`memcpy@GLIBC_2.2.5`): the DWARF subprogram at
        the symbol's address is the function, whatever its DW_AT_name
        (`malloc` is `__libc_malloc`), as for gdb's `break`."""
        return self._functions.find(name)

    def function_site_at(self, address: int, wanted: str) -> FunctionSite:
        """The function whose code starts at `address`, named for display
        as the implementation of `wanted` (what an IFUNC resolver chose)."""
        return self._functions.site_at(address, wanted)

    def inlined_sites(self, name: str) -> list[FunctionSite]:
        """The inlined copies of `name` alone, for a function no symbol
        table of the process names (one that exists only inlined here)."""
        self.require_debug_info()
        return sorted(self._functions.inlined_sites(name), key=lambda site: site.probe_address)

    def has_function_symbol(self, name: str) -> bool:
        """Cheap pre-check (symbol tables only) before find_functions."""
        return self._functions.has_symbol(name)

    def function_return(self, frame_die: int | None) -> tuple[bool, CType | None]:
        """For a function copy's DIE (FunctionSite.frame_die): whether it
        is an inlined copy (it has no return of its own to probe), and its
        DWARF return type (void when it has none; None: no DWARF)."""
        if frame_die is None or not self.has_debug_info:
            return False, None
        die = self._dwarf.die_at(frame_die)
        typed = origin_having(die, "DW_AT_type") or die
        return die.tag == "DW_TAG_inlined_subroutine", self._types.type_of(typed)

    # -------------------------------------------------------------- lines

    def find_lines(self, file: str, line: int) -> list[LineSite]:
        """Probe sites for `file:line`, as gdb's `break file:line` places
        its locations (dwarf/lines.py)."""
        self.require_debug_info()
        return self._lines.find_lines(file, line)

    def function_source_lines(self, address: int) -> tuple[tuple[tuple[int, int], ...],
                                                          list[tuple[str, int]]]:
        """The ranges of the out-of-line function covering `address`, and
        the (file, line) of every statement row gdb keeps in them
        (dwarf/lines.py), in line order: the lines a `trace FILE:LINE` may
        probe inside it (for `gs-cgen info --lines`)."""
        cu, entry = self._variables.function_hit(address)
        return entry.ranges, self._lines.function_source_lines(cu, entry)

    def probe_line(self, vaddr: int) -> tuple[str | None, int | None]:
        """line_at for a probe site, kept in the index cache by build-id."""
        return self._lines.probe_line(vaddr) if self.has_debug_info else (None, None)

    def line_at(self, vaddr: int) -> tuple[str | None, int | None]:
        """(file, line) of an instruction, as gdb's `info line *ADDR` and
        `break` report it: the line-table row with the largest address not
        above `vaddr` in the same sequence; (None, None) where no row is."""
        return self._lines.line_at(vaddr) if self.has_debug_info else (None, None)

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
        return self._variables.frame_at(pc, frame_die)

    def frame_variables_at(self, pc: int, frame_die: int) -> list[VisibleVariable]:
        """The variables of the frame whose DIE (function or inlined
        instance) is `frame_die`, at `pc`: one frame of a backtrace."""
        return self._variables.frame_variables_at(pc, frame_die)

    def variable_at(self, die_offset: int, pc: int) -> VisibleVariable | None:
        """The parameter or local DIE at `die_offset`, located at `pc` exactly
        as variables_at locates it — for tools and tests that walk DWARF
        rather than scopes. None for a DIE that is not a named variable."""
        return self._variables.variable_at(die_offset, pc)

    def array_bound(self, bound_die: int, pc: int) -> ArrayBound | None:
        """How the VLA dimension of subrange DIE `bound_die`
        (ArrayType.bound_die) is sized at `pc`, located as variables_at
        locates variables there; None when its form is not one read here."""
        return self._variables.array_bound(bound_die, pc)

    # ------------------------------------------------------------ globals

    def global_names(self) -> list[str]:
        return self._globals.names()

    def find_global(self, name: str) -> GlobalVariable | None:
        """A global, file-scope static or function-level static, or one of
        those declared __thread / _Thread_local; a C++ object or Rust
        static by its path (dwarf/global_lookup.py)."""
        return self._globals.find(name)

    def struct_member_offsets(self, name: str, members: tuple[str, ...]) -> dict[str, int] | None:
        """Byte offsets of `members` in the definition of `struct name`
        that has them all (glibc's ld.so has two `struct link_map`: the
        public one of <link.h> and its own, longer one); None if none has."""
        self.require_debug_info()
        return self._type_lookup.struct_member_offsets(name, members)

    # -------------------------------------------------------------- types

    def find_type(self, name: str) -> CType | None:
        """A named type, for tools: `int`, `struct point`, `point_t`,
        `struct point *` (casts parse their type names in script/typename.py
        and use find_named_type)."""
        self.require_debug_info()
        return self._type_lookup.find_type(name)

    def find_named_type(self, keyword: str | None, name: str, is_base: bool,
                        near_pc: int | None = None) -> CType | None:
        """The file-scope type `keyword name` (`struct` / `union` / `enum` /
        `class`), or with no keyword a typedef, base type or tag named
        `name` (in that order, as C's ordinary identifiers come before
        tags); `is_base`: `name` is a canonical C base spelling ("unsigned
        long"), matched against the names compilers give it. A definition
        in the compile unit holding `near_pc` comes first (as gdb looks in
        the current unit first), then the first one in the module, then a
        declaration; then a Rust type by its path. None when the module
        names no such type."""
        self.require_debug_info()
        return self._type_lookup.find_named_type(keyword, name, is_base, near_pc)

    def find_enumerator(self, name: str, near_pc: int | None = None):
        """(EnumType, value) of the enumeration constant `name` (C's
        ordinary identifiers: `if s == ACTIVE`), one in the compile unit
        holding `near_pc` first, as gdb looks in the current unit first."""
        self.require_debug_info()
        return self._type_lookup.find_enumerator(name, near_pc)

    def type_names(self) -> list[str]:
        """Names of the file-scope types, for an unknown name's candidates."""
        self.require_debug_info()
        return list(self._dwarf.type_names())

    # ------------------------------------------------- code and addresses

    def call_frame_rule(self, pc: int):
        """CFA at `pc` as (DWARF register name, offset), from the CFI; an
        UnsupportedLocation with the reason when there is no plain rule."""
        rule = self._cfa_at(pc)
        return rule if isinstance(rule, UnsupportedLocation) else (register_name(rule[0]), rule[1])

    def uprobe_handling(self, vaddr: int) -> UprobeHandling:
        """Whether a uprobe at instruction `vaddr` is emulated or
        single-stepped by the kernel (elf/uprobe_insn.py)."""
        return uprobe_handling(self._elf.read(vaddr, 15))

    def uprobe_refusal(self, vaddr: int) -> str | None:
        """Why the kernel would refuse a uprobe on instruction `vaddr`
        (elf/uprobe_insn.py), None when it takes one."""
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

    def tail_call_return(self, return_pc: int, callee_pc: int) -> int | None:
        """Where gdb shows a frame between a caller returning to `return_pc`
        and a frame at `callee_pc` that the function it called reached by a
        tail call (dwarf/location/callsites.py tail_call_return); None when none."""
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
