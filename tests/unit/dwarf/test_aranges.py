"""address -> CU from the cached .debug_aranges (DwarfIndex.address_ranges)
answers as pyelftools' ARanges does, at and around every range boundary."""
from __future__ import annotations

import pytest
from elftools.elf.elffile import ELFFile

from gs_cgen.dwarf.index import DwarfIndex

from .test_libpython import libpython  # noqa: F401 — the fixture


def _probe_addresses(aranges) -> list[int]:
    return [a for e in aranges.entries
            for a in (e.begin_addr - 1, e.begin_addr, e.begin_addr + e.length - 1,
                      e.begin_addr + e.length)] + [0, 1, 2**64 - 1]


@pytest.mark.parametrize("which", ["O0", "O2", "O0-dwarf4"])
def test_cu_for_address_equals_pyelftools(binaries, which):
    _check_against_pyelftools(binaries[which])


def test_libpython_cu_for_address_equals_pyelftools(libpython):  # noqa: F811
    _check_against_pyelftools(libpython.debug_path)


def _check_against_pyelftools(path: str) -> None:
    with open(path, "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info()
        aranges = dwarfinfo.get_aranges()
        assert aranges is not None and aranges.entries
        index = DwarfIndex(dwarfinfo)
        for address in _probe_addresses(aranges):
            cu = index.cu_for_address(address)
            assert (cu.cu_offset if cu else None) == aranges.cu_offset_at_addr(address), address
