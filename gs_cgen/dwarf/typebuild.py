"""DIE -> CType. Types are cached by DIE offset (unique within
.debug_info), pointer targets and struct members are built on first use, so
building a variable's type never walks more of the CU than it needs."""
from __future__ import annotations

from gs_cgen.dwarf.raw import uleb_at
from gs_cgen.dwarf.types import (ArrayType, BaseClass, BoolType, ComplexType, CType, EnumType,
                                 FloatFormat, FloatType, FunctionType, IntType, PointerType,
                                 QualifiedType,
                                 StructMember, StructType, TypedefType, Variant, VariantPart,
                                 VectorType, VoidType, float_format, strip)

# DW_ATE_* (DWARF 5 table 7.11)
_ATE_BOOLEAN = 0x02
_ATE_COMPLEX_FLOAT = 0x03
_ATE_FLOAT = 0x04
_ATE_IMAGINARY_FLOAT = 0x09
_ATE_DECIMAL_FLOAT = 0x0F
# gcc's dwarf2out.c gives complex integer types (`_Complex int`, a GNU
# extension) DW_ATE_lo_user; HP used the same value for float80, so the
# name (gcc: "complex int") decides.
_ATE_GNU_COMPLEX_INT = 0x80
_ATE_SIGNED = (0x05, 0x06, 0x0D)            # signed, signed_char, signed_fixed
_ATE_CHARS = (0x06, 0x08, 0x10)             # signed_char, unsigned_char, UTF
_COMPLEX_PREFIXES = ("complex ", "_Complex ", "__complex__ ")
_CHAR_NAMES = ("char", "signed char", "unsigned char", "char8_t")

_QUALIFIERS = {
    "DW_TAG_const_type": "const",
    "DW_TAG_volatile_type": "volatile",
    "DW_TAG_restrict_type": "restrict",
    "DW_TAG_atomic_type": "atomic",
}
_STRUCT_KINDS = {
    "DW_TAG_structure_type": "struct",
    "DW_TAG_union_type": "union",
    "DW_TAG_class_type": "class",
}


