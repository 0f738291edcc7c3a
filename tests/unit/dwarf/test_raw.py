"""The direct byte decoders agree with pyelftools on every CU."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module

from .test_libpython import libpython  # noqa: F401 — the fixture


@pytest.mark.parametrize("build", ("O0", "O2-dwarf4"))
def test_cu_line_info_and_file_tables_match_pyelftools(binaries, build):
    index = open_module(binaries[build])._dwarf
    for off in index.cu_offsets():
        cu = index.cu_at(off)
        attrs = cu.get_top_DIE().attributes
        stmt_list, comp_dir = index._cu_line_info(off)
        assert (stmt_list, comp_dir) == (attrs["DW_AT_stmt_list"].value,
                                         attrs["DW_AT_comp_dir"].value.decode())
        header = index.dwarfinfo.line_program_for_CU(cu).header
        version, dirs, files = index._file_tables(off, stmt_list)
        assert version == header.version
        assert list(dirs) == list(header.include_directory)
        assert files == [(e.name, e.dir_index) for e in header.file_entry]


def _functions_by_pyelftools(index, off):
    top = index.cu_at(off).get_top_DIE()
    entries = [index._function_entry(die) for die in top.iter_children()
               if die.tag == "DW_TAG_subprogram"]
    return tuple(sorted((e for e in entries if e is not None), key=lambda e: e.ranges[0][0]))


@pytest.mark.parametrize("build", ("O0", "O2", "O2-dwarf4"))
def test_top_level_functions_match_pyelftools(binaries, build):
    index = open_module(binaries[build])._dwarf
    seen = 0
    for off in index.cu_offsets():
        raw = index._read_functions(off)
        assert raw == _functions_by_pyelftools(index, off)
        seen += len(raw)
    assert seen > 0


def test_libpython_top_level_functions_match_pyelftools(libpython):  # noqa: F811
    # Every 7th CU: GCC -O3 DWARF 5, clones, DW_AT_ranges on cold parts.
    index = libpython._dwarf
    offsets = index.cu_offsets()[::7]
    for off in offsets:
        assert index._read_functions(off) == _functions_by_pyelftools(index, off)
    assert sum(len(index._read_functions(off)) for off in offsets) > 500


def test_abbreviations_in_encodings_the_fast_match_leaves():
    from gs_cgen.dwarf.raw import read_abbreviations, read_declaration
    table = bytes([
        1, 0x11, 1, 0x03, 0x08, 0x1C, 0x21, 0x7F, 0, 0,    # implicit_const -1: fast match
        0x82, 0x00, 0x2E, 0, 0x03, 0x08, 0, 0,             # code 2 as a padded LEB128
        3, 0x24, 2, 0x0B, 0x0B, 0, 0,                       # DW_CHILDREN 2
        0])
    assert read_abbreviations(table, 0) == {
        1: (0x11, ((0x03, 0x08), (0x1C, 0x21)), True),
        2: (0x2E, ((0x03, 0x08),), False),
        3: (0x24, ((0x0B, 0x0B),), True),
    }
    assert read_declaration(table, 0, 2) == (0x2E, ((0x03, 0x08),), False)
    assert read_declaration(table, 0, 3) == (0x24, ((0x0B, 0x0B),), True)
    assert read_declaration(table, 0, 4) is None


def _abbreviations_by_pyelftools(index, offset):
    from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_FORM, ENUM_DW_TAG
    table = index.dwarfinfo.get_abbrev_table(offset)
    out = {}
    for code, declaration in sorted(table._abbrev_map.items()):
        specs = tuple((ENUM_DW_AT[spec.name], ENUM_DW_FORM[spec.form])
                      for spec in declaration["attr_spec"])
        out[code] = (ENUM_DW_TAG[declaration["tag"]], specs, declaration.has_children())
    return out


def _abbreviation_offsets(index):
    from gs_cgen.dwarf.raw import ByteReader
    info, offsets = index.info_bytes(), []
    for cu in index.cu_offsets():
        r = ByteReader(info, cu)
        offset_size = 8 if r.u(4) == 0xFFFFFFFF else 4
        r.pos += 8 if offset_size == 8 else 0
        if r.u(2) >= 5:
            r.pos += 2                      # unit type, address size
        offsets.append(r.u(offset_size))
    return offsets


def _check_abbreviations(index, offsets):
    from gs_cgen.dwarf.raw import read_abbreviations, read_declaration
    abbrev = index.section_data(index.dwarfinfo.debug_abbrev_sec)
    for offset in offsets:
        expected = _abbreviations_by_pyelftools(index, offset)
        assert read_abbreviations(abbrev, offset) == expected
        for code in list(expected)[::5] + [max(expected)]:
            assert read_declaration(abbrev, offset, code) == expected[code]
        assert read_declaration(abbrev, offset, max(expected) + 1) is None


@pytest.mark.parametrize("build", ("O0", "O2", "O2-dwarf4"))
def test_abbreviation_tables_match_pyelftools(binaries, build):
    index = open_module(binaries[build])._dwarf
    _check_abbreviations(index, _abbreviation_offsets(index))


def test_libpython_abbreviation_tables_match_pyelftools(libpython):  # noqa: F811
    index = libpython._dwarf
    offsets = _abbreviation_offsets(index)
    assert len(offsets) > 100
    _check_abbreviations(index, offsets[::5])
