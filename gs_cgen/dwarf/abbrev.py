"""pyelftools' abbreviation tables, decoded straight from .debug_abbrev.

pyelftools parses a CU's whole abbreviation table with construct before it
reads the CU's first DIE: ~20 ms for one libpython3.11 CU, paid again for
every CU a look-up touches. Decoding the same bytes directly (DWARF 5
section 7.5.3) takes well under 1 ms. The objects built are pyelftools'
own (AbbrevTable, AbbrevDecl, and Containers shaped exactly as its
Dwarf_abbrev_declaration struct makes them), so DIE parsing is unchanged;
anything this decoder does not know (a DW_CHILDREN value other than 0/1, a
truncated table) falls back to pyelftools' own parse.
"""
from __future__ import annotations

from collections.abc import Callable

from elftools.construct.lib.container import Container
from elftools.dwarf.abbrevtable import AbbrevDecl, AbbrevTable
from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_CHILDREN, ENUM_DW_FORM, ENUM_DW_TAG

from gs_cgen.dwarf.raw import ByteReader


def _decoding(mapping: dict) -> dict:
    # As construct's SymmetricMapping reverses an Enum (the last name of a
    # value wins); codes not in it decode to themselves (`_default_=Pass`).
    return {code: name for name, code in mapping.items() if name != "_default_"}


_TAGS, _ATTRS, _FORMS = _decoding(ENUM_DW_TAG), _decoding(ENUM_DW_AT), _decoding(ENUM_DW_FORM)
_CHILDREN = _decoding(ENUM_DW_CHILDREN)
_FORM_IMPLICIT_CONST = ENUM_DW_FORM["DW_FORM_implicit_const"]


class FastAbbreviations:
    """Stands in for `DWARFInfo.get_abbrev_table` (install with
    `install`): offset -> AbbrevTable, each decoded once."""

    def __init__(self, dwarfinfo, section_bytes: Callable[[], bytes]) -> None:
        self._dwarfinfo = dwarfinfo
        self._parse = dwarfinfo.get_abbrev_table      # pyelftools' own, the fallback
        self._section_bytes = section_bytes           # read on first use
        self._tables: dict[int, AbbrevTable] = {}

    @classmethod
    def install(cls, dwarfinfo, section_bytes: Callable[[], bytes]) -> None:
        """Make `dwarfinfo` (a pyelftools DWARFInfo) decode its abbreviation
        tables here; `section_bytes` returns .debug_abbrev's bytes."""
        if dwarfinfo.debug_abbrev_sec is not None:
            dwarfinfo.get_abbrev_table = cls(dwarfinfo, section_bytes)

    def __call__(self, offset: int) -> AbbrevTable:
        table = self._tables.get(offset)
        if table is None:
            try:
                table = self._decoded(offset)
            except (KeyError, IndexError):
                table = self._parse(offset)
            self._tables[offset] = table
        return table

    def _decoded(self, offset: int) -> AbbrevTable:
        data = self._section_bytes()
        if not 0 <= offset < len(data):
            raise IndexError(offset)       # pyelftools' own parse reports it
        # What AbbrevTable.__init__ sets, with the map decoded here.
        table = AbbrevTable.__new__(AbbrevTable)
        table.structs, table.offset = self._dwarfinfo.structs, offset
        table.stream = self._dwarfinfo.debug_abbrev_sec.stream
        table._abbrev_map = decode_abbreviations(data, offset)
        return table


def decode_abbreviations(data: bytes, offset: int) -> dict[int, AbbrevDecl]:
    """code -> AbbrevDecl for the table at `offset`, as pyelftools'
    AbbrevTable._parse_abbrev_table makes them. KeyError for a
    DW_CHILDREN value pyelftools would reject, IndexError for a table
    that runs past the section."""
    r, found = ByteReader(data, offset), {}
    while (code := r.uleb()) != 0:
        tag = r.uleb()
        children = _CHILDREN[r.u(1)]
        specs = []
        while True:
            attr, form = r.uleb(), r.uleb()
            if attr == 0 and form == 0:
                break
            value = r.sleb() if form == _FORM_IMPLICIT_CONST else None
            specs.append(Container(name=_ATTRS.get(attr, attr), form=_FORMS.get(form, form),
                                   value=value))
        if r.pos > len(data):
            raise IndexError(r.pos)
        found[code] = AbbrevDecl(code, Container(tag=_TAGS.get(tag, tag), children_flag=children,
                                                 attr_spec=specs))
    return found
