"""Direct byte decoders for the two things find_lines reads from EVERY CU:
the top DIE's DW_AT_stmt_list/DW_AT_comp_dir, and the line-program file
table (DWARF 5 sections 7.5.1, 7.5.3 and 6.2.4.1; DWARF 4 section 6.2.4).

pyelftools parses a CU's whole abbreviation table before its first DIE and
decodes file tables with construct: ~18 ms per CU, 2.7 s for libpython's
146 CUs. Reading just these bytes takes well under 1 ms per CU. Everything
else, including the rows of the one line program needed, stays with
pyelftools.
"""
from __future__ import annotations

import functools
import re
import struct

_DW_LNCT_PATH = 0x1
_DW_LNCT_DIRECTORY_INDEX = 0x2
# DW_FORM_* codes that may appear in DWARF 5 entry formats, and their sizes
# (None: variable length, decoded in _read_form).
_FIXED_FORMS = {0x0B: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x1E: 16}
_FORM_STRING, _FORM_LINE_STRP, _FORM_STRP = 0x08, 0x1F, 0x0E
_FORM_UDATA, _FORM_BLOCK, _FORM_SDATA = 0x0F, 0x09, 0x0D
# GCC's DWARF 5 entry formats: directories by path, files by path and
# directory index.
_GCC_DIRECTORIES = ((_DW_LNCT_PATH, _FORM_LINE_STRP),)
_GCC_FILES = ((_DW_LNCT_PATH, _FORM_LINE_STRP), (_DW_LNCT_DIRECTORY_INDEX, _FORM_UDATA))
_U32 = struct.Struct("<I")


class UnsupportedHeader(Exception):
    """A form or unit type this decoder does not handle (e.g. DW_FORM_strx,
    split units); the caller falls back to pyelftools."""


def uleb_at(data: bytes, pos: int) -> tuple[int, int]:
    """(ULEB128 value at `pos`, the position after it)."""
    byte = data[pos]
    if byte < 0x80:                      # most are one byte: no loop
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7


