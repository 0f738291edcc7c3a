"""The C type model built from DWARF DIEs.

Frozen dataclasses; pointer targets are loaded lazily so recursive types
(`struct node { struct node *next; }`) need no cycles. typedef and
qualifiers are kept so names render as the user wrote them; `strip()` sees
through them when the layout matters.
"""
from __future__ import annotations

from dataclasses import field
from enum import Enum
from functools import cached_property
from typing import Callable

from gs_cgen.lazydataclass import dataclass


@dataclass(frozen=True)
class VoidType:
    name: str = "void"
    size: int = 0


@dataclass(frozen=True)
class IntType:
    """Any DW_ATE_signed/unsigned/(un)signed_char base type."""

    name: str
    size: int
    signed: bool
    is_char: bool = False


@dataclass(frozen=True)
class BoolType:
    name: str
    size: int


class FloatFormat(Enum):
    """How a floating-point base type lays out its bits. DWARF says only
    DW_ATE_float and a byte size; on x86_64 a 16-byte float is either the
    x87 80-bit extended format (long double, _Float64x: the low 10 bytes,
    psABI 3.1.2) or IEEE binary128 (_Float128, __float128), told apart by
    name (`float_format`)."""

    BINARY16 = "IEEE 754 binary16"
    BFLOAT16 = "bfloat16"
    BINARY32 = "IEEE 754 binary32"
    BINARY64 = "IEEE 754 binary64"
    X87_EXTENDED = "x87 80-bit extended precision"
    BINARY128 = "IEEE 754 binary128"
    DECIMAL32 = "IEEE 754 decimal32 (BID)"
    DECIMAL64 = "IEEE 754 decimal64 (BID)"
    DECIMAL128 = "IEEE 754 decimal128 (BID)"
    UNKNOWN = "unknown"


_BINARY128_NAMES = ("_Float128", "__float128")
_BINARY_BY_SIZE = {2: FloatFormat.BINARY16, 4: FloatFormat.BINARY32, 8: FloatFormat.BINARY64,
                   10: FloatFormat.X87_EXTENDED, 12: FloatFormat.X87_EXTENDED,
                   16: FloatFormat.X87_EXTENDED}
_DECIMAL_BY_SIZE = {4: FloatFormat.DECIMAL32, 8: FloatFormat.DECIMAL64, 16: FloatFormat.DECIMAL128}


def float_format(name: str, size: int, decimal: bool = False) -> FloatFormat:
    """The layout of a DW_ATE_float (or, with `decimal`, DW_ATE_decimal_float)
    base type of `size` bytes named `name`, as gcc and clang emit them on x86_64."""
    if decimal:
        return _DECIMAL_BY_SIZE.get(size, FloatFormat.UNKNOWN)   # x86_64 uses the BID encoding
    if name == "__bf16":
        return FloatFormat.BFLOAT16
    if size == 16 and name in _BINARY128_NAMES:
        return FloatFormat.BINARY128
    return _BINARY_BY_SIZE.get(size, FloatFormat.UNKNOWN)


@dataclass(frozen=True)
class FloatType:
    """A binary or decimal floating-point base type; `format` defaults to
    what `float_format` makes of the name and size."""

    name: str
    size: int
    format: FloatFormat | None = None

    def __post_init__(self) -> None:
        if self.format is None:
            object.__setattr__(self, "format", float_format(self.name, self.size))


@dataclass(frozen=True)
class ComplexType:
    """`_Complex float/double/long double` (DW_ATE_complex_float) and gcc's
    complex integers (`_Complex int`, DW_ATE_lo_user): two `part`s, the
    real one first (C11 6.2.5p13)."""

    name: str
    size: int
    part: "CType"


@dataclass(frozen=True, eq=False)
class PointerType:
    """`target_loader` builds the pointee on first use. A C++ reference
    (`reference`) is one too, which expressions see through (plan/expr.py)."""

    target_loader: Callable[[], "CType"] = field(repr=False)
    size: int = 8
    reference: bool = False
    name: str | None = None   # Rust names its pointers: `&Order`, `Box<Point, Global>`

    @cached_property
    def target(self) -> "CType":
        return self.target_loader()


@dataclass(frozen=True)
class StructMember:
    name: str | None          # None for an anonymous struct/union member
    type: "CType"
    offset: int               # byte offset of the storage unit
    bit_size: int | None = None
    bit_offset: int | None = None   # bits from the start of `offset`, LSB first (DWARF 4+ data_bit_offset - 8*offset)


@dataclass(frozen=True)
class Variant:
    """One arm of a DW_TAG_variant_part: `member` holds its fields when the
    discriminant equals `discr_value`; None is the default arm (a Rust
    niche layout's dataful variant)."""

    discr_value: int | None
    member: StructMember


@dataclass(frozen=True)
class VariantPart:
    """A Rust enum's layout (DWARF 5 section 5.7.10): the discriminant
    member (None: a single-variant enum) and the variants."""

    discriminant: StructMember | None
    variants: tuple[Variant, ...]


