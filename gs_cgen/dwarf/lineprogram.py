"""The rows of one line-number program, decoded from .debug_line's bytes
(DWARF 5 section 6.2.5; DWARF 2-4 differ only in the header).

pyelftools decodes a program through construct, one object per opcode:
libpython's dictobject.c (12.5k rows) took 0.15 s, a third of a cold
`info line`. This is the same state machine over the bytes; its rows equal
pyelftools' row for row (tests/unit/dwarf/test_lineprogram.py). A program
this decoder does not handle (DW_LNE_define_file, which edits the file
table, or VLIW operation indexes) raises UnsupportedHeader and the caller
uses pyelftools.
"""
from __future__ import annotations

import struct

from gs_cgen.dwarf.raw import UnsupportedHeader, sleb_at, uleb_at

# A row: (address, file, line, is_stmt, prologue_end, end_sequence, discriminator)
LineRow = tuple

_LNS_COPY, _LNS_ADVANCE_PC, _LNS_ADVANCE_LINE, _LNS_SET_FILE = 1, 2, 3, 4
_LNS_NEGATE_STMT, _LNS_CONST_ADD_PC, _LNS_FIXED_ADVANCE_PC = 6, 8, 9
_LNS_SET_PROLOGUE_END = 10
_LNE_END_SEQUENCE, _LNE_SET_ADDRESS, _LNE_DEFINE_FILE, _LNE_SET_DISCRIMINATOR = 1, 2, 3, 4


def decode_rows(line: bytes, offset: int) -> list[LineRow]:
    """Every row of the line program whose header is at `offset`, in
    program order (end_sequence rows included)."""
    header = _Header(line, offset)
    rows: list[LineRow] = []
    append = rows.append
    data, pos, end = line, header.program_start, header.program_end
    base, line_base, line_range = header.opcode_base, header.line_base, header.line_range
    step, lengths = header.min_inst_length, header.standard_lengths
    const_add = step * ((255 - base) // line_range)
    # address, file, line, is_stmt, prologue_end, discriminator: at the start of each sequence
    initial = (0, 1, 1, header.default_is_stmt, False, 0)
    address, file, row_line, is_stmt, prologue_end, discriminator = initial
    while pos < end:
        opcode = data[pos]
        pos += 1
        if opcode >= base:
            adjusted = opcode - base
            address += step * (adjusted // line_range)
            row_line += line_base + adjusted % line_range
            append((address, file, row_line, is_stmt, prologue_end, False, discriminator))
            prologue_end, discriminator = False, 0
        elif opcode == 0:
            size, pos = uleb_at(data, pos)
            next_pos = pos + size
            sub = data[pos] if size else None
            if sub == _LNE_END_SEQUENCE:
                append((address, file, row_line, False, prologue_end, True, discriminator))
                address, file, row_line, is_stmt, prologue_end, discriminator = initial
            elif sub == _LNE_SET_ADDRESS:
                address = int.from_bytes(data[pos + 1:next_pos], "little")
            elif sub == _LNE_SET_DISCRIMINATOR:
                discriminator, _ = uleb_at(data, pos + 1)
            elif sub == _LNE_DEFINE_FILE:
                raise UnsupportedHeader("DW_LNE_define_file")
            pos = next_pos
        elif opcode == _LNS_COPY:
            append((address, file, row_line, is_stmt, prologue_end, False, discriminator))
            prologue_end, discriminator = False, 0
        elif opcode == _LNS_ADVANCE_PC:
            value, pos = uleb_at(data, pos)
            address += step * value
        elif opcode == _LNS_ADVANCE_LINE:
            value, pos = sleb_at(data, pos)
            row_line += value
        elif opcode == _LNS_SET_FILE:
            file, pos = uleb_at(data, pos)
        elif opcode == _LNS_NEGATE_STMT:
            is_stmt = not is_stmt
        elif opcode == _LNS_CONST_ADD_PC:
            address += const_add
        elif opcode == _LNS_FIXED_ADVANCE_PC:
            address += data[pos] | data[pos + 1] << 8
            pos += 2
        elif opcode == _LNS_SET_PROLOGUE_END:
            prologue_end = True
        else:
            # set_column, set_basic_block, set_epilogue_begin, set_isa and
            # opcodes of later versions: no row register we keep; skip their
            # ULEB128 operands as the header counts them.
            for _ in range(lengths[opcode - 1]):
                _, pos = uleb_at(data, pos)
    return rows


class _Header:
    """The fields of a line-program header the state machine needs."""

    def __init__(self, line: bytes, offset: int) -> None:
        (length,) = struct.unpack_from("<I", line, offset)
        pos, offset_size = offset + 4, 4
        if length == 0xFFFFFFFF:
            (length,) = struct.unpack_from("<Q", line, pos)
            pos, offset_size = pos + 8, 8
        self.program_end = pos + length
        version = int.from_bytes(line[pos:pos + 2], "little")
        pos += 2
        if version < 2 or version > 5:
            raise UnsupportedHeader(f"line table version {version}")
        if version >= 5:
            pos += 2                                    # address_size, segment_selector_size
        header_length = int.from_bytes(line[pos:pos + offset_size], "little")
        pos += offset_size
        self.program_start = pos + header_length
        self.min_inst_length = line[pos]
        pos += 1
        if version >= 4:
            if line[pos] != 1:
                raise UnsupportedHeader("VLIW line table (maximum_operations_per_instruction > 1)")
            pos += 1
        self.default_is_stmt = bool(line[pos])
        self.line_base = struct.unpack_from("<b", line, pos + 1)[0]
        self.line_range = line[pos + 2]
        self.opcode_base = line[pos + 3]
        self.standard_lengths = line[pos + 4:pos + 4 + self.opcode_base - 1]
        if self.line_range == 0:
            raise UnsupportedHeader("line_range 0")