def sleb_at(data: bytes, pos: int) -> tuple[int, int]:
    """(SLEB128 value at `pos`, the position after it)."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value - (1 << shift) if byte & 0x40 else value), pos


class ByteReader:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def u(self, size: int) -> int:
        value = int.from_bytes(self.data[self.pos:self.pos + size], "little")
        self.pos += size
        return value

    def uleb(self) -> int:
        value, self.pos = uleb_at(self.data, self.pos)
        return value

    def sleb(self) -> int:
        value, self.pos = sleb_at(self.data, self.pos)
        return value

    def cstring(self) -> bytes:
        end = self.data.index(b"\0", self.pos)
        text = self.data[self.pos:end]
        self.pos = end + 1
        return text


def read_file_tables(line: bytes, offset: int, line_str: bytes, debug_str: bytes):
    """-> (version, directories, [(name, dir_index)]) for the line program
    at `offset` of .debug_line."""
    r = ByteReader(line, offset)
    (length,) = struct.unpack_from("<I", line, offset)
    offset_size = 4
    r.pos += 4
    if length == 0xFFFFFFFF:
        r.pos += 8
        offset_size = 8
    version = r.u(2)
    if version >= 5:
        r.pos += 2                           # address_size, segment_selector_size
    r.pos += offset_size                     # header_length
    r.pos += 5 if version >= 4 else 4        # min_inst_length [max_ops] is_stmt base range
    opcode_base = r.u(1)
    r.pos += opcode_base - 1                 # standard_opcode_lengths
    if version < 5:
        return version, *_v4_tables(r)
    strings = {_FORM_LINE_STRP: line_str, _FORM_STRP: debug_str}
    dirs = [path for path, _ in _v5_entries(r, offset_size, strings)]
    return version, dirs, _v5_entries(r, offset_size, strings)


def _v4_tables(r: ByteReader):
    dirs = []
    while (d := r.cstring()):
        dirs.append(d)
    files = []
    while (name := r.cstring()):
        dir_index = r.uleb()
        r.uleb(), r.uleb()                   # mtime, length
        files.append((name, dir_index))
    return dirs, files


def _v5_entries(r: ByteReader, offset_size: int, strings: dict[int, bytes]) -> list[tuple]:
    """[(path, directory index)] of a DWARF 5 directory or file table."""
    formats = tuple((r.uleb(), r.uleb()) for _ in range(r.u(1)))
    count = r.uleb()
    if formats == _GCC_DIRECTORIES and offset_size == 4:
        return _line_strings(r, count, 0, strings[_FORM_LINE_STRP])
    if formats == _GCC_FILES and offset_size == 4:
        return _line_strings(r, count, 1, strings[_FORM_LINE_STRP])
    entries = []
    for _ in range(count):
        entry = {content: _read_form(r, form, offset_size, strings) for content, form in formats}
        entries.append((entry.get(_DW_LNCT_PATH) or b"", entry.get(_DW_LNCT_DIRECTORY_INDEX, 0)))
    return entries


def _line_strings(r: ByteReader, count: int, index_bytes: int, table: bytes) -> list[tuple]:
    # What GCC writes (a .debug_line_str offset, then a one-byte directory
    # index for files): a third of a cold `info line`'s header reading
    # went to the generic decoder.
    data, pos, out = r.data, r.pos, []
    for _ in range(count):
        (at,) = _U32.unpack_from(data, pos)
        dir_index = data[pos + 4] if index_bytes else 0
        if dir_index >= 0x80:
            raise UnsupportedHeader("directory index of more than one byte")
        out.append((table[at:table.index(b"\0", at)], dir_index))
        pos += 4 + index_bytes
    r.pos = pos
    return out


def _read_form(r: ByteReader, form: int, offset_size: int, strings: dict[int, bytes]):
    if form in _FIXED_FORMS:
        return r.u(_FIXED_FORMS[form])
    if form == _FORM_STRING:
        return r.cstring()
    if form in strings:
        at = r.u(offset_size)
        table = strings[form]
        return table[at:table.index(b"\0", at)]
    if form == _FORM_UDATA or form == _FORM_SDATA:
        return r.uleb()
    if form == _FORM_BLOCK:
        size = r.uleb()
        r.pos += size
        return None
    raise UnsupportedHeader(f"line table form 0x{form:x}")


# ------------------------------------------------------- CU top DIE fields

_DW_AT_STMT_LIST, _DW_AT_COMP_DIR = 0x10, 0x1B
_DW_UT_COMPILE, _DW_UT_PARTIAL = 0x01, 0x03
_FORM_IMPLICIT_CONST, _FORM_INDIRECT, _FORM_FLAG_PRESENT = 0x21, 0x16, 0x19
# An abbreviation declaration: code (not 0: that ends the table), tag,
# DW_CHILDREN, then (attribute, form) pairs, a DW_FORM_implicit_const one
# with its SLEB128 value, up to the (0, 0) pair. LEB128s end at a byte
# below 0x80; an attribute is never 0.
_LEB = rb"[\x80-\xff]*[\x00-\x7f]"
_NONZERO_LEB = rb"[\x80-\xff]*[\x01-\x7f]"
_DECLARATION = re.compile(
    rb"(" + _NONZERO_LEB + rb")(" + _LEB + rb")([\x00\x01])((?:" + _NONZERO_LEB +
    rb"(?>\x21" + _LEB + rb"|" + _LEB + rb"))*+)\x00\x00", re.DOTALL)
_OFFSET_FORMS = (0x0E, 0x10, 0x17, 0x1D, 0x1F, 0x1F20, 0x1F21)   # strp, ref_addr, sec_offset, ...
_ULEB_FORMS = (0x0D, 0x0F, 0x15, 0x1A, 0x1B, 0x22, 0x23)          # sdata, udata, ref_udata, strx, addrx, ...
_SIZED_FORMS = {0x0B: 1, 0x0C: 1, 0x11: 1, 0x25: 1, 0x29: 1, 0x05: 2, 0x12: 2, 0x26: 2, 0x2A: 2,
                0x27: 3, 0x2B: 3, 0x06: 4, 0x13: 4, 0x1C: 4, 0x28: 4, 0x2C: 4, 0x07: 8, 0x14: 8,
                0x20: 8, 0x24: 8, 0x1E: 16}
_BLOCK_LENGTH = {0x0A: 1, 0x03: 2, 0x04: 4}                       # block1/2/4


def read_cu_line_info(info: bytes, abbrev: bytes, cu_offset: int, debug_str: bytes,
                      line_str: bytes) -> tuple[int | None, bytes]:
    """(DW_AT_stmt_list, DW_AT_comp_dir) of the CU at `cu_offset`."""
    r = ByteReader(info, cu_offset)
    header = _unit_header(r)
    if header is None:
        raise UnsupportedHeader("not a compile unit")
    offset_size, address_size, abbrev_offset = header
    specs = _abbrev_specs(abbrev, abbrev_offset, r.uleb())
    strings = {_FORM_LINE_STRP: line_str, _FORM_STRP: debug_str}
    stmt_list, comp_dir = None, b""
    for attr, form in specs:
        value = _skip_or_read(r, form, offset_size, address_size, strings)
        if attr == _DW_AT_STMT_LIST:
            stmt_list = value
        elif attr == _DW_AT_COMP_DIR:
            if not isinstance(value, bytes):
                raise UnsupportedHeader("indirect DW_AT_comp_dir")
            comp_dir = value
    return stmt_list, comp_dir


def _unit_header(r: ByteReader) -> tuple[int, int, int] | None:
    """(offset size, address size, abbreviation table offset) of the unit
    whose header starts at r.pos, leaving r at its first DIE; None for a
    type or skeleton unit."""
    offset_size = 4
    if r.u(4) == 0xFFFFFFFF:
        r.pos += 8
        offset_size = 8
    if r.u(2) >= 5:
        if r.u(1) not in (_DW_UT_COMPILE, _DW_UT_PARTIAL):
            return None
        address_size = r.u(1)
        return offset_size, address_size, r.u(offset_size)
    abbrev_offset = r.u(offset_size)
    return offset_size, r.u(1), abbrev_offset


def read_abbreviations(abbrev: bytes, offset: int) -> dict[int, tuple[int, tuple, bool]]:
    """code -> (tag, ((attribute, form), ...), has_children) for the
    abbreviation table at `offset` of .debug_abbrev (DWARF 5 section 7.5.3)."""
    return {code[0] if len(code) == 1 else uleb_at(code, 0)[0]: _decoded(declaration)
            for code, declaration in _declarations(abbrev, offset)}


def read_declaration(abbrev: bytes, offset: int, code: int) -> tuple[int, tuple, bool] | None:
    """Declaration `code` of the table at `offset`, read no further than
    it and decoding no other; None when the table has none."""
    wanted = uleb_bytes(code)
    for found_code, declaration in _declarations(abbrev, offset):
        if found_code == wanted:
            return _decoded(declaration)
    return None


def _declarations(abbrev: bytes, pos: int):
    """The table's declarations in order: (the code's LEB128 bytes, a match
    of _DECLARATION or, for an encoding it does not take (padded LEB128s,
    DW_CHILDREN not 0 or 1), the decoded declaration)."""
    # The pattern's own search loop finds one declaration after another
    # (it matches where the last ended), and only the wanted ones are
    # decoded: the CU's own is near the end of a GCC table, which lists
    # declarations by use, and walking to it was a cold look-up's largest cost.
    while abbrev[pos] != 0:
        for found in _DECLARATION.finditer(abbrev, pos):
            if found.start() != pos:
                break
            pos = found.end()
            yield found.group(1), found
            if abbrev[pos] == 0:
                return
        if abbrev[pos] != 0:
            code, declaration, pos = _declaration_at(abbrev, pos)
            yield uleb_bytes(code), declaration


def _decoded(declaration) -> tuple[int, tuple, bool]:
    if isinstance(declaration, tuple):
        return declaration
    _, tag, children, specs = declaration.groups()
    # Attribute lists repeat across CUs: each distinct one is decoded once.
    return (tag[0] if len(tag) == 1 else uleb_at(tag, 0)[0], _attribute_specs(specs),
            children == b"\x01")


def uleb_bytes(value: int) -> bytes:
    """`value` as the shortest ULEB128: the only encoding _DECLARATION
    takes, and what a needle searched for in .debug_info holds."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def _declaration_at(abbrev: bytes, pos: int) -> tuple[int, tuple, int]:
    """(code, declaration, next position) of whatever encoding the regular
    expression does not take; IndexError past the section's end."""
    code, pos = uleb_at(abbrev, pos)
    tag, pos = uleb_at(abbrev, pos)
    has_children, pos = bool(abbrev[pos]), pos + 1
    specs = []
    while True:
        attr, pos = uleb_at(abbrev, pos)
        form, pos = uleb_at(abbrev, pos)
        if attr == 0 and form == 0:
            return code, (tag, tuple(specs), has_children), pos
        if form == _FORM_IMPLICIT_CONST:
            _, pos = sleb_at(abbrev, pos)
        specs.append((attr, form))


