"""`FILE:LINE` resolves to the addresses of gdb 13's `break FILE:LINE`,
for every line of several fixtures at -O0 and -O2 and for a sample of
libpython3.11's lines: one gdb run per binary (tests/gdb_oracle.py).

The one deliberate difference (dwarf/lines.py): a line with only
non-statement rows is probed at those rows, where gdb moves on to the next
line with a statement. Each such line is checked too: what gdb does there
is what gs-cgen does for that next statement line, so the rule gs-cgen
replaces is proven to be gdb's."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.errors import DebugInfoError
from tests.gdb_oracle import gdb_locations
from tests.prerequisites import require
from tests.unit.dwarf.conftest import FIXTURES
from tests.unit.dwarf.test_libpython import libpython  # noqa: F401  (fixture)

# Single-file fixtures with the shapes that matter: non-statement lines in
# an inlined call (line_table), lexical blocks that declare something or
# nothing (scopes), a function inlined twice (inlined), a `for` line whose
# rows carry discriminators (struct_in_register), many types (live_types).
SOURCES = ("line_table.c", "scopes.c", "inlined.c", "struct_in_register.c", "live_types.c")
LEVELS = ("-O0", "-O2")


@pytest.fixture(scope="module")
def fixture_binaries(tmp_path_factory) -> dict[tuple[str, str], str]:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("line_bins")
    built = {}
    for source in SOURCES:
        for level in LEVELS:
            target = out / f"{source[:-2]}{level}"
            subprocess.run(["gcc", "-g", level, "-o", str(target), str(FIXTURES / source)],
                           check=True)
            built[source, level] = str(target)
    return built


def _sites(module, file: str, line: int) -> list:
    try:
        return module.find_lines(file, line)
    except DebugInfoError:
        return []


def _as_gdb_would(module, file: str, line: int) -> tuple[list, bool]:
    """gs-cgen's sites for `file:line` with gdb's rule in place of the
    non-statement one: the sites of the next line that has a statement.
    Also whether the rule applied."""
    sites = _sites(module, file, line)
    replaced = bool(sites) and not sites[0].statement
    while sites and not sites[0].statement:
        line += 1
        sites = _sites(module, file, line)
    return sites, replaced


def _differences(path: str, lines: dict[str, range]) -> tuple[list[str], list[str]]:
    """(lines where gs-cgen and gdb differ, lines with only non-statement rows)."""
    module = open_module(path)
    specs = [f"{file}:{n}" for file, numbers in lines.items() for n in numbers]
    expected = gdb_locations(path, specs)
    differ, non_statement = [], []
    for spec in specs:
        file, line = spec.rsplit(":", 1)
        sites, replaced = _as_gdb_would(module, file, int(line))
        if replaced:
            non_statement.append(spec)
        ours = sorted(s.address for s in sites)
        if ours != expected.get(spec, []):
            differ.append(f"{spec}: gdb {[hex(a) for a in expected.get(spec, [])]}, "
                          f"gs-cgen {[hex(a) for a in ours]}")
    return differ, non_statement


def _all_lines(source) -> range:
    with open(source) as f:
        count = sum(1 for _ in f)
    return range(1, count + 2)          # one past the end: no code, for both


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("source", SOURCES)
def test_every_line_of_a_fixture_matches_gdb(fixture_binaries, source, level):
    differ, non_statement = _differences(fixture_binaries[source, level],
                                         {source: _all_lines(FIXTURES / source)})
    assert differ == []
    if (source, level) == ("line_table.c", "-O2"):
        assert "line_table.c:21" in non_statement      # the fixture still has the shape


@pytest.mark.parametrize("build", ("O0", "O2", "O0-dwarf4", "O2-dwarf4"))
def test_every_line_of_a_multi_file_program_matches_gdb(binaries, build):
    # Both util.c files by their directory: gs-cgen wants a unique suffix
    # where gdb's `break util.c:4` takes every util.c (CONTRACT.md).
    lines = {"dwarf_basic.c": _all_lines(FIXTURES / "dwarf_basic.c"),
             "dwarf_inline.c": _all_lines(FIXTURES / "dwarf_inline.c"),
             "dwarf_a/util.c": _all_lines(FIXTURES / "dwarf_a" / "util.c"),
             "dwarf_b/util.c": _all_lines(FIXTURES / "dwarf_b" / "util.c")}
    differ, _ = _differences(binaries[build], lines)
    assert differ == []


def test_a_sample_of_libpython_lines_matches_gdb(libpython):  # noqa: F811
    # -O3 code: inlined headers in every function, file switches at one
    # address, hot/cold parts. (A header line such as Include/object.h:500,
    # inlined ~2500 times, matches too, but takes half a minute.)
    lines = {"Objects/dictobject.c": range(3, 5900, 20),
             "Python/ceval.c": range(7, 7800, 50)}
    differ, non_statement = _differences(libpython.path, lines)
    assert differ == []
    assert non_statement                 # the replaced rule was exercised here too


def test_a_non_statement_line_stays_in_its_inlined_call(fixture_binaries):
    """The shape of GhostScope's inline_callsite_program.c:71: gdb's
    `break line_table.c:21` stops in choose (line 28), where `amount` does
    not exist; gs-cgen probes the line's own rows inside settle_next."""
    path = fixture_binaries["line_table.c", "-O2"]
    module = open_module(path)
    sites = module.find_lines("line_table.c", 21)
    assert {s.function for s in sites} == {"settle_next"}
    assert all(s.line == 21 and not s.statement for s in sites)
    for site in sites:
        assert "amount" in {v.name for v in module.variables_at(site.address, site.frame_die)}
    (gdb_address,) = gdb_locations(path, ["line_table.c:21"])["line_table.c:21"]
    assert module.describe_address(gdb_address).function == "choose"


