"""Abbreviation tables decoded from the raw bytes (dwarf/abbrev.py) equal
pyelftools' own parse, table by table and DIE by DIE, and anything the
decoder cannot read falls back to pyelftools."""
from __future__ import annotations

import pytest
from elftools.dwarf.abbrevtable import AbbrevTable
from elftools.elf.elffile import ELFFile

from gs_cgen.dwarf.abbrev import FastAbbreviations, decode_abbreviations

from ..conftest import process_libc
from tests.prerequisites import require


def _dwarf(path: str):
    f = open(path, "rb")            # closed with the test process; pyelftools reads lazily
    return ELFFile(f).get_dwarf_info()


def _shape(decl) -> tuple:
    return (decl.code, decl["tag"], decl.has_children(),
            [(s.name, s.form, s.value) for s in decl["attr_spec"]])


def _table_offsets(dwarfinfo) -> set[int]:
    return {cu["debug_abbrev_offset"] for cu in dwarfinfo.iter_CUs()}


@pytest.mark.parametrize("variant", ["O0", "O2", "O0-dwarf4", "O2-dwarf4"])
def test_tables_equal_pyelftools(binaries, variant):
    dwarfinfo = _dwarf(binaries[variant])
    data = dwarfinfo.debug_abbrev_sec.stream.getvalue()
    implicit = 0
    for offset in _table_offsets(dwarfinfo):
        theirs = AbbrevTable(dwarfinfo.structs, dwarfinfo.debug_abbrev_sec.stream, offset)
        ours = decode_abbreviations(data, offset)
        assert sorted(ours) == sorted(theirs._abbrev_map)
        for code, decl in ours.items():
            assert _shape(decl) == _shape(theirs.get_abbrev(code))
            implicit += sum(s.form == "DW_FORM_implicit_const" for s in decl["attr_spec"])
    if "dwarf4" not in variant:
        assert implicit, "GCC's DWARF 5 uses DW_FORM_implicit_const: the sleb path is tested"


def test_libc_tables_equal_pyelftools():
    # A large DWARF 5 module from another build (glibc's separate debug file).
    from gs_cgen.dwarf.module import open_module
    module = open_module(process_libc())
    require(None if module.has_debug_info else "no debug info for libc here (libc6-dbg)")
    dwarfinfo = _dwarf(module.debug_path)
    data = dwarfinfo.debug_abbrev_sec.stream.getvalue()
    for offset in sorted(_table_offsets(dwarfinfo))[:40]:
        theirs = AbbrevTable(dwarfinfo.structs, dwarfinfo.debug_abbrev_sec.stream, offset)
        ours = decode_abbreviations(data, offset)
        assert [_shape(ours[c]) for c in sorted(ours)] == \
            [_shape(theirs.get_abbrev(c)) for c in sorted(theirs._abbrev_map)]


@pytest.mark.parametrize("variant", ["O2", "O0-dwarf4"])
def test_every_die_parses_as_with_pyelftools(binaries, variant):
    plain, fast = _dwarf(binaries[variant]), _dwarf(binaries[variant])
    FastAbbreviations.install(fast, fast.debug_abbrev_sec.stream.getvalue)

    def dies(dwarfinfo):
        return [(d.offset, d.tag, d.has_children, d.size,
                 [(a.name, a.form, a.value, a.offset) for a in d.attributes.values()])
                for cu in dwarfinfo.iter_CUs() for d in cu.iter_DIEs()]

    assert dies(fast) == dies(plain)
    assert isinstance(fast.get_abbrev_table, FastAbbreviations)


def test_unreadable_table_falls_back_to_pyelftools(binaries):
    dwarfinfo = _dwarf(binaries["O0"])
    full = dwarfinfo.debug_abbrev_sec.stream.getvalue()
    (offset,) = sorted(_table_offsets(dwarfinfo))[:1]
    with pytest.raises(IndexError):
        decode_abbreviations(full[:offset + 5], offset)
    # Given truncated bytes, the stand-in asks pyelftools, which reads the stream.
    FastAbbreviations.install(dwarfinfo, lambda: full[:offset + 5])
    table = dwarfinfo.get_abbrev_table(offset)
    reference = AbbrevTable(dwarfinfo.structs, dwarfinfo.debug_abbrev_sec.stream, offset)
    assert [_shape(table.get_abbrev(c)) for c in sorted(reference._abbrev_map)] == \
        [_shape(reference.get_abbrev(c)) for c in sorted(reference._abbrev_map)]
    assert dwarfinfo.get_abbrev_table(offset) is table        # decoded once