@functools.lru_cache(maxsize=16384)
def _attribute_specs(data: bytes) -> tuple[tuple[int, int], ...]:
    """((attribute, form), ...) of a declaration's attribute bytes; an
    implicit constant's value stays in the abbreviation, skipped."""
    specs, pos = [], 0
    while pos < len(data):
        attr, pos = uleb_at(data, pos)
        form, pos = uleb_at(data, pos)
        if form == _FORM_IMPLICIT_CONST:
            _, pos = sleb_at(data, pos)
        specs.append((attr, form))
    return tuple(specs)


def attribute_at(info: bytes, start: int, pos: int, abbreviations: dict, offset_size: int,
                 address_size: int) -> tuple[int, int, tuple] | None:
    """If a DIE starts at `start`: (its tag, the attribute whose value
    starts at `pos`, all its (attribute, form) specs). None when the bytes
    there are no DIE of this CU's abbreviations, or none of its attributes
    starts at `pos`. Only the bytes up to `pos` are decoded."""
    r = ByteReader(info, start)
    try:
        entry = abbreviations.get(r.uleb())
        if entry is None:
            return None
        tag, specs, _ = entry
        for attr, form in specs:
            if r.pos == pos and form not in (_FORM_FLAG_PRESENT, _FORM_IMPLICIT_CONST):
                return tag, attr, specs
            if r.pos > pos:
                return None
            _skip_or_read(r, form, offset_size, address_size, {})
    except (UnsupportedHeader, IndexError, ValueError):
        return None
    return None


