"""C++ functions and objects found by their demangled names in a module's
symbol table, as gdb's `break NAME` and `print NAME` find them.

Why the symbol table and not DWARF: a function's symbol is what gdb's
breakpoint resolves to (one location per out-of-line copy, clones such as
`.isra.0` included), the demangled symbol spells overloads with their
parameter types exactly as gdb lists them (`geo::add(int, int)`), and the
table is already read for C lookups. DWARF alone gives `DW_AT_name` plus
the parent namespace/class DIEs (GCC puts the definition at CU level with
DW_AT_specification pointing into the namespace), which needs a DIE walk
per candidate and has no parameter spelling.

Cost: nothing is demangled up front. A wanted name's identifier appears in
every symbol that can match it as <length><identifier> (Itanium ABI
5.1.5.2 <source-name>; the function's own name is never a substitution),
so only the mangled names containing that text are demangled, a few per
lookup; C modules have no `_Z` names at all.
"""
from __future__ import annotations

from gs_cgen.cppnames import CppName, looks_like_cpp, matches, parse_cpp_name
from gs_cgen.elf.demangle import available, demangle, is_rust_symbol
from gs_cgen.elf.image import Symbol, SymbolKind, SymbolTable


def cpp_symbols(table: SymbolTable, name: str, kind: SymbolKind) -> list[tuple[Symbol, CppName]]:
    """(symbol, its demangled name) for each symbol of `kind` that `name`
    names by gdb's wild matching (gs_cgen/cppnames.py). Empty when `name`
    is not a C++ name or the module has no mangled symbols."""
    if not table.mangled_names or not available():
        return []
    pattern = parse_cpp_name(name)
    if pattern is None:
        return []
    identifier = pattern.identifier()
    needle = f"{len(identifier)}{identifier}" if identifier else ""
    found = []
    for mangled in table.mangled_names:
        if needle not in mangled or is_rust_symbol(mangled):     # Rust's: rustsymbols.py
            continue
        demangled = _demangled(mangled)
        if demangled is not None and matches(pattern, demangled):
            found += [(symbol, demangled) for symbol in table.named(mangled, kind)]
    return found


def cpp_qualified_names(table: SymbolTable, kind: SymbolKind) -> list[str]:
    """Every demangled qualified name of `kind` (`geo::Shape::area`), for
    the nearest-name candidates of an error: demangles the whole table,
    which only an error pays for."""
    if not available():
        return []
    names = set()
    for mangled in table.mangled_names:
        if is_rust_symbol(mangled):
            continue
        demangled = _demangled(mangled)
        if demangled is not None and table.named(mangled, kind):
            names.add(demangled.qualified)
    return sorted(names)


def display_name(symbol_name: str) -> str | None:
    """How gdb names the function of a mangled symbol in a breakpoint
    location (`geo::Shape::area(int) const`, no clone suffix)."""
    demangled = _demangled(symbol_name)
    return demangled.display() if demangled is not None else None


def is_cpp_name(name: str) -> bool:
    """A name only C++ lookups can find (`ns::add`, `add(int)`)."""
    return looks_like_cpp(name)


def _demangled(mangled: str) -> CppName | None:
    text = demangle(mangled)
    return parse_cpp_name(text) if text is not None else None


def _linkage_name(die):
    """The demangled DW_AT_linkage_name of a DIE, or None."""
    attr = die.attributes.get("DW_AT_linkage_name")
    return _demangled(attr.value.decode("utf-8", "replace")) if attr and attr.value else None


def inlined_cpp_instances(index, name: str) -> list[tuple]:
    """(DW_TAG_inlined_subroutine DIE, the function's display name) for the
    inlined copies (with valid addresses) of the C++
    functions `name` names, for a function that exists only inlined
    (`geo::Shape::Shape` at -O2, which gdb finds inlined into main). GCC
    chains them: a declaration in its class or namespace (DW_AT_name, and
    DW_AT_linkage_name, demangled here to match overloads) <- the abstract
    instance (DW_AT_specification, DW_AT_inline) <- each inlined copy
    (DW_AT_abstract_origin); each link is found by a raw reference search
    in the CU, as dwarf/sites.py inlined_instances does for C."""
    pattern = parse_cpp_name(name) if available() else None
    identifier = pattern.identifier() if pattern is not None else None
    if identifier is None:
        return []
    found = {}
    # GCC names a template instance's declaration with its arguments
    # (`biggest<int>`, abbreviated: `get_to<std::__cxx11::basic_string<char> >`):
    # a pattern without them means every instance, as gdb's `break biggest`.
    for declaration in index.dies_named(pattern.leaf, ("DW_TAG_subprogram",),
                                        template_instances="<" not in pattern.leaf):
        # a function template's instance is its own abstract instance
        abstracts = [declaration] if "DW_AT_inline" in declaration.attributes else \
            index.references_to(declaration, ("DW_AT_specification",), ("DW_TAG_subprogram",))
        for abstract in abstracts:
            # clang names a constructor's abstract instance, not its declaration
            demangled = _linkage_name(abstract) or _linkage_name(declaration)
            if "DW_AT_inline" not in abstract.attributes or demangled is None or \
                    not matches(pattern, demangled):
                continue
            for die in index.references_to(abstract, ("DW_AT_abstract_origin",),
                                           ("DW_TAG_inlined_subroutine",)):
                if die.tag == "DW_TAG_inlined_subroutine" and index.die_ranges(die):
                    found.setdefault(die.offset, (die, demangled.display()))
    return [found[offset] for offset in sorted(found)]

