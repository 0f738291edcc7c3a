"""Location lists decoded straight from .debug_loclists / .debug_loc.

pyelftools decodes each list with construct (~0.3 ms a list; an -O2
function's parameters and locals have one each, so ~1 ms per probe). This
decoder reads the same bytes (DWARF 5 section 2.6.2 and 7.7.3; DWARF 4
section 2.6.2) into pyelftools' own LocationEntry / BaseAddressEntry
tuples, field for field, so callers cannot tell the two apart; a list it
cannot read (an unknown DW_LLE code, bytes past the section) is left to
pyelftools, errors and all.
"""
from __future__ import annotations

from collections.abc import Callable

from elftools.dwarf.locationlists import BaseAddressEntry, LocationEntry

from gs_cgen.dwarf.raw import ByteReader

_DW_LLE_END_OF_LIST, _DW_LLE_BASE_ADDRESSX, _DW_LLE_STARTX_ENDX = 0x00, 0x01, 0x02
_DW_LLE_STARTX_LENGTH, _DW_LLE_OFFSET_PAIR, _DW_LLE_DEFAULT_LOCATION = 0x03, 0x04, 0x05
_DW_LLE_BASE_ADDRESS, _DW_LLE_START_END, _DW_LLE_START_LENGTH = 0x06, 0x07, 0x08


class Unreadable(Exception):
    """A list this decoder does not read; pyelftools is asked instead."""


# Bytes read for one list at first: an -O3 libpython list is ~10-200 bytes.
FIRST_READ = 4096


class RawLocationLists:
    """Stands in for pyelftools' `dwarfinfo.location_lists()` where
    `get_location_list_at_offset(offset, die)` is all that is used.
    `section_read(section, offset, size)` returns up to `size` bytes of a
    DWARF section at `offset` (fewer at its end)."""

    def __init__(self, dwarfinfo, pyelftools_lists, section_read: Callable) -> None:
        self._dwarfinfo = dwarfinfo
        self._section_read = section_read
        self._pyelftools = pyelftools_lists              # dwarfinfo.location_lists()
        self._address_size = dwarfinfo.config.default_address_size

    def get_location_list_at_offset(self, offset: int, die) -> list:
        version5 = die.cu.header.version >= 5
        section = self._dwarfinfo.debug_loclists_sec if version5 else self._dwarfinfo.debug_loc_sec
        try:
            if section is None:
                raise Unreadable("no section")
            data = self._section_read(section, offset, FIRST_READ)
            try:
                return self._entries(data, offset, version5, die)
            except IndexError:
                if len(data) < FIRST_READ:          # the section ends inside the list
                    raise
            return self._entries(self._section_read(section, offset, section.size - offset),
                                 offset, version5, die)
        except (Unreadable, IndexError):
            return self._pyelftools.get_location_list_at_offset(offset, die)

    def _entries(self, data: bytes, origin: int, version5: bool, die) -> list:
        """The list that starts `data`, which is the section from `origin` on."""
        if version5:
            return _entries_v5(data, origin, self._address_size,
                               lambda index: self._dwarfinfo.get_addr(die.cu, index))
        return _entries_v4(data, origin, self._address_size)


def _entries_v4(data: bytes, origin: int, address_size: int) -> list:
    # Pairs of target addresses, a (max address, base) pair selecting a new
    # base, a (0, 0) pair ending the list; a location entry's expression
    # follows as a 2-byte length and its bytes. Entries carry their offsets
    # in the section, as pyelftools' do.
    r, out, max_address = ByteReader(data, 0), [], (1 << (8 * address_size)) - 1
    while True:
        start = r.pos
        begin, end = _address(r, address_size), _address(r, address_size)
        if begin == 0 and end == 0:
            return out
        if begin == max_address:
            out.append(BaseAddressEntry(origin + start, r.pos - start, end))
            continue
        expr = _bytes(r, r.u(2))
        out.append(LocationEntry(origin + start, r.pos - start, begin, end, expr, False))


def _entries_v5(data: bytes, origin: int, address_size: int, address_at: Callable) -> list:
    r, out = ByteReader(data, 0), []
    while True:
        start = r.pos
        kind = _byte(r)
        if kind == _DW_LLE_END_OF_LIST:
            return out
        if kind == _DW_LLE_BASE_ADDRESSX:
            index = r.uleb()
            out.append(BaseAddressEntry(origin + start, r.pos - start, address_at(index)))
        elif kind == _DW_LLE_BASE_ADDRESS:
            base = _address(r, address_size)
            out.append(BaseAddressEntry(origin + start, r.pos - start, base))
        else:
            out.append(_location_v5(r, origin, start, kind, address_size, address_at))


def _location_v5(r: ByteReader, origin: int, start: int, kind: int, address_size: int,
                 address_at: Callable) -> LocationEntry:
    # Bounds as pyelftools' entry_translate makes them: offset pairs are
    # relative to the base, default locations span (-1, -1).
    if kind == _DW_LLE_OFFSET_PAIR:
        low, high, absolute = r.uleb(), r.uleb(), False
    elif kind == _DW_LLE_START_LENGTH:
        low = _address(r, address_size)
        high, absolute = low + r.uleb(), True
    elif kind == _DW_LLE_START_END:
        low, high, absolute = _address(r, address_size), _address(r, address_size), True
    elif kind == _DW_LLE_STARTX_LENGTH:
        low = address_at(r.uleb())
        high, absolute = low + r.uleb(), True
    elif kind == _DW_LLE_STARTX_ENDX:
        low = address_at(r.uleb())
        high, absolute = address_at(r.uleb()), True
    elif kind == _DW_LLE_DEFAULT_LOCATION:
        low, high, absolute = -1, -1, True
    else:
        raise Unreadable(f"DW_LLE code 0x{kind:x}")
    expr = _bytes(r, r.uleb())
    return LocationEntry(origin + start, r.pos - start, low, high, expr, absolute)


def _byte(r: ByteReader) -> int:
    value = r.data[r.pos]                  # IndexError past the end
    r.pos += 1
    return value


def _address(r: ByteReader, size: int) -> int:
    if r.pos + size > len(r.data):
        raise IndexError(r.pos)
    return r.u(size)


def _bytes(r: ByteReader, length: int) -> list[int]:
    if r.pos + length > len(r.data):
        raise IndexError(r.pos)
    value = list(r.data[r.pos:r.pos + length])
    r.pos += length
    return value
