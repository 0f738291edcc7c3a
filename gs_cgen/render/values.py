"""Bytes of target memory + the DWARF type model → a typed value tree.

Pure: the probe already copied the bytes; this module only interprets them
as C lays them out on x86-64 (little endian). `text.py` turns the tree into
the strings docs/rendering.md specifies, and into JSON.

Truncation (the probe's copy was capped by --mem-dump-cap): scalars are
shown only when all their bytes are present; structs, unions and arrays show
what is present and carry `truncated=True`, which renders as a trailing
`... <truncated>`. A partially present nested aggregate is decoded partially
(and is itself marked), so a large struct cut early still shows its prefix.
"""
from __future__ import annotations

from enum import Enum

from gs_cgen.dwarf.types import (ArrayType, BaseClass, BoolType, ComplexType, CType, EnumType,
                                 FloatFormat, FloatType, IntType, PointerType, QualifiedType,
                                 StructMember, StructType, TypedefType, Variant, VectorType, strip,
                                 type_name, type_size)
from gs_cgen.lazydataclass import dataclass
from gs_cgen.render import floats
from gs_cgen.render.decode import ValueStatus

MAX_DEPTH = 4   # docs/rendering.md: structs nested deeper than 4 render `{...}`


class UnknownReason(Enum):
    DEPTH_LIMIT = "depth_limit"      # a struct/union beyond MAX_DEPTH: `{...}`
    UNSUPPORTED = "unsupported"      # imaginary floats, void: `<unsupported type NAME: bytes>`


@dataclass(frozen=True)
class IntValue:
    ctype: CType | None              # None: a plain signed 64-bit probe result
    number: int


@dataclass(frozen=True)
class BoolValue:
    ctype: CType
    flag: bool


@dataclass(frozen=True)
class FloatValue:
    """A binary or decimal float of any width, kept as its bytes (a Python
    float cannot hold long double or _Float128); render/floats.py reads them."""

    ctype: CType
    raw: bytes

    @property
    def format(self) -> FloatFormat:
        return strip(self.ctype).format

    @property
    def number(self) -> float:
        """The nearest double."""
        return floats.to_double(self.raw, self.format)


@dataclass(frozen=True)
class ComplexValue:
    """`real + imag·i`, each part decoded as the complex type's part type."""

    ctype: CType
    real: "Value"
    imag: "Value"


@dataclass(frozen=True)
class EnumValue:
    ctype: CType
    number: int
    enumerator: str | None           # None: no enumerator has this value


@dataclass(frozen=True)
class PointerValue:
    ctype: CType
    address: int


@dataclass(frozen=True)
class StringValue:
    """A `char[N]` or a followed `char *`: the bytes before the first NUL;
    or a Rust string (`rust`): UTF-8 of a known length, NULs included."""

    ctype: CType
    data: bytes
    truncated: bool = False          # the cap was hit before a NUL
    address: int | None = None       # where the text lives, for `{:p}`
    rust: bool = False               # quoted with Rust's `{:?}` escapes


@dataclass(frozen=True)
class StructValue:
    """A struct or union; anonymous struct/union members are flattened
    into `fields`, as C lets their members be named directly. `name`
    overrides the type's (a Rust struct or enum variant as `{:?}` names it)."""

    ctype: CType
    fields: tuple[tuple[str, "Value"], ...]
    truncated: bool = False
    name: str | None = None


@dataclass(frozen=True)
class ArrayValue:
    """Elements shown; `more` counts those the collection has beyond them
    (`[1, 2, ... <997 more>]`)."""

    ctype: CType
    elements: tuple["Value", ...]
    truncated: bool = False
    more: int = 0


@dataclass(frozen=True)
class MapValue:
    """A map's (key, value) entries or a set's keys, in the collection's
    own order; `more` counts the entries not shown."""

    ctype: CType
    entries: tuple
    is_set: bool
    more: int = 0


@dataclass(frozen=True)
class TupleValue:
    """A Rust tuple `(1, "a")`, tuple struct `Point(1, -1)` or tuple
    variant `Some(7)`: `name` None for a plain tuple."""

    ctype: CType
    name: str | None
    elements: tuple["Value", ...]


@dataclass(frozen=True)
class UnitValue:
    """A Rust unit struct or variant: `None`, `Empty`."""

    ctype: CType
    name: str