def _no_variants() -> VariantPart | None:
    return None


def _no_parameters() -> tuple[tuple[str, "CType"], ...]:
    return ()


@dataclass(frozen=True)
class BaseClass:
    """A C++ base class subobject (DW_TAG_inheritance), in declaration order.

    A non-virtual base sits at the static byte `offset`. A virtual base's
    place depends on the complete object, so the Itanium C++ ABI (2.5.2)
    keeps its offset in the vtable: gcc's DW_AT_data_member_location is
    `dup; deref; lit N; minus; deref; plus`, i.e. base = object +
    *(vptr - N), the vptr being the object's first 8 bytes. Then `offset`
    is None and `vbase_offset_at` is -N; it is None too when the DWARF
    says it another way, which gs-cgen does not evaluate."""

    type: "CType"
    offset: int | None
    virtual: bool = False
    vbase_offset_at: int | None = None


def _no_bases() -> tuple[BaseClass, ...]:
    return ()


@dataclass(frozen=True, eq=False)
class StructType:
    """struct or union (`kind`). `members_loader` defers member types;
    `variants_loader` a Rust enum's variant part, `parameters_loader` the
    DW_TAG_template_type_param (name, type) pairs (`Vec<T>`'s T), which
    layouts recognized by name need (gs_cgen/printers/); `bases_loader` the C++
    base classes (DW_TAG_inheritance); `scope_loader` a Rust type's path."""

    kind: str                 # "struct" | "union" | "class"
    name: str | None
    size: int
    members_loader: Callable[[], tuple[StructMember, ...]] = field(repr=False)
    is_declaration: bool = False
    language: str = "c"       # "c", "c++" or "rust": whose layout rules apply
    variants_loader: Callable[[], VariantPart | None] = field(default=_no_variants, repr=False)
    parameters_loader: Callable[[], tuple[tuple[str, "CType"], ...]] = field(
        default=_no_parameters, repr=False)
    bases_loader: Callable[[], tuple[BaseClass, ...]] = field(default=_no_bases, repr=False)
    scope_loader: Callable[[], str] = field(default=str, repr=False)

    @cached_property
    def members(self) -> tuple[StructMember, ...]:
        return self.members_loader()

    @cached_property
    def variant_part(self) -> VariantPart | None:
        return self.variants_loader()

    @cached_property
    def parameters(self) -> tuple[tuple[str, "CType"], ...]:
        return self.parameters_loader()

    def parameter(self, name: str) -> "CType | None":
        return next((t for n, t in self.parameters if n == name), None)

    def member(self, name: str) -> StructMember | None:
        return next((m for m in self.members if m.name == name), None)

    @cached_property
    def bases(self) -> tuple[BaseClass, ...]:
        return self.bases_loader()

    @cached_property
    def scope(self) -> str:
        """A Rust type's namespaces (`alloc::string` of String): whose
        String it is. Empty for C and C++ (their names carry it)."""
        return self.scope_loader()


@dataclass(frozen=True)
class EnumType:
    name: str | None
    size: int
    signed: bool
    enumerators: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ArrayType:
    element: "CType"
    count: int | None         # None: flexible / unknown bound
    # A C99 VLA: the bound is computed at run time (a DWARF expression or a
    # variable), so `count` is None but the array is not empty; `bound_die`
    # is the DW_TAG_subrange_type saying how (ModuleDebugInfo.array_bound).
    variable_length: bool = False
    bound_die: int | None = None

    @property
    def size(self) -> int:
        return (self.count or 0) * type_size(self.element)


@dataclass(frozen=True)
class VectorType:
    """A GNU vector (`int __attribute__((vector_size(16)))`, `__m128`):
    DW_TAG_array_type with DW_AT_GNU_vector. Unlike an array it is a value
    (it does not decay to a pointer)."""

    element: "CType"
    count: int

    @property
    def size(self) -> int:
        return self.count * type_size(self.element)


@dataclass(frozen=True)
class TypedefType:
    name: str
    target: "CType"

    @property
    def size(self) -> int:
        return type_size(self.target)


@dataclass(frozen=True)
class QualifiedType:
    qualifier: str            # "const" | "volatile" | "restrict" | "atomic"
    target: "CType"

    @property
    def size(self) -> int:
        return type_size(self.target)


@dataclass(frozen=True)
class FunctionType:
    name: str | None = None
    size: int = 0


CType = (VoidType | IntType | BoolType | FloatType | ComplexType | PointerType | StructType
         | EnumType | ArrayType | VectorType | TypedefType | QualifiedType | FunctionType)


def strip(ctype: CType) -> CType:
    """See through typedefs and qualifiers."""
    while isinstance(ctype, (TypedefType, QualifiedType)):
        ctype = ctype.target
    return ctype


def strip_qualifiers(ctype: CType) -> CType:
    """See through qualifiers, not typedefs (a typedef keeps its name)."""
    while isinstance(ctype, QualifiedType):
        ctype = ctype.target
    return ctype