def _abbrev_specs(abbrev: bytes, offset: int, code: int) -> list[tuple[int, int]]:
    entry = read_declaration(abbrev, offset, code)
    if entry is None:
        raise UnsupportedHeader(f"abbreviation {code} not found")
    return list(entry[1])


def _skip_or_read(r: ByteReader, form: int, offset_size: int, address_size: int, strings):
    if form == _FORM_INDIRECT:
        form = r.uleb()
    if form in strings:
        at = r.u(offset_size)
        return strings[form][at:strings[form].index(b"\0", at)]
    if form == _FORM_STRING:
        return r.cstring()
    if form in _OFFSET_FORMS:
        return r.u(offset_size)
    if form in _SIZED_FORMS:
        return r.u(_SIZED_FORMS[form])
    if form in _ULEB_FORMS:
        return r.uleb()
    if form == 0x01:                               # DW_FORM_addr
        return r.u(address_size)
    if form in (_FORM_FLAG_PRESENT, _FORM_IMPLICIT_CONST):
        return None
    if form in (_FORM_BLOCK, 0x18) or form in _BLOCK_LENGTH:   # block, exprloc, block1/2/4
        size = r.uleb() if form in (_FORM_BLOCK, 0x18) else r.u(_BLOCK_LENGTH[form])
        r.pos += size
        return None
    raise UnsupportedHeader(f"DIE form 0x{form:x}")


