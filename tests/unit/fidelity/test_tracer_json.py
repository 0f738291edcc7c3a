"""gs-cgen's own JSON (render/text.py, what `--output json` prints) read
back by the harness equals the canonical form of the same bytes as gdb
would describe them: the harness and the renderer agree on every shape."""
from __future__ import annotations

import struct

from fidelity.compare import MISMATCH, TRACER_ONLY, from_gdb, from_tracer, verdict
from gs_cgen.dwarf.types import (ArrayType, EnumType, FloatType, IntType, PointerType,
                                 StructMember, StructType)
from gs_cgen.render.text import format_value, value_json, value_status
from gs_cgen.render.values import decode_object

INT = IntType("int", 4, True)
CHAR = IntType("char", 1, True, is_char=True)
DOUBLE = FloatType("double", 8)
LONG_DOUBLE = FloatType("long double", 16)
COLOR = EnumType("color", 4, False, (("RED", 0), ("GREEN", 5), ("BLUE", 6)))
RECORD = StructType("struct", "record", 40, lambda: (
    StructMember("id", INT, 0),
    StructMember("level", INT, 4, bit_size=4, bit_offset=0),
    StructMember("weight", DOUBLE, 8),
    StructMember("color", COLOR, 16),
    StructMember("tag", ArrayType(CHAR, 8), 20),
    StructMember("next", PointerType(lambda: INT), 32),
))


def as_json(ctype, data: bytes) -> dict:
    value = decode_object(ctype, data)
    entry = {"expr": "v", "type": "t", "value": value_json(value), "status": value_status(value)}
    if entry["status"] != "ok":
        entry["error"] = format_value(value)
    return entry


def test_a_struct_reads_back_exactly():
    data = struct.pack("<iBxxxdI8sxxxxQ", -7, 0b1101, -0.5, 6, b"tagged\0\0", 0x5555_0000_1234)
    gdb = {"k": "struct", "fields": [
        ["id", {"k": "int", "v": -7}], ["level", {"k": "int", "v": -3}],
        ["weight", {"k": "float", "bits": struct.pack(">d", -0.5).hex(), "size": 8}],
        ["color", {"k": "enum", "v": 6, "name": "BLUE"}],
        ["tag", {"k": "chars", "hex": b"tagged".hex()}],
        ["next", {"k": "ptr", "v": 0x5555_0000_1234}]]}
    assert verdict(from_gdb(gdb), from_tracer(as_json(RECORD, data), gdb)) == ("MATCH", [])


def test_an_unnamed_enum_value_reads_back_as_its_number():
    gdb = {"k": "enum", "v": 9, "name": None}
    assert from_tracer(as_json(COLOR, struct.pack("<I", 9)), gdb) == from_gdb(gdb) == 9


def test_long_double_is_never_a_wrong_value():
    """Today `<UNKNOWN_TYPE_16_BYTES>` (unavailable); whatever it becomes,
    it must read back as gdb's value or as unavailable."""
    data = (0x4000D000000000000000).to_bytes(10, "little") + bytes(6)       # 3.25
    gdb = {"k": "ldouble", "bits": "4000d000000000000000"}
    assert verdict(from_gdb(gdb), from_tracer(as_json(LONG_DOUBLE, data), gdb))[0] not in \
        (MISMATCH, TRACER_ONLY)
