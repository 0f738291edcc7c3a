"""GNU indirect functions (STT_GNU_IFUNC) as the ELF file shows them: the
resolver, the GOT slots ld.so fills with its choice, and the
implementations it can choose from.

Which implementation a process runs depends on its CPU and is known only
once ld.so has called the resolver; reading that choice out of a process
is runtime/ work (runtime/ifunc.py). Here are the facts it needs.
"""
from __future__ import annotations

from gs_cgen.elf.code import rip_relative_targets
from gs_cgen.elf.image import ElfImage, SymbolKind, SymbolTable
from gs_cgen.elf.model import IfuncSymbol
from gs_cgen.elf.relocs import Relocation, irelative_slots
from gs_cgen.elf.symvers import parse_spelling
from gs_cgen.errors import DebugInfoError


def ifunc_symbol(elf: ElfImage, relocations: list[Relocation], name: str) -> IfuncSymbol | None:
    """The IFUNC that `name` (possibly versioned) names in `elf`, or None
    when it names an ordinary function or nothing."""
    symbols = [s for s in elf.symbols.named(name, SymbolKind.FUNC) if s.ifunc]
    if not symbols:
        return None
    resolvers = sorted({s.address for s in symbols})
    if len(resolvers) > 1:
        raise DebugInfoError(f"'{name}' names {len(resolvers)} GNU indirect functions in "
                             f"'{elf.path}'", candidates=tuple(sorted({s.spelling for s in symbols})))
    resolver = min(symbols, key=lambda s: s.local)       # a global one for its size
    end = resolver.address + max(resolver.size, 1)
    implementations = tuple((address, implementation_name(elf.symbols, address, name))
                            for address in rip_relative_targets(elf, resolver.address, end)
                            if elf.symbols.functions_starting_at(address))
    return IfuncSymbol(name, resolver.address, irelative_slots(relocations, resolver.address),
                       implementations)


def implementation_name(table: SymbolTable, address: int, wanted: str) -> str:
    """The name to show for the function at `address` that `wanted` runs:
    of its aliases, one that mentions `wanted` (`__memcpy_avx_unaligned`
    rather than `__memmove_avx_unaligned` for memcpy) but is not `wanted`
    itself (an old version), then a global one."""
    bare = parse_spelling(wanted).name
    symbols = table.functions_starting_at(address)
    if not symbols:
        return f"0x{address:x}"
    best = min(symbols, key=lambda s: (bare not in s.name or s.name == bare, s.local,
                                       s.name.startswith("__GI_"), s.name))
    return best.name
