"""Functions by name, as gdb's `break NAME` finds them: the symbol tables
first (aliases, versions, GCC clones), then C++ and Rust names by their
demangled paths, then inlined copies found by raw DIE searches. Each is a
FunctionSite: where the probe goes (past the prologue where gdb puts it)
and the DIE of the copy, for its variables.

A part of the module facade (dwarf/module.py): `module` is the
ModuleDebugInfo it answers for, whose ELF image, DWARF index and line
look-ups it shares."""
from __future__ import annotations

import dataclasses

from gs_cgen.cppnames import matches, parse_cpp_name
from gs_cgen.dwarf.cppsymbols import (cpp_qualified_names, cpp_symbols, display_name,
                                      inlined_cpp_instances)
from gs_cgen.elf.image import SymbolKind
from gs_cgen.elf.ifunc import implementation_name
from gs_cgen.dwarf.index import FunctionEntry, die_name, inherited_attr, origin_having
from gs_cgen.dwarf.inline import frame_function_name, is_rust_cu
from gs_cgen.dwarf.model import FunctionSite
from gs_cgen.dwarf.rustsymbols import demangled_path, rust_candidates, rust_qualified_names
from gs_cgen.dwarf.sites import function_probe_address, inlined_instances, is_optimized_gcc
from gs_cgen.elf.symvers import parse_spelling
from gs_cgen.errors import DebugInfoError, nearest

# What GNU as records for a .S file (DWARF 5 section 7.12 leaves assembly
# languages to vendors; gas, gdb and LLVM use the MIPS value).
_DW_LANG_MIPS_ASSEMBLER = 0x8001


