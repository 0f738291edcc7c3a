"""The direct byte decoders agree with pyelftools on every CU."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module


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
