"""Line-program rows decoded from the raw bytes (dwarf/lineprogram.py) are
pyelftools' own, row for row, in DWARF 5 and DWARF 4 and across libpython;
a program the decoder refuses is left to pyelftools."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.index import Row, line_rows_by_pyelftools
from gs_cgen.dwarf.lineprogram import decode_rows
from gs_cgen.dwarf.raw import UnsupportedHeader

from .test_libpython import libpython  # noqa: F401 — the fixture


def _compare(index, offsets) -> int:
    rows = 0
    for offset in offsets:
        ours = index._line_rows(offset)
        assert ours == line_rows_by_pyelftools(index.dwarfinfo, index.cu_at(offset)), offset
        rows += len(ours)
    return rows


@pytest.mark.parametrize("variant", ["O0", "O2", "O2-dwarf4"])
def test_rows_equal_pyelftools(binaries, variant):
    index = open_module(binaries[variant])._dwarf
    assert _compare(index, index.cu_offsets()) > 20


def test_libpython_rows_equal_pyelftools(libpython):  # noqa: F811
    index = libpython._dwarf
    # The CU of dictobject.c (12.5k rows, discriminators, views) and a spread
    # of others: the whole library (620k rows) takes 14 s and also passed.
    offsets = index.cu_offsets()
    chosen = offsets[::15] + index.files_by_path().get(
        next(p for p in index.files_by_path() if p.endswith("Objects/dictobject.c")), [])[:1]
    assert _compare(index, chosen) > 20000


def test_a_program_defining_files_is_left_to_pyelftools():
    # version 4 header with opcode_base 13, then DW_LNE_define_file.
    header_rest = bytes([1, 1, 1, 0xFB, 14, 13]) + bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]) + b"\0\0"
    program = bytes([0, 5, 3]) + b"a.c\0" + bytes([0, 0, 0])
    body = (4).to_bytes(2, "little") + len(header_rest).to_bytes(4, "little") + header_rest + program
    section = len(body).to_bytes(4, "little") + body
    with pytest.raises(UnsupportedHeader):
        decode_rows(section, 0)


def test_rows_are_line_table_rows(binaries):
    index = open_module(binaries["O0"])._dwarf
    rows = index._line_rows(index.cu_offsets()[0])
    assert all(type(row) is Row for row in rows)
    assert rows[-1].end_sequence and not rows[-1].is_stmt