# ------------------------------------------------- a CU's top-level names

_DW_AT_SIBLING, _DW_AT_NAME, _DW_AT_DECLARATION = 0x01, 0x03, 0x3C
_CU_RELATIVE_REFS = (0x11, 0x12, 0x13, 0x14, 0x15)                 # ref1/2/4/8, ref_udata
_FORM_REF_ADDR = 0x10


def read_top_level_names(info: bytes, abbrev: bytes, cu_offset: int, debug_str: bytes,
                         line_str: bytes, tags: frozenset[int]) -> list[tuple[int, bytes, int, bool]]:
    """(tag, DW_AT_name, DIE offset, has DW_AT_declaration) of the direct
    children of the CU at `cu_offset` whose tag is in `tags` and that have
    a name."""
    found = []
    for offset, tag, attrs in read_top_level_dies(info, abbrev, cu_offset, debug_str, line_str,
                                                  tags, (_DW_AT_NAME, _DW_AT_DECLARATION)):
        name = attrs.get(_DW_AT_NAME)
        if name is not None:
            if not isinstance(name[1], bytes):
                raise UnsupportedHeader("DW_AT_name through a string index")
            found.append((tag, name[1], offset, attrs.get(_DW_AT_DECLARATION, (0, 0))[1] != 0))
    return found


def read_top_level_dies(info: bytes, abbrev: bytes, cu_offset: int, debug_str: bytes,
                        line_str: bytes, tags: frozenset[int],
                        kept: tuple[int, ...],
                        descend: frozenset[int] = frozenset()) -> list[tuple[int, int, dict[int, tuple]]]:
    """(DIE offset, tag, {attribute: (form, value)} of the `kept` ones) of
    the direct children of the CU at `cu_offset` whose tag is in `tags`,
    and of the children of those with a tag in `descend` (rustc nests a
    function in its module's namespace). A string form's value is its
    bytes; a block's is None. Other subtrees are skipped through
    DW_AT_sibling (GCC gives every top-level DIE with children one), else
    decoded DIE by DIE."""
    r = ByteReader(info, cu_offset)
    end = cu_offset + 4 + struct.unpack_from("<I", info, cu_offset)[0]
    if end == cu_offset + 4 + 0xFFFFFFFF:
        end = cu_offset + 12 + struct.unpack_from("<Q", info, cu_offset + 4)[0]
    header = _unit_header(r)
    if header is None:
        return []                                   # type and skeleton units: none of ours
    offset_size, address_size, abbrev_offset = header
    table = read_abbreviations(abbrev, abbrev_offset)
    walker = _DieWalker(r, table, cu_offset, offset_size, address_size,
                        {_FORM_LINE_STRP: line_str, _FORM_STRP: debug_str}, frozenset(kept))
    top = walker.next_die()
    if top is None or not top[3]:
        return []
    found, depth = [], 0
    while r.pos < end:
        die = walker.next_die()
        if die is None:               # the end of a child list
            if depth == 0:
                break
            depth -= 1
            continue
        offset, tag, attrs, has_children = die
        if tag in tags:
            found.append((offset, tag, attrs))
        if has_children and tag in descend:
            depth += 1
        elif has_children:
            walker.skip_children(attrs.get(_DW_AT_SIBLING))
    return found