def test_lexical_block_without_declarations_is_not_a_gdb_block():
    """Unit check of the block rule on a fake tree: a `{ }` block that
    declares nothing shares its parent's block (one location), one with a
    variable is a block of its own (two)."""
    from gs_cgen.dwarf.lines import lowest_per_block
    blocks = {0x10: "f", 0x20: "f", 0x30: "loop", 0x40: "loop", 0x50: None}
    assert lowest_per_block((0x10, 0x20, 0x30, 0x40, 0x50), blocks.get) == [0x10, 0x30, 0x50]


def test_gdb_drops_repeats_of_a_line_with_a_discriminator():
    # gdb/dwarf2/read.c dwarf_record_line_p: once line 6 has had a non-zero
    # discriminator, further rows of line 6 are not recorded until the line
    # changes (PR 17276).
    from gs_cgen.dwarf.index import LineTable, Row
    from gs_cgen.dwarf.lines import gdb_visible_rows

    def row(address, line, discriminator=0, end=False):
        return Row(address, 1, line, True, False, end, discriminator)
    rows = (row(0x10, 6), row(0x18, 6), row(0x20, 6, 2), row(0x28, 6, 2), row(0x30, 7),
            row(0x38, 6), row(0x40, 0, end=True))
    table = LineTable(rows, {1: "/src/f.c"}, tuple(r.address for r in rows))
    kept = [(r.address, r.line) for r in gdb_visible_rows(table)]
    assert kept == [(0x10, 6), (0x18, 6), (0x30, 7), (0x38, 6)]


def test_non_statement_row_after_a_file_switch_at_a_statement_is_ignored():
    # lnp_state_machine::record_line: a non-statement row of h.h at an
    # address where f.c already has a statement is ignored, and so is the
    # file switch: f.c's row there stays.
    from gs_cgen.dwarf.index import LineTable, Row
    from gs_cgen.dwarf.lines import gdb_visible_rows
    rows = (Row(0x10, 1, 10, True, False, False), Row(0x10, 2, 5, False, False, False),
            Row(0x14, 1, 11, True, False, False), Row(0x18, 1, 0, True, False, True))
    table = LineTable(rows, {1: "/src/f.c", 2: "/src/h.h"}, (0x10, 0x14, 0x18))
    kept = [(r.address, r.file, r.line) for r in gdb_visible_rows(table)]
    assert kept == [(0x10, 1, 10), (0x14, 1, 11)]