@dataclass(frozen=True)
class VariantValue:
    """A Rust enum's value: its variant's name and payload (a StructValue,
    TupleValue or UnitValue named after the variant)."""

    ctype: CType
    variant: str
    payload: "Value"


@dataclass(frozen=True)
class ErrorValue:
    status: ValueStatus
    address: int | None = None
    detail: str | None = None
    ctype: CType | None = None


@dataclass(frozen=True)
class UnknownValue:
    ctype: CType
    reason: UnknownReason
    size: int
    data: bytes = b""                # the object's bytes, shown in hex


Value = (IntValue | BoolValue | FloatValue | ComplexValue | EnumValue | PointerValue
         | StringValue | StructValue | ArrayValue | MapValue | TupleValue | UnitValue
         | VariantValue
         | ErrorValue | UnknownValue)


# [start, end) byte ranges of an object that hold no value (pieces the
# compiler left out): members and elements there are optimized out.
Gaps = tuple[tuple[int, int], ...]


def decode_object(ctype: CType, data: bytes, truncated: bool = False, *,
                  address: int | None = None, gaps: Gaps = ()) -> Value:
    """Decode an object of `ctype` from its bytes as laid out in memory.

    `data` may be shorter than the type (capped copy); `truncated` says the
    copy was capped even when that is not visible from the length (a
    flexible array). `address`, when known, is kept for `{:p}` on strings.
    Scalars overlapping `gaps` are `<OPTIMIZED_OUT>`, as gdb prints the
    missing members of a struct that is partly in registers."""
    data = bytes(data)
    cut = truncated or len(data) < type_size(ctype)
    return _decode(ctype, data, cut, address, 0, gaps)


def decode_raw(ctype: CType, data: bytes, gaps: Gaps = ()) -> Value:
    """A Rust or C++ object as its DWARF layout (gdb's `print/r`), without
    the std printers; scalars overlapping `gaps` are `<OPTIMIZED_OUT>` (an
    object in pieces)."""
    base = strip(ctype)
    if isinstance(base, ArrayType) and base.count and isinstance(strip(base.element), StructType):
        step = type_size(base.element)
        return ArrayValue(ctype, tuple(
            decode_raw(base.element, data[i * step:(i + 1) * step], _within(gaps, i * step, step))
            for i in range(base.count) if (i + 1) * step <= len(data)))
    if not isinstance(base, StructType):
        return _decode(ctype, data, False, None, 0, gaps)
    if base.variant_part is not None:
        return _raw_variant(ctype, base, data, gaps)
    fields = tuple((m.name or "?", decode_raw(m.type, data[m.offset:m.offset + type_size(m.type)],
                                              _within(gaps, m.offset, type_size(m.type))))
                   for m in base.members if m.offset + type_size(m.type) <= len(data))
    return StructValue(ctype, fields, name=base.name)


def _raw_variant(ctype: CType, base: StructType, data: bytes, gaps: Gaps) -> Value:
    """A Rust enum's layout: its fields are in its variant part, not its
    members; the active variant's, as gdb's print/r shows it (`Some(11)`
    as the variant `Some` with its member `__0`)."""
    chosen = active_variant(base, data, gaps)
    if not isinstance(chosen, Variant):
        return chosen
    member = chosen.member
    size = type_size(member.type)
    payload = decode_raw(member.type, data[member.offset:member.offset + size],
                         _within(gaps, member.offset, size))
    if isinstance(payload, StructValue):        # named after the variant; `None`, not `None {}`
        payload = StructValue(member.type, payload.fields, name=member.name) if payload.fields \
            else UnitValue(member.type, member.name or "?")
    return VariantValue(ctype, member.name or "?", payload)


