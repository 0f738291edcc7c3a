"""A hand-written DWARF 4 unit for a function whose debug info no compiler
we have emits: a stack-passed parameter described as
DW_OP_entry_value(DW_OP_breg7 +8), in a compile unit that has no address
ranges of its own (both optional in DWARF) and no .debug_aranges. The
shape of the unit GhostScope's entry_value_recovery e2e test writes with
gimli; used by tests/live/test_stack_argument_live.py and
tests/ghostscope/run_e2e.py."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from gs_cgen.dwarf.raw import uleb_bytes

_DW_FORM_ADDR, _DW_FORM_DATA1, _DW_FORM_STRING, _DW_FORM_UDATA = 0x01, 0x0B, 0x08, 0x0F
_DW_FORM_REF4, _DW_FORM_EXPRLOC = 0x13, 0x18
_DW_TAG_COMPILE_UNIT, _DW_TAG_BASE_TYPE, _DW_TAG_SUBPROGRAM = 0x11, 0x24, 0x2E
_DW_TAG_FORMAL_PARAMETER = 0x05
_DW_AT_NAME, _DW_AT_BYTE_SIZE, _DW_AT_ENCODING, _DW_AT_LOW_PC = 0x03, 0x0B, 0x3E, 0x11
_DW_AT_HIGH_PC, _DW_AT_TYPE, _DW_AT_LOCATION = 0x12, 0x49, 0x02
_DW_ATE_SIGNED, _DW_OP_BREG7, _DW_OP_ENTRY_VALUE = 0x05, 0x77, 0xA3


def sleb(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        done = (n == 0 and not byte & 0x40) or (n == -1 and byte & 0x40)
        out.append(byte | (0 if done else 0x80))
        if done:
            return bytes(out)


def stack_argument_unit(cu_name: str, function: str, address: int, size: int,
                        parameter: str) -> dict[str, bytes]:
    """.debug_abbrev and .debug_info: `int function(...)` at [address,
    address + size) whose `int parameter` is the first stack-passed
    argument, DW_OP_entry_value(DW_OP_breg7 +8). Strings are inline."""
    abbrevs = [(1, _DW_TAG_COMPILE_UNIT, True, [(_DW_AT_NAME, _DW_FORM_STRING)]),
               (2, _DW_TAG_BASE_TYPE, False, [(_DW_AT_NAME, _DW_FORM_STRING),
                                              (_DW_AT_BYTE_SIZE, _DW_FORM_DATA1),
                                              (_DW_AT_ENCODING, _DW_FORM_DATA1)]),
               (3, _DW_TAG_SUBPROGRAM, True, [(_DW_AT_NAME, _DW_FORM_STRING),
                                              (_DW_AT_LOW_PC, _DW_FORM_ADDR),
                                              (_DW_AT_HIGH_PC, _DW_FORM_UDATA)]),
               (4, _DW_TAG_FORMAL_PARAMETER, False, [(_DW_AT_NAME, _DW_FORM_STRING),
                                                     (_DW_AT_TYPE, _DW_FORM_REF4),
                                                     (_DW_AT_LOCATION, _DW_FORM_EXPRLOC)])]
    abbrev = b"".join(uleb_bytes(code) + uleb_bytes(tag) + bytes([children]) +
                      b"".join(uleb_bytes(a) + uleb_bytes(f) for a, f in attributes) + b"\0\0"
                      for code, tag, children, attributes in abbrevs) + b"\0"
    header_size = 4 + 2 + 4 + 1               # unit_length, version, abbrev offset, address size
    dies = uleb_bytes(1) + cu_name.encode() + b"\0"
    int_offset = header_size + len(dies)
    dies += uleb_bytes(2) + b"int\0" + bytes([4, _DW_ATE_SIGNED])
    dies += uleb_bytes(3) + function.encode() + b"\0" + address.to_bytes(8, "little") + uleb_bytes(size)
    inner = bytes([_DW_OP_BREG7]) + sleb(8)
    expression = bytes([_DW_OP_ENTRY_VALUE]) + uleb_bytes(len(inner)) + inner
    dies += uleb_bytes(4) + parameter.encode() + b"\0" + int_offset.to_bytes(4, "little") + \
        uleb_bytes(len(expression)) + expression
    dies += b"\0\0"
    body = (4).to_bytes(2, "little") + (0).to_bytes(4, "little") + bytes([8]) + dies
    return {".debug_abbrev": abbrev, ".debug_info": len(body).to_bytes(4, "little") + body,
            ".debug_str": b""}


def replace_debug_info(debug_file: Path, sections: dict[str, bytes]) -> None:
    """Put `sections` into a debug file (objcopy --only-keep-debug's
    output) and drop its .debug_aranges, which would name the old units."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in sections.items():
            path = Path(tmp) / name.lstrip(".")
            path.write_bytes(data)
            subprocess.run(["objcopy", "--update-section", f"{name}={path}", str(debug_file)],
                           check=True, capture_output=True)
    subprocess.run(["objcopy", "--remove-section", ".debug_aranges", str(debug_file)],
                   capture_output=True)
