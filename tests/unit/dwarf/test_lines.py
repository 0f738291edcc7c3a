"""file:line probe sites, checked against gdb's `break FILE:LINE`."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.errors import DebugInfoError

# 46: `{` of add (function entry: gdb skips the prologue at -O0)
# 66/67: loop header and body, 72: blank line before move_point,
# 77: a statement after a blank line
LINES = (46, 47, 58, 66, 67, 72, 77)


@pytest.mark.parametrize("build", ("O0", "O2", "O0-dwarf4", "O2-dwarf4"))
def test_line_address_matches_gdb(binaries, gdb_breaks, build):
    module = open_module(binaries[build])
    expected = gdb_breaks(binaries[build], tuple(f"dwarf_basic.c:{n}" for n in LINES))
    for line in LINES:
        (site,) = module.find_lines("dwarf_basic.c", line)
        address, gdb_line = expected[f"dwarf_basic.c:{line}"]
        assert (site.address, site.line) == (address, gdb_line), line


def test_line_without_code_moves_to_next_line(binaries):
    (site,) = open_module(binaries["O0"]).find_lines("dwarf_basic.c", 76)   # blank line
    assert site.line == 77
    assert site.function == "move_point"


def test_full_and_relative_paths_agree(binaries):
    module = open_module(binaries["O0"])
    (by_suffix,) = module.find_lines("dwarf_basic.c", 66)
    (by_path,) = module.find_lines(by_suffix.file, 66)
    (by_dir,) = module.find_lines("fixtures/dwarf_basic.c", 66)
    assert by_suffix == by_path == by_dir
    assert by_suffix.file.startswith("/")


def test_directory_suffix_disambiguates(binaries):
    module = open_module(binaries["O0"])
    (a,) = module.find_lines("dwarf_a/util.c", 4)
    (b,) = module.find_lines("dwarf_b/util.c", 4)
    assert (a.function, b.function) == ("util_a", "util_b")


def test_ambiguous_suffix_lists_files(binaries):
    with pytest.raises(DebugInfoError) as err:
        open_module(binaries["O0"]).find_lines("util.c", 4)
    assert "ambiguous" in err.value.message
    assert [c.rsplit("/", 2)[-2] for c in err.value.candidates] == ["dwarf_a", "dwarf_b"]


def test_unknown_file_suggests_nearest(binaries):
    with pytest.raises(DebugInfoError) as err:
        open_module(binaries["O0"]).find_lines("dwarf_basc.c", 10)
    assert "no source file 'dwarf_basc.c'" in err.value.message
    assert "dwarf_basic.c" in err.value.candidates


def test_line_past_last_code_is_an_error(binaries):
    with pytest.raises(DebugInfoError, match="no code at or after line 9999"):
        open_module(binaries["O0"]).find_lines("dwarf_basic.c", 9999)


def test_rows_a_file_switch_at_the_same_address_discards_as_gdb_does():
    # At 0x10: f.c 10, f.c 11, h.h 5, f.c 12. Each switch of file at 0x10
    # ends the previous file's rows there, so only f.c 12 stays (the line
    # program then moves on to 0x14 in the same file). f.c 14 sits at the
    # sequence's end address: the end marker drops it.
    from gs_cgen.dwarf.index import LineTable, Row
    from gs_cgen.dwarf.lines import gdb_visible_rows

    def row(address, file, line, end=False):
        return Row(address, file, line, True, False, end)
    rows = (row(0x10, 1, 10), row(0x10, 1, 11), row(0x10, 2, 5), row(0x10, 1, 12),
            row(0x14, 1, 13), row(0x18, 1, 14), row(0x18, 1, 0, end=True))
    table = LineTable(rows, {1: "/src/f.c", 2: "/src/h.h"}, (0x10, 0x14, 0x18))
    kept = [(r.address, r.file, r.line) for r in gdb_visible_rows(table) if not r.end_sequence]
    assert kept == [(0x10, 1, 12), (0x14, 1, 13)]