class _DieWalker:
    """Decodes DIEs in order; keeps DW_AT_sibling (as a .debug_info
    offset) and the `kept` attributes (as (form, value))."""

    def __init__(self, r: ByteReader, table: dict, cu_offset: int, offset_size: int,
                 address_size: int, strings: dict, kept: frozenset[int]) -> None:
        self.r, self.table, self.cu_offset = r, table, cu_offset
        self.offset_size, self.address_size, self.strings = offset_size, address_size, strings
        self.kept = kept

    def next_die(self):
        """(offset, tag, kept attributes, has_children); None at a null entry."""
        offset = self.r.pos
        code = self.r.uleb()
        if code == 0:
            return None
        entry = self.table.get(code)
        if entry is None:
            raise UnsupportedHeader(f"abbreviation {code} not found")
        tag, specs, has_children = entry
        attrs = {}
        for attr, form in specs:
            value = _skip_or_read(self.r, form, self.offset_size, self.address_size,
                                  self.strings)
            if attr == _DW_AT_SIBLING:
                attrs[attr] = value if form == _FORM_REF_ADDR else \
                    (self.cu_offset + value if form in _CU_RELATIVE_REFS else None)
            elif attr in self.kept:
                attrs[attr] = (form, value)
        return offset, tag, attrs, has_children

    def skip_children(self, sibling: int | None) -> None:
        if sibling is not None and sibling > self.r.pos:
            self.r.pos = sibling
            return
        depth = 1
        while depth:
            die = self.next_die()
            if die is None:
                depth -= 1
            elif die[3]:
                if (die[2].get(_DW_AT_SIBLING) or 0) > self.r.pos:
                    self.r.pos = die[2][_DW_AT_SIBLING]
                else:
                    depth += 1


# ------------------------------------------- names through .debug_str_offsets

_STRX_SIZES = {0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4}                 # strx1..strx4
_FORM_STRX = 0x1A                                                   # strx, ULEB128
_DW_AT_STR_OFFSETS_BASE = 0x72


def read_str_offsets_base(info: bytes, abbrev: bytes, cu_offset: int) -> int | None:
    """DW_AT_str_offsets_base of the CU at `cu_offset` (DWARF 5: clang's
    names are indexes into that CU's table of .debug_str offsets)."""
    r = ByteReader(info, cu_offset)
    header = _unit_header(r)
    if header is None:
        return None
    offset_size, address_size, abbrev_offset = header
    walker = _DieWalker(r, read_abbreviations(abbrev, abbrev_offset), cu_offset, offset_size,
                        address_size, {}, frozenset((_DW_AT_STR_OFFSETS_BASE,)))
    top = walker.next_die()
    value = top[2].get(_DW_AT_STR_OFFSETS_BASE) if top is not None else None
    return value[1] if value is not None else None


def named_die_pattern(table: dict, tags: frozenset[int], having: frozenset[int],
                      names: frozenset[int], index: int, offset_size: int,
                      address_size: int) -> re.Pattern | None:
    """A pattern matching the start of each DIE of the abbreviation table
    whose tag is in `tags`, that has every attribute of `having`, and one
    of `names` in a string-index form holding `index` (one alternative per
    such attribute: clang writes the linkage name, then the name): its
    abbreviation code, the fixed-size attributes before that one, the
    index. None when no abbreviation can (a variable-size attribute before
    the name is not searched for: clang lists names first or after
    fixed-size ones)."""
    alternatives = []
    for code, (tag, specs, _) in table.items():
        if tag not in tags or not having <= {attr for attr, _ in specs}:
            continue
        lead = 0
        for attr, form in specs:
            if attr in names and (form in _STRX_SIZES or form == _FORM_STRX):
                value = uleb_bytes(index) if form == _FORM_STRX else \
                    index.to_bytes(_STRX_SIZES[form], "little") if index < 1 << 8 * _STRX_SIZES[form] \
                    else None
                if value is not None:      # each name attribute (clang: linkage name, then name)
                    alternatives.append(re.escape(uleb_bytes(code)) + b"." * lead + re.escape(value))
            size = _fixed_size(form, offset_size, address_size)
            if size is None:
                break
            lead += size
    if not alternatives:
        return None
    return re.compile(b"|".join(b"(?:" + a + b")" for a in alternatives), re.DOTALL)


def _fixed_size(form: int, offset_size: int, address_size: int) -> int | None:
    if form in _SIZED_FORMS:
        return _SIZED_FORMS[form]
    if form in _OFFSET_FORMS:
        return offset_size
    if form == 0x01:                               # DW_FORM_addr
        return address_size
    if form in (_FORM_FLAG_PRESENT, _FORM_IMPLICIT_CONST):
        return 0
    return None