def active_variant(base: StructType, data: bytes, gaps: Gaps = ()) -> Variant | Value:
    """The variant of a Rust enum (DW_TAG_variant_part) that `data` holds:
    the one whose discriminant value the discriminant member has, else the
    default one (a niche layout's dataful variant); an error value when
    the discriminant cannot be read (optimized out: in `gaps`) or names
    no variant."""
    part = base.variant_part
    if part.discriminant is None:
        if len(part.variants) == 1:
            return part.variants[0]
        return ErrorValue(ValueStatus.UNAVAILABLE, None,
                          f"{base.name} has variants but no discriminant", base)
    where = part.discriminant.offset
    size = type_size(part.discriminant.type)
    discriminant = decode_object(part.discriminant.type, data[where:where + size],
                                 gaps=_within(gaps, where, size))
    number = getattr(discriminant, "number", None)
    if number is None:
        return discriminant
    chosen = next((v for v in part.variants if v.discr_value == number), None) or \
        next((v for v in part.variants if v.discr_value is None), None)
    if chosen is None:
        return ErrorValue(ValueStatus.UNAVAILABLE, None,
                          f"no variant of {base.name} has discriminant {number}", base)
    return chosen


def _within(gaps: Gaps, start: int, size: int) -> Gaps:
    """The gaps that overlap [start, start + size), relative to start."""
    return tuple((max(lo, start) - start, min(hi, start + size) - start)
                 for lo, hi in gaps if lo < start + size and start < hi)


def decode_cstring(ctype: CType, address: int, data: bytes, truncated: bool) -> Value:
    """A top-level `char *` the probe followed with bpf_probe_read_user_str.
    `truncated` comes from the probe (the helper NUL-terminates a capped
    read, so a NUL in `data` does not prove the string ended)."""
    if address == 0:
        return ErrorValue(ValueStatus.NULL_DEREF, 0, ctype=ctype)
    text = bytes(data).split(b"\0", 1)[0]
    return StringValue(ctype, text, truncated, address)


def decode_integer(ctype: CType | None, number: int) -> Value:
    """A value the probe computed in a 64-bit register, shown as `ctype`.

    Integers and enums wrap to the type's width (C conversion); bool is
    `number != 0`; other types reinterpret the low bytes of the register."""
    if ctype is None:
        return IntValue(None, _wrap(number, 8, True))
    base = strip(ctype)
    match base:
        case BoolType():
            return BoolValue(ctype, number != 0)
        case IntType(size=size, signed=signed):
            return IntValue(ctype, _wrap(number, size, signed))
        case EnumType(size=size, signed=signed):
            wrapped = _wrap(number, size, signed)
            return EnumValue(ctype, wrapped, _enumerator(base, wrapped))
    size = min(type_size(ctype), 8)
    return decode_object(ctype, _wrap(number, size, False).to_bytes(size, "little"))


def error_value(status: ValueStatus, address: int | None = None, detail: str | None = None,
                ctype: CType | None = None) -> ErrorValue:
    """The value of an expression whose read failed or is unavailable."""
    if status is ValueStatus.OK:
        raise ValueError("error_value needs a failure status, not OK")
    return ErrorValue(status, address, detail, ctype)


def _decode(ctype: CType, data: bytes, cut: bool, address: int | None, depth: int,
            gaps: Gaps = ()) -> Value:
    # `cut`: the bytes end at the cap, so a missing tail means "truncated".
    base = strip(ctype)
    if isinstance(base, StructType):
        return _struct(ctype, base, data, address, depth, gaps)
    if isinstance(base, ArrayType) and not (gaps and _is_char(base.element)):
        return _array(ctype, base, data, cut, address, depth, gaps)
    if gaps:
        return error_value(ValueStatus.OPTIMIZED_OUT, ctype=ctype)
    if isinstance(base, VectorType):
        return _vector(ctype, base, data, depth)
    return _scalar(ctype, base, data)


def _scalar(ctype: CType, base: CType, data: bytes) -> Value:
    size = base.size
    if len(data) < size:
        return ErrorValue(ValueStatus.TRUNCATED, ctype=ctype)
    raw = data[:size]
    match base:
        case BoolType():
            return BoolValue(ctype, any(raw))     # C: any non-zero byte is true
        case IntType(size=0, name=name):          # Rust's unit type `()`
            return UnitValue(ctype, name)
        case IntType(signed=signed):
            return IntValue(ctype, int.from_bytes(raw, "little", signed=signed))
        case EnumType(signed=signed):
            number = int.from_bytes(raw, "little", signed=signed)
            return EnumValue(ctype, number, _enumerator(base, number))
        case PointerType():
            return PointerValue(ctype, int.from_bytes(raw, "little"))
        case FloatType(format=fmt) if floats.is_decodable(fmt):
            return FloatValue(ctype, raw)
        case ComplexType(part=part):
            half = type_size(part)
            return ComplexValue(ctype, _scalar(part, strip(part), raw[:half]),
                                _scalar(part, strip(part), raw[half:]))
    return UnknownValue(ctype, UnknownReason.UNSUPPORTED, size, raw)


