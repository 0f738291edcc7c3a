"""Globals by name, as gdb's `print NAME` finds them: a symbol's address
searched for in .debug_info's raw bytes (DW_OP_addr, or the TLS shape),
so that only the CU holding the hit is parsed; then C++ objects and Rust
statics by their paths, then objects GCC keeps only as a constant.

A part of the module facade (dwarf/module.py): `module` is the
ModuleDebugInfo it answers for."""
from __future__ import annotations

import dataclasses
import struct

from gs_cgen.cppnames import normalize, parse_cpp_name
from gs_cgen.dwarf.cppsymbols import cpp_qualified_names, cpp_symbols
from gs_cgen.elf.image import SymbolKind
from gs_cgen.dwarf.function_lookup import base_names
from gs_cgen.dwarf.index import die_name, inherited_attr, origin_having
from gs_cgen.dwarf.model import AtAddress, Composite, GlobalVariable, OptimizedOut
from gs_cgen.dwarf.raw import uleb_bytes
from gs_cgen.dwarf.rustsymbols import rust_static_names, rust_statics
from gs_cgen.dwarf.location.tls import tls_expression_bytes
from gs_cgen.dwarf.types import type_size
from gs_cgen.errors import DebugInfoError

_SEARCH_LIMIT = 64


def _address_needle(address: int) -> bytes:
    # DW_AT_location [DW_OP_addr <address>] (DWARF 5 section 2.5.1.1)
    return b"\x03" + struct.pack("<Q", address)


def _indexed_address_needle(index: int) -> bytes:
    # DW_AT_location [DW_FORM_exprloc: length, DW_OP_addrx <index>]: clang's
    # DWARF 5 keeps the address itself in .debug_addr
    op = b"\xa1" + uleb_bytes(index)
    return uleb_bytes(len(op)) + op


def _address_table_slots(table: bytes, address: int):
    """(addr_base, index) of each .debug_addr slot holding `address`: the
    section is a series of tables, each an 8-byte header (DWARF 5 section
    7.27) then 8-byte addresses; a CU's DW_AT_addr_base is where its
    table's addresses start."""
    start = 0
    while start + 8 <= len(table):
        length = struct.unpack_from("<I", table, start)[0]
        if length >= 0xFFFFFFF0:            # 64-bit DWARF tables: not produced for x86_64
            return
        base, end = start + 8, start + 4 + length
        for pos in range(base, end - 7, 8):
            if struct.unpack_from("<Q", table, pos)[0] == address:
                yield base, (pos - base) // 8
        start = end