class TypeBuilder:
    def __init__(self) -> None:
        self._cache: dict[int, CType] = {}

    def type_of(self, die) -> CType:
        """The CType named by `die`'s DW_AT_type (void when absent)."""
        if "DW_AT_type" not in die.attributes:
            return VoidType()
        return self.build(die.get_DIE_from_attribute("DW_AT_type"))

    def build(self, die) -> CType:
        cached = self._cache.get(die.offset)
        if cached is None:
            cached = self._build(die)
            self._cache[die.offset] = cached
        return cached

    def _build(self, die) -> CType:
        tag = die.tag
        if tag == "DW_TAG_base_type":
            return _base_type(die)
        if tag == "DW_TAG_pointer_type":
            return PointerType(lambda: self.type_of(die), _attr(die, "DW_AT_byte_size", 8),
                               name=_name(die) if _language(die) == "rust" else None)
        if tag in ("DW_TAG_reference_type", "DW_TAG_rvalue_reference_type"):
            return PointerType(lambda: self.type_of(die), _attr(die, "DW_AT_byte_size", 8),
                               reference=True)
        if tag == "DW_TAG_typedef":
            return TypedefType(_scoped_name(die) or "<typedef>", self.type_of(die))
        if tag in _QUALIFIERS:
            return QualifiedType(_QUALIFIERS[tag], self.type_of(die))
        if tag in _STRUCT_KINDS:
            return self._struct(die)
        if tag == "DW_TAG_enumeration_type":
            return self._enum(die)
        if tag == "DW_TAG_array_type":
            return self._array(die)
        if tag == "DW_TAG_subroutine_type":
            return FunctionType(_name(die))
        return VoidType(_name(die) or "void")      # unspecified_type and friends

    def _struct(self, die) -> StructType:
        declaration = bool(_attr(die, "DW_AT_declaration", False))
        language = _language(die)
        return StructType(kind=_STRUCT_KINDS[die.tag], name=_scoped_name(die),
                          size=_attr(die, "DW_AT_byte_size", 0),
                          members_loader=lambda: self._members(die),
                          is_declaration=declaration, language=language,
                          variants_loader=lambda: self._variant_part(die),
                          parameters_loader=lambda: self._parameters(die),
                          bases_loader=lambda: self._bases(die),
                          scope_loader=lambda: _rust_scope(die) if language == "rust" else "")

    def _variant_part(self, die) -> VariantPart | None:
        part = next((c for c in die.iter_children() if c.tag == "DW_TAG_variant_part"), None)
        if part is None:
            return None
        discriminant = None
        if "DW_AT_discr" in part.attributes:
            discriminant = self._member(part.get_DIE_from_attribute("DW_AT_discr"))
        variants = []
        for child in part.iter_children():
            if child.tag != "DW_TAG_variant":
                continue
            member = next((m for m in child.iter_children() if m.tag == "DW_TAG_member"), None)
            if member is None:
                continue
            value = child.attributes.get("DW_AT_discr_value")
            if value is None and "DW_AT_discr_list" in child.attributes:
                raise UnsupportedLayout("a variant with a DW_AT_discr_list")
            variants.append(Variant(_discr_value(value, discriminant), self._member(member)))
        return VariantPart(discriminant, tuple(variants))

    def _parameters(self, die) -> tuple[tuple[str, CType], ...]:
        return tuple((_name(c) or "", self.type_of(c)) for c in die.iter_children()
                     if c.tag == "DW_TAG_template_type_param")

    def _bases(self, die) -> tuple[BaseClass, ...]:
        return tuple(self._base(child) for child in die.iter_children()
                     if child.tag == "DW_TAG_inheritance")

    def _base(self, die) -> BaseClass:
        ctype = self.type_of(die)
        # DW_VIRTUALITY_virtual (1); pure_virtual (2) is for functions only.
        if _attr(die, "DW_AT_virtuality", 0):
            return BaseClass(ctype, None, True, _vbase_offset_at(die))
        return BaseClass(ctype, _member_offset(die))

    def _members(self, die) -> tuple[StructMember, ...]:
        # A Rust enum's fields are in its variant part, not members.
        return tuple(self._member(child) for child in die.iter_children()
                     if child.tag == "DW_TAG_member")

    def _member(self, die) -> StructMember:
        ctype = self.type_of(die)
        offset = _member_offset(die)
        bit_size = _attr(die, "DW_AT_bit_size", None)
        if bit_size is None:
            return StructMember(_name(die), ctype, offset)
        unit = _attr(die, "DW_AT_byte_size", None) or _storage_size(ctype)
        if "DW_AT_data_bit_offset" in die.attributes:
            # DWARF 4+: bits from the start of the struct, LSB first on x86.
            total = die.attributes["DW_AT_data_bit_offset"].value
            offset = (total // (8 * unit)) * unit if unit else total // 8
            if total + bit_size > 8 * (offset + unit):
                offset = total // 8               # packed: unit straddles; use byte
            return StructMember(_name(die), ctype, offset, bit_size, total - 8 * offset)
        # DWARF 2/3 DW_AT_bit_offset counts from the MSB of the storage unit
        # (DWARF 3 section 5.6.6); convert to LSB-first for little endian.
        msb_offset = _attr(die, "DW_AT_bit_offset", 0)
        return StructMember(_name(die), ctype, offset, bit_size, 8 * unit - msb_offset - bit_size)

    def _enum(self, die) -> EnumType:
        values = tuple((_name(c) or "", c.attributes["DW_AT_const_value"].value)
                       for c in die.iter_children() if c.tag == "DW_TAG_enumerator")
        signed = any(v < 0 for _, v in values)
        if "DW_AT_type" in die.attributes:
            underlying = self.type_of(die)
            signed = getattr(strip(underlying), "signed", signed)
        return EnumType(_name(die), _attr(die, "DW_AT_byte_size", 4), signed, values)

    def _array(self, die) -> CType:
        ranges = [c for c in die.iter_children()
                  if c.tag in ("DW_TAG_subrange_type", "DW_TAG_enumeration_type")]
        counts = [_subrange_count(c) for c in ranges]
        ctype = self.type_of(die)
        if "DW_AT_GNU_vector" in die.attributes and len(counts) == 1 and counts[0] is not None:
            return VectorType(ctype, counts[0])
        # int m[2][3] is one DIE with two subranges; the last is innermost.
        for subrange, count in reversed(list(zip(ranges, counts)) or [(None, None)]):
            variable = count is None and subrange is not None and _variable_bound(subrange)
            ctype = ArrayType(ctype, count, variable, subrange.offset if variable else None)
        return ctype


def _base_type(die) -> CType:
    name = _name(die) or "<base>"
    size = _attr(die, "DW_AT_byte_size", 0)
    encoding = _attr(die, "DW_AT_encoding", 0)
    if encoding == _ATE_BOOLEAN:
        return BoolType(name, size)
    if encoding == _ATE_FLOAT:
        return FloatType(name, size, float_format(name, size))
    if encoding == _ATE_DECIMAL_FLOAT:
        return FloatType(name, size, float_format(name, size, decimal=True))
    if encoding == _ATE_IMAGINARY_FLOAT:
        return FloatType(name, size, FloatFormat.UNKNOWN)
    if encoding == _ATE_COMPLEX_FLOAT or (encoding == _ATE_GNU_COMPLEX_INT
                                          and name.startswith(_COMPLEX_PREFIXES)):
        return ComplexType(name, size, _complex_part(name, size, encoding))
    # char16_t/char32_t (DW_ATE_UTF) are characters but not bytes of a C
    # string: only 1-byte character types read as strings (gcc 12 gives
    # C++20's char8_t DW_ATE_unsigned, so its name decides).
    is_char = size == 1 and (encoding in _ATE_CHARS or name in _CHAR_NAMES)
    return IntType(name, size, encoding in _ATE_SIGNED, is_char)


def _complex_part(name: str, size: int, encoding: int) -> CType:
    """The type of each half of a complex type: gcc names `complex T` for
    every T, so the part is named T."""
    part = next((name[len(p):] for p in _COMPLEX_PREFIXES if name.startswith(p)), name)
    half = size // 2
    if encoding == _ATE_GNU_COMPLEX_INT:
        signed = "unsigned" not in part.split()
        return IntType(part, half, signed, half == 1 and part.endswith("char"))
    return FloatType(part, half, float_format(part, half))


class UnsupportedLayout(Exception):
    """A DWARF shape the type model does not represent (a value prints
    `<error: unsupported: ...>`)."""


def _discr_value(value, discriminant: StructMember | None) -> int | None:
    """DW_AT_discr_value as the discriminant's type reads it: a data form
    holds the bits; a signed discriminant sign-extends them."""
    if value is None:
        return None
    number = value.value
    if discriminant is not None and value.form in ("DW_FORM_data1", "DW_FORM_data2",
                                                   "DW_FORM_data4", "DW_FORM_data8"):
        size = getattr(strip(discriminant.type), "size", 8) or 8
        number &= (1 << (8 * size)) - 1
        if getattr(strip(discriminant.type), "signed", False) and number >> (8 * size - 1):
            number -= 1 << (8 * size)
    return number


_LANGUAGES = {0x001C: "rust"}


def _language(die) -> str:
    language = die.cu.get_top_DIE().attributes.get("DW_AT_language")
    if language is None:
        return "c"
    if language.value in _CPP_LANGUAGES:
        return "c++"
    return _LANGUAGES.get(language.value, "c")


def _member_offset(die) -> int:
    attr = die.attributes.get("DW_AT_data_member_location")
    if attr is None:
        return 0                          # union members, DWARF 4+ bitfields
    if isinstance(attr.value, int):
        return attr.value
    # DWARF 2 style: an expression, in practice [DW_OP_plus_uconst N].
    expr = list(attr.value)
    if expr and expr[0] == 0x23:
        return uleb_at(bytes(expr), 1)[0]
    return 0


# gcc's virtual base location (Itanium C++ ABI 2.5.2): object + *(*object - N).
_DW_OP_DUP, _DW_OP_DEREF, _DW_OP_MINUS, _DW_OP_PLUS = 0x12, 0x06, 0x1C, 0x22
_DW_OP_CONSTU, _DW_OP_LIT0, _DW_OP_LIT31 = 0x10, 0x30, 0x4F


def _vbase_offset_at(die) -> int | None:
    """Where, from the vtable address, a virtual base's offset lives: -N
    for gcc's `dup; deref; lit N / constu N; minus; deref; plus`; None for
    any other form (clang's, or one not seen yet)."""
    attr = die.attributes.get("DW_AT_data_member_location")
    if attr is None or isinstance(attr.value, int):
        return None
    expr = bytes(attr.value)
    if expr[:2] != bytes([_DW_OP_DUP, _DW_OP_DEREF]) or len(expr) < 6:
        return None
    if _DW_OP_LIT0 <= expr[2] <= _DW_OP_LIT31:
        distance, end = expr[2] - _DW_OP_LIT0, 3
    elif expr[2] == _DW_OP_CONSTU:
        distance, end = uleb_at(expr, 3)
    else:
        return None
    if expr[end:] != bytes([_DW_OP_MINUS, _DW_OP_DEREF, _DW_OP_PLUS]):
        return None
    return -distance


def _subrange_count(die) -> int | None:
    attrs = die.attributes
    if "DW_AT_count" in attrs and isinstance(attrs["DW_AT_count"].value, int):
        return attrs["DW_AT_count"].value
    upper = attrs.get("DW_AT_upper_bound")
    if upper is not None and isinstance(upper.value, int) and upper.form != "DW_FORM_exprloc" \
            and not upper.form.startswith("DW_FORM_ref"):
        lower = _attr(die, "DW_AT_lower_bound", 0)
        return upper.value - lower + 1
    return None                           # flexible array member or VLA


def _variable_bound(die) -> bool:
    """A bound the DWARF computes (an expression, or a reference to the
    variable gcc keeps it in): a VLA, not a flexible array member."""
    return any(attr in die.attributes for attr in ("DW_AT_count", "DW_AT_upper_bound"))


def _storage_size(ctype: CType) -> int:
    return getattr(strip(ctype), "size", 0) or 0


def _name(die) -> str | None:
    attr = die.attributes.get("DW_AT_name")
    return attr.value.decode("utf-8", "replace") if attr is not None else None


# DW_LANG_C_plus_plus, _03, _11, _14, _17, _20 (DWARF 5 section 7.12, DWARF 6 draft).
_CPP_LANGUAGES = frozenset({0x0004, 0x0019, 0x001A, 0x0021, 0x002A, 0x002B})
_SCOPE_TAGS = frozenset({"DW_TAG_namespace", "DW_TAG_class_type", "DW_TAG_structure_type",
                         "DW_TAG_union_type"})


def _scoped_name(die) -> str | None:
    """A C++ class or typedef named as gdb names it, with the namespaces
    and classes around its DIE (`geo::Shape`); a C type by DW_AT_name."""
    name = _name(die)
    language = die.cu.get_top_DIE().attributes.get("DW_AT_language")
    if name is None or language is None or language.value not in _CPP_LANGUAGES:
        return name
    scopes = []
    parent = die.get_parent()
    while parent is not None and parent.tag in _SCOPE_TAGS:
        scopes.append(_name(parent) or "(anonymous namespace)")
        parent = parent.get_parent()
    return "::".join([*reversed(scopes), name])


def _rust_scope(die) -> str:
    """`alloc::string` for String: the namespaces rustc nests a type in."""
    scopes = []
    parent = die.get_parent()
    while parent is not None and parent.tag in _SCOPE_TAGS:
        scopes.append(_name(parent) or "")
        parent = parent.get_parent()
    return "::".join(reversed(scopes))


def _attr(die, name: str, default):
    attr = die.attributes.get(name)
    return attr.value if attr is not None else default
