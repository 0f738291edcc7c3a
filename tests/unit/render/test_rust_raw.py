"""`raw(x)` of a Rust enum (render/values.py decode_raw): its active
variant with the variant's DWARF members, as gdb's print/r shows it, for
a tagged layout, a niche layout and an enum in pieces. The types mirror
rustc 1.95's DWARF for `Option<u32>` (a u32 tag at 0, `Some.__0` at 4) and
`enum Slot<'a> { Free, Taken(&'a Point) }` (the pointer is the niche:
`Free` is discriminant 0, `Taken` the default variant)."""
from __future__ import annotations

import struct

from gs_cgen.dwarf.types import (IntType, PointerType, StructMember, StructType, Variant,
                                 VariantPart)
from gs_cgen.render.decode import ValueStatus
from gs_cgen.render.text import format_value, value_json
from gs_cgen.render.values import ErrorValue, decode_raw

U32 = IntType("u32", 4, False)
U64 = IntType("u64", 8, False)
POINT_REF = PointerType(lambda: U32, name="&values::Point")


def rust_struct(name, size, members=(), part=None):
    return StructType("struct", name, size, lambda: tuple(members), language="rust",
                      variants_loader=lambda: part)


def variant(discr, name, size, members=()):
    return Variant(discr, StructMember(name, rust_struct(name, size, members), 0))


OPTION_U32 = rust_struct("Option<u32>", 8, part=VariantPart(
    StructMember(None, U32, 0),
    (variant(0, "None", 8), variant(1, "Some", 8, [StructMember("__0", U32, 4)]))))

SLOT = rust_struct("Slot", 8, part=VariantPart(
    StructMember(None, U64, 0),
    (variant(0, "Free", 8), variant(None, "Taken", 8, [StructMember("__0", POINT_REF, 0)]))))


def test_a_tagged_enum_shows_its_active_variant_and_members():
    some = decode_raw(OPTION_U32, struct.pack("<II", 1, 11))
    assert format_value(some) == "Some { __0: 11 }"
    assert value_json(some) == {"variant": "Some", "fields": {"__0": 11}}
    none = decode_raw(OPTION_U32, struct.pack("<II", 0, 0xDEAD))
    assert format_value(none) == "None"
    assert value_json(none) == {"variant": "None", "fields": []}


def test_a_niche_enum_takes_the_default_variant_for_other_values():
    taken = decode_raw(SLOT, struct.pack("<Q", 0x7FFC00001000))
    assert value_json(taken) == {"variant": "Taken", "fields": {
        "__0": {"address": 0x7FFC00001000, "type": "&values::Point"}}}
    assert value_json(decode_raw(SLOT, struct.pack("<Q", 0))) == {"variant": "Free", "fields": []}


def test_an_enum_in_pieces_whose_tag_is_gone_is_optimized_out():
    # DW_OP_piece: the payload in a register, the tag optimized out
    value = decode_raw(OPTION_U32, struct.pack("<II", 0, 11), gaps=((0, 4),))
    assert isinstance(value, ErrorValue) and value.status is ValueStatus.OPTIMIZED_OUT
    # the tag there, the payload gone: the variant, its member optimized out
    partial = decode_raw(OPTION_U32, struct.pack("<II", 1, 0), gaps=((4, 8),))
    assert format_value(partial) == "Some { __0: <OPTIMIZED_OUT> }"


def test_a_discriminant_no_variant_has_is_an_error_not_a_guess():
    value = decode_raw(OPTION_U32, struct.pack("<II", 7, 11))
    assert isinstance(value, ErrorValue)
    assert value.detail == "no variant of Option<u32> has discriminant 7"