class GlobalLookup:
    def __init__(self, module) -> None:
        self._module = module

    def names(self) -> list[str]:
        symbols = self._module._elf.symbols
        return base_names(symbols.names(SymbolKind.OBJECT) + symbols.names(SymbolKind.TLS)) + \
            cpp_qualified_names(symbols, SymbolKind.OBJECT) + rust_static_names(symbols)

    def find(self, name: str) -> GlobalVariable | None:
        """ModuleDebugInfo.find_global."""
        module = self._module
        module.require_debug_info()
        symbols = module._elf.symbols
        for sym in symbols.named_with_clones(name, SymbolKind.OBJECT):
            die = self._aliased_variable_die((_address_needle(sym.address),), name, sym.address,
                                             SymbolKind.OBJECT)
            if die is not None:
                return self._imported(self._global(die, name, sym.address), sym, name)
        tls = symbols.named_with_clones(name, SymbolKind.TLS) if module.tls_segment else ()
        for sym in tls:
            # st_value of an STT_TLS symbol is its offset in the TLS block.
            die = self._aliased_variable_die(tls_expression_bytes(sym.address), name, sym.address,
                                             SymbolKind.TLS)
            if die is not None:
                return self._global(die, name, sym.address, thread_local=True)
        return self._cpp_global(name) or self._rust_global(name) or self._constant_global(name) \
            or self._split_global(name)

    def _imported(self, glob: GlobalVariable, sym, name: str) -> GlobalVariable:
        """`glob` with the GOT slot through which this module reaches it,
        when it is exported (another module's copy may be the one used)."""
        slots = () if sym.local else self._module.import_slots(name)
        return dataclasses.replace(glob, got_slot=slots[0]) if slots else glob

    def _aliased_variable_die(self, needles, name: str, address: int, kind: SymbolKind):
        """The variable DIE at `address` (searched for by `needles`) called
        `name`, else by another symbol of that address: DWARF names an
        object once, and its aliases (__libc_errno for errno,
        program_invocation_short_name for __progname) are symbols only, as
        gdb's `print` finds them."""
        for names in ({name}, self._module._elf.symbols.names_at(address, kind) - {name}):
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
        hits = cpp_symbols(self._module._elf.symbols, name, SymbolKind.OBJECT)
        exact = [(sym, cpp) for sym, cpp in hits if cpp.qualified == normalize(name)]
        objects = {sym.address: (sym, cpp) for sym, cpp in exact or hits}
        if len(objects) > 1:
            names = sorted(cpp.qualified for _, cpp in objects.values())
            raise DebugInfoError(f"'{name}' names {len(names)} C++ objects in "
                                 f"'{self._module.path}'", hints=("qualify the name",),
                                 candidates=tuple(names))
        for sym, cpp in objects.values():
            die = self._variable_die_at(_address_needle(sym.address), {cpp.leaf})
            if die is not None:
                return self._imported(self._global(die, sym.name, sym.address), sym, sym.name)
        return None

    def _rust_global(self, name: str) -> GlobalVariable | None:
        """A Rust static by its path or trailing components (`G_COUNTER`,
        `config::LIMIT`), as gdb's `print` finds it from the crate's code;
        several statics of that name are an error listing their paths."""
        table = self._module._elf.symbols
        pattern = parse_cpp_name(name) if table.rust_names else None
        statics = rust_statics(table, pattern) if pattern is not None else {}
        if len(statics) > 1:
            names = sorted(path.qualified for _, path in statics.values())
            raise DebugInfoError(f"'{name}' names {len(names)} Rust statics in "
                                 f"'{self._module.path}'", hints=("write its path",),
                                 candidates=tuple(names))
        for sym, path in statics.values():
            die = self._variable_die_at(_address_needle(sym.address), {path.leaf})
            if die is not None:
                return self._global(die, sym.name, sym.address)
        return None

    def _constant_global(self, name: str) -> GlobalVariable | None:
        """A file-scope object GCC keeps only as DW_AT_const_value (a
        `static const char s[] = "..."` folded into its uses at -O1 and
        up): no symbol, no storage, but gdb prints its value."""
        dies = self._module._dwarf.dies_named(name, ("DW_TAG_variable",), ("DW_AT_const_value",),
                                              limit=16)
        for die in dies:
            if die.get_parent() is None or die.get_parent().tag != "DW_TAG_compile_unit":
                continue
            value = die.attributes["DW_AT_const_value"].value
            glob = self._global(die, name, 0)
            size = type_size(glob.type)
            data = value.to_bytes(max(size, 1), "little", signed=value < 0) \
                if isinstance(value, int) else bytes(value)
            return dataclasses.replace(glob, section="const", constant=data)
        return None

    def _split_global(self, name: str) -> GlobalVariable | None:
        """A file-scope object clang -O2 split into pieces, each its own
        symbol (`sqlite3Autoext.0`, `.1`; none is NAME itself): DWARF
        describes it as DW_OP_addrx A DW_OP_piece N ..., which gdb
        prints whole, a piece it dropped as optimized out."""
        module = self._module
        prefix = name + "."
        if not any(n.startswith(prefix) and n[len(prefix):].isdigit()
                   for n in module._elf.symbols.names(SymbolKind.OBJECT)):
            return None
        for die in module._dwarf.dies_named(name, ("DW_TAG_variable",), ("DW_AT_location",),
                                            limit=16):
            if die.get_parent() is None or die.get_parent().tag != "DW_TAG_compile_unit":
                continue
            location, _ = module._locations.locate(die, 0, lambda: OptimizedOut("no frame base"))
            if isinstance(location, Composite) and all(
                    isinstance(piece.location, (AtAddress, OptimizedOut)) for piece in location.pieces):
                return dataclasses.replace(self._global(die, name, 0), section="data", pieces=location)
        return None

    def _variable_die_at(self, needle: bytes, names: set[str]):
        # The location's bytes (DW_OP_addr, or the TLS shape of dwarf/location/tls.py):
        # search the raw bytes, then parse only the CU holding the hit.
        for pos in self._module._dwarf.find_bytes(needle, _SEARCH_LIMIT):
            die = self._die_enclosing(pos)
            if die is not None and die.tag == "DW_TAG_variable" and die_name(die) in names:
                return die
        if needle.startswith(b"\x03") and len(needle) == 9:
            return self._indexed_variable_die(struct.unpack_from("<Q", needle, 1)[0], names)
        return None

    def _indexed_variable_die(self, address: int, names: set[str]):
        """The variable whose location is DW_OP_addrx of a .debug_addr slot
        holding `address`, in a CU whose table that is."""
        dwarf = self._module._dwarf
        table = dwarf.section_data(getattr(dwarf.dwarfinfo, "debug_addr_sec", None))
        for base, index in _address_table_slots(table, address):
            needle = _indexed_address_needle(index)
            for pos in dwarf.find_bytes(needle, _SEARCH_LIMIT * 16):
                die = self._die_enclosing(pos + len(needle) - 1)
                if die is None or die.tag != "DW_TAG_variable" or die_name(die) not in names:
                    continue
                addr_base = die.cu.get_top_DIE().attributes.get("DW_AT_addr_base")
                if addr_base is not None and addr_base.value == base:
                    return die
        return None

    def _die_enclosing(self, pos: int):
        """The DIE whose attribute bytes include .debug_info offset `pos`."""
        parent = self._module._dwarf.cu_containing(pos).get_top_DIE()
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
        module = self._module
        typed = origin_having(die, "DW_AT_type") or die
        file_attr = inherited_attr(die, "DW_AT_decl_file")
        line_attr = inherited_attr(die, "DW_AT_decl_line")
        return GlobalVariable(
            name=name, type=module._types.type_of(typed), address=address,
            section="tls" if thread_local else module.section_of(address) if address else "const",
            decl_file=module._decl_file(die.cu, file_attr.value) if file_attr else None,
            decl_line=line_attr.value if line_attr else None, thread_local=thread_local)