def type_size(ctype: CType) -> int:
    return strip(ctype).size


def type_name(ctype: CType) -> str:
    """The type as C spells it, for messages and rendering: `struct point*`."""
    match ctype:
        case VoidType() | IntType() | BoolType() | FloatType() | ComplexType() | TypedefType():
            return ctype.name
        case PointerType():
            return _pointer_name(ctype)
        case StructType(language="rust", name=str() as name):
            return name
        case StructType():
            return f"{ctype.kind} {ctype.name or '<anonymous>'}"
        case EnumType():
            return f"enum {ctype.name or '<anonymous>'}"
        case ArrayType():
            return _array_name(ctype)
        case VectorType(element=element, count=count):
            # gdb's spelling (ptype): the element count, not C's byte size.
            return f"{type_name(element)} __attribute__ ((vector_size({count})))"
        case QualifiedType() if isinstance(strip_qualifiers(ctype.target), PointerType):
            # The pointer itself is qualified: C writes that after the `*`.
            return f"{type_name(ctype.target)} {ctype.qualifier}"
        case QualifiedType() if _element_has(ctype.target, ctype.qualifier):
            # C qualifies an array's elements, and GCC says so twice
            # (const -> array -> const char): `const char[14]`, as gdb.
            return type_name(ctype.target)
        case QualifiedType():
            return f"{ctype.qualifier} {type_name(ctype.target)}"
        case FunctionType():
            return "function"
    raise TypeError(f"not a CType: {ctype!r}")


def _element_has(ctype: CType, qualifier: str) -> bool:
    """`ctype` is an array whose innermost elements carry `qualifier`."""
    if not isinstance(ctype, ArrayType):
        return False
    element = ctype.element
    while isinstance(element, ArrayType):
        element = element.element
    while isinstance(element, QualifiedType):
        if element.qualifier == qualifier:
            return True
        element = element.target
    return False


def _pointer_name(ctype: PointerType) -> str:
    if ctype.name:
        return ctype.name
    target = ctype.target
    mark = "&" if ctype.reference else "*"
    if isinstance(strip(target), FunctionType):
        return f"function{mark}"
    return f"{type_name(target)}{mark}"


def _array_name(ctype: ArrayType) -> str:
    # `int m[2][3]` is ArrayType(ArrayType(int, 3), 2); C writes the
    # outermost dimension first, so collect dimensions walking inwards.
    dims = ""
    while isinstance(ctype, ArrayType):
        dims += f"[{'' if ctype.count is None else ctype.count}]"
        ctype = ctype.element
    return f"{type_name(ctype)}{dims}"


def same_definition(a: CType, b: CType, depth: int = 4) -> bool:
    """Whether two types (of one name, from two modules) lay out alike:
    the same kind, name and size, members with the same names, offsets,
    bit fields and types `depth` levels down; pointers by their target's
    name, so that a recursive struct compares in finite time."""
    if type(a) is not type(b):
        return False
    match a:
        case PointerType():
            return type_name(a) == type_name(b)
        case StructType():
            if (a.kind, a.name, a.size, a.is_declaration) != (b.kind, b.name, b.size,
                                                               b.is_declaration):
                return False
            return depth == 0 or (_same_members(a.members, b.members, depth - 1)
                                  and _same_bases(a.bases, b.bases, depth - 1))
        case TypedefType() | QualifiedType():
            return type_name(a) == type_name(b) and same_definition(a.target, b.target, depth)
        case ArrayType() | VectorType():
            return a.count == b.count and same_definition(a.element, b.element, depth)
    return a == b


def _same_members(a: tuple[StructMember, ...], b: tuple[StructMember, ...], depth: int) -> bool:
    return len(a) == len(b) and all(
        (x.name, x.offset, x.bit_size, x.bit_offset) == (y.name, y.offset, y.bit_size,
                                                          y.bit_offset)
        and same_definition(x.type, y.type, depth) for x, y in zip(a, b))


def _same_bases(a: tuple[BaseClass, ...], b: tuple[BaseClass, ...], depth: int) -> bool:
    return len(a) == len(b) and all(
        (x.offset, x.virtual, x.vbase_offset_at) == (y.offset, y.virtual, y.vbase_offset_at)
        and same_definition(x.type, y.type, depth) for x, y in zip(a, b))


def describe_definition(ctype: CType) -> str:
    """A one-line summary of a definition, to tell two apart in a message:
    `struct FallbackDuplicate { int lib_a_marker; int lib_a_value; }, 8 bytes`."""
    base = strip(ctype)
    if isinstance(base, StructType) and not base.is_declaration:
        members = " ".join(f"{type_name(m.type)} {m.name or ''};".replace(" ;", ";")
                           for m in base.members[:6])
        more = " ..." if len(base.members) > 6 else ""
        return f"{type_name(ctype)} {{ {members}{more} }}, {base.size} bytes"
    return f"{type_name(ctype)}, {type_size(ctype)} bytes"
