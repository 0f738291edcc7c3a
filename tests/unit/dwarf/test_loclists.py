"""Location lists decoded from the raw bytes (dwarf/location/loclists.py) are
pyelftools' own, entry for entry, in DWARF 5 (.debug_loclists) and DWARF 4
(.debug_loc); a list the decoder cannot read is left to pyelftools."""
from __future__ import annotations

import pytest
from elftools.elf.elffile import ELFFile

from gs_cgen.dwarf.location.loclists import RawLocationLists

from .test_libpython import libpython  # noqa: F401 — the fixture

_LIST_FORMS = ("DW_FORM_sec_offset", "DW_FORM_data4")


class _NoPyelftools:
    def get_location_list_at_offset(self, offset, die):
        raise AssertionError("fell back to pyelftools")


def _lists_with_dies(dwarfinfo, max_cus: int | None = None):
    for i, cu in enumerate(dwarfinfo.iter_CUs()):
        if max_cus is not None and i >= max_cus:
            return
        for die in cu.iter_DIEs():
            for name in ("DW_AT_location", "DW_AT_frame_base"):
                attr = die.attributes.get(name)
                if attr is not None and attr.form in _LIST_FORMS:
                    yield attr.value, die


def _read(sec, offset, size):
    return sec.stream.getvalue()[offset:offset + size]


def _check(path: str, max_cus: int | None = None) -> int:
    with open(path, "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info()
        theirs = dwarfinfo.location_lists()
        ours = RawLocationLists(dwarfinfo, _NoPyelftools(), _read)
        count = 0
        for offset, die in _lists_with_dies(dwarfinfo, max_cus):
            assert ours.get_location_list_at_offset(offset, die) == \
                theirs.get_location_list_at_offset(offset, die), (die.offset, offset)
            count += 1
        return count


@pytest.mark.parametrize("variant", ["O2", "O2-dwarf4"])
def test_lists_equal_pyelftools(binaries, variant):
    assert _check(binaries[variant]) > 10


def test_libpython_lists_equal_pyelftools(libpython):  # noqa: F811
    assert _check(libpython.debug_path, max_cus=6) > 1000


def test_a_list_longer_than_the_first_read_is_read_again(binaries, monkeypatch):
    import gs_cgen.dwarf.location.loclists as loclists
    monkeypatch.setattr(loclists, "FIRST_READ", 3)     # every list runs past it
    assert _check(binaries["O2"]) > 10
    assert _check(binaries["O2-dwarf4"]) > 10


def test_an_unreadable_list_is_left_to_pyelftools(binaries):
    with open(binaries["O2"], "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info()
        theirs = dwarfinfo.location_lists()
        offset, die = next(_lists_with_dies(dwarfinfo))
        # The section cut short just after the list starts: the raw decoder
        # runs out of bytes and hands the list to pyelftools.
        cut = RawLocationLists(dwarfinfo, theirs,
                               lambda sec, at, size: sec.stream.getvalue()[:offset + 2][at:at + size])
        assert cut.get_location_list_at_offset(offset, die) == \
            theirs.get_location_list_at_offset(offset, die)
        unknown = RawLocationLists(
            dwarfinfo, theirs, lambda sec, at, size: (sec.stream.getvalue()[:offset] + b"\x7f")[at:at + size])
        assert unknown.get_location_list_at_offset(offset, die) == \
            theirs.get_location_list_at_offset(offset, die)
