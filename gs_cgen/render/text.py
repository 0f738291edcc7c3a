"""Decoded values → the text CONTRACT.md specifies (shared by plain,
pretty and json renderers)."""
from __future__ import annotations

from gs_cgen.dwarf.types import BoolType, CType, EnumType, strip, type_size
from gs_cgen.render.decode import Value, ValueStatus
from gs_cgen.script.ast import FormatKind


def value_text(value: Value, kind: FormatKind = FormatKind.DEFAULT) -> str:
    if value.status is not ValueStatus.OK:
        return error_text(value)
    base = strip(value.ctype) if value.ctype is not None else None
    if kind in (FormatKind.HEX, FormatKind.HEX_UPPER, FormatKind.POINTER):
        return _hex(value.data, value.ctype, kind)
    if isinstance(base, BoolType):
        return "true" if value.data else "false"
    if isinstance(base, EnumType):
        return enum_text(base, value.data)
    return str(value.data)


def error_text(value: Value) -> str:
    match value.status:
        case ValueStatus.OPTIMIZED_OUT:
            return "<OPTIMIZED_OUT>"
        case ValueStatus.NULL_DEREF:
            return "<error: null pointer dereference>"
        case ValueStatus.READ_ERROR | ValueStatus.ACCESS_ERROR:
            return f"<error: read failed at 0x{value.error_address or 0:x}>"
        case ValueStatus.OFFSETS_UNAVAILABLE:
            return "<error: offsets unavailable>"
        case ValueStatus.UNAVAILABLE:
            return f"<error: {value.detail}>"
        case ValueStatus.ZERO_LENGTH:
            return "<error: zero length>"
        case ValueStatus.TRUNCATED:
            return "... <truncated>"
    return f"<error: {value.status.value}>"


def enum_text(enum: EnumType, number: int) -> str:
    name = enum.name or "enum"
    for enumerator, enum_value in enum.enumerators:
        if enum_value == number:
            return f"{name}::{enumerator}"
    return f"{name}::<{number}>"


def _hex(number, ctype: CType | None, kind: FormatKind) -> str:
    """Rust-style: two's complement at the value's width, no prefix for
    {:x}/{:X}; {:p} prints 0x-prefixed lowercase."""
    width = type_size(ctype) if ctype is not None else 8
    unsigned = int(number) & ((1 << (8 * width)) - 1)
    if kind is FormatKind.HEX_UPPER:
        return f"{unsigned:X}"
    if kind is FormatKind.POINTER:
        return f"0x{unsigned:x}"
    return f"{unsigned:x}"