def _struct(ctype: CType, base: StructType, data: bytes, address: int | None,
            depth: int, gaps: Gaps = (), virtual_seen: set[str] | None = None) -> Value:
    if depth >= MAX_DEPTH:
        return UnknownValue(ctype, UnknownReason.DEPTH_LIMIT, base.size)
    if base.language == "rust" and not gaps:
        from gs_cgen.render.rust import decode_rust  # noqa: PLC0415 — it builds on this module
        return decode_rust(ctype, data, address)
    fields, truncated = _base_fields(base, data, address, depth + 1, gaps,
                                     set() if virtual_seen is None else virtual_seen)
    for member in base.members:
        if not _present(member, data):
            truncated = True
            continue
        value = _member(member, data, address, depth + 1, gaps)
        if member.name is not None:
            fields.append((member.name, value))
        elif isinstance(value, StructValue):     # anonymous struct/union: flatten
            fields.extend(value.fields)
            truncated = truncated or value.truncated
        # other unnamed members are padding bitfields: C gives them no value
    return StructValue(ctype, tuple(fields), truncated)


def _base_fields(struct: StructType, data: bytes, address: int | None, depth: int,
                 gaps: Gaps, virtual_seen: set[str]) -> tuple[list[tuple[str, Value]], bool]:
    """The C++ bases of `struct`, first as gdb prints them, and whether the
    copy ends before one. A virtual base is one subobject however many
    classes derive from it: shown once, where it is first met (gdb's
    cp-valprint.c dont_print_vb), so `virtual_seen` spans the object."""
    fields: list[tuple[str, Value]] = []
    truncated = False
    for inherited in struct.bases:
        name = base_field_name(inherited)
        if inherited.virtual and name in virtual_seen:
            continue
        if inherited.virtual:
            virtual_seen.add(name)
        elif not _base_present(inherited, data):
            truncated = True
            continue
        fields.append((name, _base(inherited, data, address, depth, gaps, virtual_seen)))
    return fields, truncated


def base_field_name(inherited: BaseClass) -> str:
    """A base's field: `<Base>`, gdb's name for a base class subobject."""
    return f"<{aggregate_name(inherited.type) or type_name(inherited.type)}>"


def _base(inherited: BaseClass, data: bytes, address: int | None, depth: int,
          gaps: Gaps, virtual_seen: set[str]) -> Value:
    """A base class subobject, decoded like a struct member at its offset;
    a virtual base is at an offset the vtable holds, which the probe did
    not read, so it is an error value rather than the bytes at a guess."""
    if inherited.offset is None:
        return error_value(ValueStatus.UNAVAILABLE, detail=(
            f"unsupported: virtual base {base_field_name(inherited)[1:-1]} (the vtable holds "
            f"its offset; print its members by name)"), ctype=inherited.type)
    size = type_size(inherited.type)
    piece = data[inherited.offset:inherited.offset + size]
    at = None if address is None else address + inherited.offset
    gaps = _within(gaps, inherited.offset, size)
    struct = strip(inherited.type)
    if not isinstance(struct, StructType):
        return _decode(inherited.type, piece, len(piece) < size, at, depth, gaps)
    return _struct(inherited.type, struct, piece, at, depth, gaps, virtual_seen)


def _base_present(inherited: BaseClass, data: bytes) -> bool:
    return inherited.offset < len(data) or type_size(inherited.type) == 0


def _member(member: StructMember, data: bytes, address: int | None, depth: int,
            gaps: Gaps = ()) -> Value:
    if member.bit_size is not None:
        if _within(gaps, member.offset, _bitfield_bytes(member)):
            return error_value(ValueStatus.OPTIMIZED_OUT, ctype=member.type)
        return _bitfield(member, data)
    size = type_size(member.type)
    piece = data[member.offset:member.offset + size]
    at = None if address is None else address + member.offset
    # Anonymous members are spliced into their parent: no extra nesting level.
    return _decode(member.type, piece, len(piece) < size, at,
                   depth - 1 if member.name is None else depth, _within(gaps, member.offset, size))


