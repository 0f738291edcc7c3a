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

from gs_cgen.cppnames import CppName, matches, parse_cpp_name
from gs_cgen.dwarf.demangle import rust_demangle
from gs_cgen.dwarf.elf import Symbol, SymbolKind, SymbolTable


def rust_candidates(table: SymbolTable, pattern: CppName,
                    kind: SymbolKind = SymbolKind.FUNC) -> list[Symbol]:
    """Symbols of Rust code (functions, or statics) that may be what
    `pattern` names."""
    identifier = pattern.identifier()
    needle = f"{len(identifier)}{identifier}" if identifier else ""
    return [symbol for mangled in table.rust_names if needle in mangled
            for symbol in table.named(mangled, kind)]


def rust_statics(table: SymbolTable, pattern: CppName) -> dict[int, tuple[Symbol, CppName]]:
    """The Rust statics `pattern` names by gdb's rule (`G_COUNTER` is
    `crate::G_COUNTER`), one per address; an exact path wins over
    trailing-component matches."""
    hits = [(symbol, path) for symbol in rust_candidates(table, pattern, SymbolKind.OBJECT)
            if (path := demangled_path(symbol)) is not None and matches(pattern, path)]
    exact = [(symbol, path) for symbol, path in hits if path.qualified == pattern.qualified]
    return {symbol.address: (symbol, path) for symbol, path in exact or hits}


def rust_static_names(table: SymbolTable) -> list[str]:
    """Every demangled Rust static's path and last component (candidates)."""
    names = set()
    for mangled in table.rust_names:
        if table.named(mangled, SymbolKind.OBJECT):
            text = rust_demangle(mangled)
            if text is not None:
                names.update((text, text.rsplit("::", 1)[-1]))
    return sorted(names)


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
