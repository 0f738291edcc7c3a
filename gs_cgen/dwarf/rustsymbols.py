"""Rust functions found by their paths, as a user names them after
`trace` (`process`, `orders::Order::total`, `biggest<i32>`,
`main::{closure#0}`, `'<Order as Describe>::describe'`).

gdb names a Rust function by its DWARF path (the namespaces rustc nests
it in, dwarf/inline.py frame_function_name), which is also how `bt` and
`info` show it; the mangled symbol's demangled text (`<paths::Order as
paths::Describe>::describe` for what DWARF calls `paths::{impl#1}::describe`)
names it too. A pattern matches either by gdb's wild rule (cppnames.py).

Cost: both manglings spell an identifier as <length><identifier>
(legacy: the Itanium source name; v0: <undisambiguated-identifier>), so
only the symbols containing the pattern's last identifier are looked at.
"""
from __future__ import annotations

from gs_cgen.cppnames import CppName, parse_cpp_name
from gs_cgen.dwarf.demangle import rust_demangle
from gs_cgen.dwarf.elf import Symbol, SymbolKind, SymbolTable


def rust_candidates(table: SymbolTable, pattern: CppName) -> list[Symbol]:
    """Function symbols of Rust code that may be what `pattern` names."""
    identifier = pattern.identifier()
    needle = f"{len(identifier)}{identifier}" if identifier else ""
    return [symbol for mangled in table.rust_names if needle in mangled
            for symbol in table.named(mangled, SymbolKind.FUNC)]


def demangled_path(symbol: Symbol) -> CppName | None:
    text = rust_demangle(symbol.name)
    return parse_cpp_name(text) if text is not None else None


def rust_qualified_names(table: SymbolTable) -> list[str]:
    """Every demangled Rust function path, for the nearest-name candidates
    of an error (only an error pays for demangling the whole table)."""
    names = set()
    for mangled in table.rust_names:
        if table.named(mangled, SymbolKind.FUNC):
            text = rust_demangle(mangled)
            if text is not None:
                names.add(text)
    return sorted(names)
