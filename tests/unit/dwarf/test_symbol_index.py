"""The name -> dotted-suffix index of a symbol table (GCC clones and
function-level statics) answers as a scan of every name would."""
from __future__ import annotations

import pytest

from gs_cgen.elf.image import ElfImage

from ..conftest import process_libc


def _scanned(table, name: str) -> list[str]:
    return [n for n in table.by_name if n.startswith(name + ".")]


@pytest.mark.parametrize("which", ["O2", "libc"])
def test_suffixed_names_equal_a_scan(binaries, which):
    table = ElfImage(process_libc() if which == "libc" else binaries[which]).symbols
    dotted = [n for n in table.by_name if "." in n]
    assert dotted, "the module has clones or numbered statics to find"
    stems = {n.partition(".")[0] for n in dotted}
    # Every stem, names that are themselves dotted, and names with no clone.
    names = sorted(stems) + dotted[:50] + ["main", "no_such_name", ""]
    for name in names:
        assert table.suffixed_names(name) == _scanned(table, name), name


def test_clone_is_found_by_its_base_name(binaries):
    table = ElfImage(binaries["O2"]).symbols
    assert "scale.constprop.0" in table.suffixed_names("scale")
    assert table.suffixed_names("scale.constprop") == ["scale.constprop.0"]
    assert table.suffixed_names("scal") == []


@pytest.mark.parametrize("which", ["O2", "libc"])
def test_names_look_up_as_a_scan_of_the_rows_would(binaries, which):
    # Look-ups bisect the rows in name order: the same rows, in table
    # order, as collecting them name by name.
    table = ElfImage(process_libc() if which == "libc" else binaries[which]).symbols
    scanned: dict[str, list[int]] = {}
    for i, row in enumerate(table._rows):
        scanned.setdefault(row[0], []).append(i)
    assert list(table.by_name) == list(scanned) and len(table.by_name) == len(scanned)
    for name, numbers in scanned.items():
        assert table.numbers_named(name) == numbers, name
        assert name in table.by_name
    if which == "libc":                  # file-local statics of one name in many files
        assert any(len(numbers) > 1 for numbers in scanned.values())
    for absent in ("no_such_name", "", "\uffff"):
        assert table.numbers_named(absent) == [] and absent not in table.by_name
    assert table.mangled_names == tuple(n for n in scanned if n.startswith("_Z"))


@pytest.mark.parametrize("which", ["O2", "libc"])
def test_name_lists_equal_those_of_the_symbols(binaries, which):
    from gs_cgen.elf.image import SymbolKind
    table = ElfImage(process_libc() if which == "libc" else binaries[which]).symbols
    symbols = [s for name in table.by_name for s in table.by_name[name]]
    for kind in SymbolKind:
        placed = {s.name for s in symbols if s.kind is kind and (s.address or kind is SymbolKind.TLS)}
        assert table.names(kind) == sorted(placed)
        assert table.versioned_names(kind) == sorted(
            {s.spelling for s in symbols if s.kind is kind and s.address and s.version})
    if which == "libc":
        assert table.versioned_names(SymbolKind.FUNC)