def _present(member: StructMember, data: bytes) -> bool:
    """Scalars need every byte; an aggregate needs at least one (partial decode)."""
    if member.bit_size is not None:
        return member.offset + _bitfield_bytes(member) <= len(data)
    size = type_size(member.type)
    if isinstance(strip(member.type), (StructType, ArrayType)):
        return member.offset < len(data) or size == 0
    return member.offset + size <= len(data)


def _bitfield_bytes(member: StructMember) -> int:
    return (member.bit_offset + member.bit_size + 7) // 8


def _bitfield(member: StructMember, data: bytes) -> Value:
    # StructMember.bit_offset counts LSB-first from byte `offset` (typebuild
    # converts DWARF 4 DW_AT_bit_offset and DWARF 5 DW_AT_data_bit_offset).
    raw = int.from_bytes(data[member.offset:member.offset + _bitfield_bytes(member)], "little")
    number = (raw >> member.bit_offset) & ((1 << member.bit_size) - 1)
    if getattr(strip(member.type), "signed", False) and number >> (member.bit_size - 1):
        number -= 1 << member.bit_size
    return decode_integer(member.type, number)


def _array(ctype: CType, base: ArrayType, data: bytes, cut: bool, address: int | None,
           depth: int, gaps: Gaps = ()) -> Value:
    if _is_char(base.element):
        return _char_array(ctype, base, data, cut, address)
    step = type_size(base.element)
    if step == 0:
        return ArrayValue(ctype, (), cut)
    count = base.count if base.count is not None else len(data) // step
    aggregate = isinstance(strip(base.element), (StructType, ArrayType))
    shown = min(count, len(data) // step)
    if aggregate and shown < count and len(data) > shown * step:
        shown += 1                                  # a partial last struct still helps
    elements = tuple(
        _decode(base.element, data[i * step:(i + 1) * step], len(data) < (i + 1) * step,
                None if address is None else address + i * step, depth,
                _within(gaps, i * step, step))
        for i in range(shown))
    truncated = len(data) < count * step or (base.count is None and cut)
    return ArrayValue(ctype, elements, truncated)


def _vector(ctype: CType, base: VectorType, data: bytes, depth: int) -> Value:
    """Every element, like an array's; a vector of chars is numbers, not text
    (gdb prints `{97, 98, …}`). Vectors live in registers whole, so a partial
    copy shows only the complete elements."""
    step = type_size(base.element)
    shown = min(base.count, len(data) // step) if step else 0
    elements = tuple(_decode(base.element, data[i * step:(i + 1) * step], False, None, depth)
                     for i in range(shown))
    return ArrayValue(ctype, elements, shown < base.count)


def _char_array(ctype: CType, base: ArrayType, data: bytes, cut: bool,
                address: int | None) -> StringValue:
    text = data if base.count is None else data[:base.count]
    nul = text.find(b"\0")
    if nul >= 0:
        return StringValue(ctype, text[:nul], False, address)
    missing = base.count is not None and len(text) < base.count
    return StringValue(ctype, text, missing or (base.count is None and cut), address)


def _is_char(ctype: CType) -> bool:
    base = strip(ctype)
    return isinstance(base, IntType) and base.is_char and base.size == 1


def _enumerator(enum: EnumType, number: int) -> str | None:
    for name, value in enum.enumerators:
        if value == number:
            return name
    return None


def _wrap(number: int, size: int, signed: bool) -> int:
    """C's conversion of an integer to a `size`-byte (un)signed type."""
    bits = 8 * size
    number &= (1 << bits) - 1
    if signed and number >> (bits - 1):
        number -= 1 << bits
    return number


def aggregate_name(ctype: CType) -> str | None:
    """The struct/union/enum name to print: its tag, else the nearest
    typedef that names the anonymous type, else None."""
    base = strip(ctype)
    if getattr(base, "name", None):
        return base.name
    name = None
    while isinstance(ctype, (TypedefType, QualifiedType)):
        if isinstance(ctype, TypedefType):
            name = ctype.name                       # innermost typedef wins
        ctype = ctype.target
    return name