class FunctionLookup:
    def __init__(self, module) -> None:
        self._module = module

    def names(self) -> list[str]:
        """Names to offer as candidates: C names, versioned names, and C++
        functions by their qualified names (never mangled)."""
        symbols = self._module._elf.symbols
        return base_names(symbols.names(SymbolKind.FUNC)) + \
            symbols.versioned_names(SymbolKind.FUNC) + \
            cpp_qualified_names(symbols, SymbolKind.FUNC) + rust_qualified_names(symbols)

    def has_symbol(self, name: str) -> bool:
        symbols = self._module._elf.symbols
        return bool(symbols.named_with_clones(name, SymbolKind.FUNC)) or \
            bool(cpp_symbols(symbols, name, SymbolKind.FUNC))

    def find(self, name: str) -> list[FunctionSite]:
        """ModuleDebugInfo.find_functions."""
        module = self._module
        module.require_debug_info()
        bare = parse_bare(name)
        symbols = [s for s in module._elf.symbols.named_with_clones(name, SymbolKind.FUNC)
                   if not s.ifunc]
        # One site per address, as gdb sets one breakpoint location per address.
        found: dict[int, FunctionSite] = {}
        for sym in symbols:
            hit = module._dwarf.function_at(sym.address)
            # An alias may name any subprogram; a clone (f.constprop.0) must be f's.
            if hit is not None and hit[1].ranges[0][0] == sym.address and \
                    (sym.name == bare or hit[1].name == name):
                site = self.function_site(*hit, display_name(sym.name))
                found.setdefault(site.probe_address, site)
        for site in self._cpp_functions(name) + self._rust_functions(name):
            found.setdefault(site.probe_address, site)
        if not found and not module._elf.has_symtab:
            for cu, entry in self._scan_functions(name):
                site = self.function_site(cu, entry)
                found.setdefault(site.probe_address, site)
        for site in self.inlined_sites(name):
            found.setdefault(site.probe_address, site)
        if not found:          # known to the symbol table only: attach, no variables
            found = {s.address: self.symbol_site(s.address, s.name) for s in symbols
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
        for sym, cpp in cpp_symbols(self._module._elf.symbols, name, SymbolKind.FUNC):
            if sym.ifunc:
                continue
            hit = self._module._dwarf.function_at(sym.address)
            if hit is None:       # no DWARF for it: attach, no variables
                sites.append(self.symbol_site(sym.address, cpp.display()))
            elif hit[1].ranges[0][0] == sym.address:
                sites.append(self.function_site(*hit, cpp.display()))
            # else a part of a function entered elsewhere (gcc's `[clone
            # .cold]`): no location of its own, as in gdb
        return sites

    def _rust_functions(self, name: str) -> list[FunctionSite]:
        """Every out-of-line copy of the Rust functions `name` names
        (dwarf/rustsymbols.py), named by its DWARF path as gdb does."""
        table, dwarf = self._module._elf.symbols, self._module._dwarf
        pattern = parse_cpp_name(name) if table.rust_names else None
        if pattern is None:
            return []
        sites = []
        for sym in rust_candidates(table, pattern):
            hit = dwarf.function_at(sym.address)
            if hit is not None and (hit[1].ranges[0][0] != sym.address or not is_rust_cu(hit[0])):
                continue
            path = frame_function_name(dwarf.die_at(hit[1].die_offset)) if hit else None
            parsed = parse_cpp_name(path) if path else None
            demangled = demangled_path(sym)
            if not any(n is not None and matches(pattern, n) for n in (parsed, demangled)):
                continue
            shown = path or (demangled.qualified if demangled else sym.name)
            sites.append(self.function_site(*hit, shown) if hit else
                         self.symbol_site(sym.address, shown))
        return sites

    def _raise_not_found(self, name: str):
        module = self._module
        if module.ifunc_named(name) is not None:
            raise DebugInfoError(f"'{name}' in '{module.path}' is a GNU indirect function "
                                 "(IFUNC): the code that runs is chosen when the process loads")
        raise DebugInfoError(f"no function '{name}' in '{module.path}'",
                             candidates=nearest(name, self.names()))

    def site_at(self, address: int, wanted: str) -> FunctionSite:
        """ModuleDebugInfo.function_site_at."""
        module = self._module
        module.require_debug_info()
        name = implementation_name(module._elf.symbols, address, wanted)
        hit = module._dwarf.function_at(address)
        if hit is None or hit[1].ranges[0][0] != address:
            return self.symbol_site(address, name)
        site = self.function_site(*hit)
        reason = site.no_variables and self._assembly_reason(name, hit[0])
        return dataclasses.replace(site, name=name, no_variables=reason)

    def symbol_site(self, address: int, name: str) -> FunctionSite:
        """A function known only to the symbol table: probed at its first
        instruction, where the arguments are still in their registers."""
        symbol = self._module._elf.symbols.function_at(address)
        size = symbol.size if symbol is not None and symbol.address == address else 1
        where = self._module.describe_address(address)
        why = self.split_dwarf_note(address) or "assembly, or a file built without -g"
        return FunctionSite(name=name, low_pc=address, high_pc=address + max(size, 1),
                            probe_address=address, decl_file=where.file, decl_line=where.line,
                            no_variables=f"{name} has no DWARF description ({why})")

    def split_dwarf_note(self, address: int) -> str | None:
        """Why the DWARF of `address` is not here, when its CU is a
        skeleton (-gsplit-dwarf): the rest is in a .dwo or .dwp file."""
        module = self._module
        cu = module._dwarf.cu_for_address(address) if module.has_debug_info else None
        if cu is None:
            return None
        top = module._dwarf.cu_at(cu.cu_offset).get_top_DIE()
        name = next((top.attributes[a].value for a in ("DW_AT_dwo_name", "DW_AT_GNU_dwo_name")
                     if a in top.attributes), None)
        if top.tag != "DW_TAG_skeleton_unit" and name is None:
            return None
        dwo = name.decode(errors="replace") if isinstance(name, bytes) else name
        return (f"its DWARF is split out to {dwo or 'a .dwo file'} (-gsplit-dwarf), which "
                "gs-cgen does not read: rebuild without -gsplit-dwarf")

    def inlined_sites(self, name: str) -> list[FunctionSite]:
        """Inlined instances of `name`, in every CU: gdb sets a location on
        each. Raw searches find them (dwarf/sites.py inlined_instances), so
        no CU's DIE tree is walked, whatever the module's size."""
        dwarf = self._module._dwarf
        sites = [self.inline_site(die, name) for die in inlined_instances(dwarf, name)]
        if not sites and self._module._elf.symbols.mangled_names:
            sites = [dataclasses.replace(self.inline_site(die, name), name=display)
                     for die, display in inlined_cpp_instances(dwarf, name)]
        return sites

    def inline_site(self, die, name: str) -> FunctionSite:
        """gdb 13's location for an inlined copy: the start of its first
        range (BLOCK_ENTRY_PC; DW_AT_entry_pc is not used, and GCC's may lie
        outside the ranges: PyUnicode_New's does), moved past the enclosing
        function's prologue in code without trustworthy location lists."""
        module = self._module
        low, high = module._dwarf.die_ranges(die)[0]
        probe = low
        hit = None if self._locations_valid(die.cu) else module._dwarf.function_at(low)
        if hit is not None:
            probe = max(low, self.probe_address(hit[0], *hit[1].ranges[0]))
        origin = origin_having(die, "DW_AT_decl_file")
        line_attr = inherited_attr(die, "DW_AT_decl_line")
        decl_file = origin.attributes["DW_AT_decl_file"].value if origin is not None else None
        # Named as its out-of-line copy is (DW_AT_name), whatever gdb matched.
        return FunctionSite(name=die_name(die) or name, low_pc=low, high_pc=high,
                            probe_address=probe,
                            decl_file=module._decl_file(origin.cu, decl_file) if origin else None,
                            decl_line=line_attr.value if line_attr else None,
                            frame_die=die.offset)

    def _scan_functions(self, name: str):
        # Only without .symtab: walks every CU's top-level DIEs.
        dwarf = self._module._dwarf
        for off in dwarf.cu_offsets():
            for entry in dwarf.functions(off):
                if entry.name == name:
                    yield dwarf.cu_at(off), entry

    def function_site(self, cu, entry: FunctionEntry, name: str | None = None) -> FunctionSite:
        """`name`: how to show it, when not its DW_AT_name (a C++
        function's demangled name)."""
        module = self._module
        die = module._dwarf.die_at(entry.die_offset)
        low, high = entry.ranges[0]
        file_attr = inherited_attr(die, "DW_AT_decl_file")
        line_attr = inherited_attr(die, "DW_AT_decl_line")
        probe = self.probe_address(cu, low, high)
        decl_file = module._decl_file(cu, file_attr.value) if file_attr else None
        decl_line = line_attr.value if line_attr else None
        if decl_file is None:           # assembly: where the line table puts it
            where = module.describe_address(probe)
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

    def probe_address(self, cu, low: int, high: int) -> int:
        """Where gdb's `break` puts a function of `cu` spanning [low, high)."""
        if self._locations_valid(cu):
            return low                # no line table needed
        module = self._module
        return function_probe_address(module._dwarf.line_table(cu.cu_offset), low, high,
                                      False, module._elf.read(low, 16))

    @staticmethod
    def _locations_valid(cu) -> bool:
        producer = cu.get_top_DIE().attributes.get("DW_AT_producer")
        return is_optimized_gcc(producer.value.decode("utf-8", "replace") if producer else None)


def parse_bare(name: str) -> str:
    """`memcpy` of `memcpy@@GLIBC_2.14`."""
    return parse_spelling(name).name


def base_names(names: list[str]) -> list[str]:
    """Names to offer as candidates: mangled C++ names are offered by their
    demangled names instead, GCC's clones by the name they clone."""
    return sorted({n.split(".", 1)[0] for n in names
                   if n and not n.startswith((".", "_Z"))})
