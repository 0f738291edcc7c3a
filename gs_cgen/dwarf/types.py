"""The C type model built from DWARF DIEs.

Frozen dataclasses; pointer targets are loaded lazily so recursive types
(`struct node { struct node *next; }`) need no cycles. typedef and
qualifiers are kept so names render as the user wrote them; `strip()` sees
through them when the layout matters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable


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


@dataclass(frozen=True)
class FloatType:
    name: str
    size: int


@dataclass(frozen=True, eq=False)
class PointerType:
    """`target_loader` builds the pointee on first use."""

    target_loader: Callable[[], "CType"] = field(repr=False)
    size: int = 8

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


@dataclass(frozen=True, eq=False)
class StructType:
    """struct or union (`kind`). `members_loader` defers member types."""

    kind: str                 # "struct" | "union" | "class"
    name: str | None
    size: int
    members_loader: Callable[[], tuple[StructMember, ...]] = field(repr=False)
    is_declaration: bool = False

    @cached_property
    def members(self) -> tuple[StructMember, ...]:
        return self.members_loader()


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

    @property
    def size(self) -> int:
        return (self.count or 0) * type_size(self.element)


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


CType = (VoidType | IntType | BoolType | FloatType | PointerType | StructType
         | EnumType | ArrayType | TypedefType | QualifiedType | FunctionType)


def strip(ctype: CType) -> CType:
    """See through typedefs and qualifiers."""
    while isinstance(ctype, (TypedefType, QualifiedType)):
        ctype = ctype.target
    return ctype


def type_size(ctype: CType) -> int:
    return strip(ctype).size


def type_name(ctype: CType) -> str:
    """The type as C spells it, for messages and rendering: `struct point*`."""
    match ctype:
        case VoidType() | IntType() | BoolType() | FloatType() | TypedefType():
            return ctype.name
        case PointerType():
            return _pointer_name(ctype)
        case StructType():
            return f"{ctype.kind} {ctype.name or '<anonymous>'}"
        case EnumType():
            return f"enum {ctype.name or '<anonymous>'}"
        case ArrayType():
            return _array_name(ctype)
        case QualifiedType():
            return f"{ctype.qualifier} {type_name(ctype.target)}"
        case FunctionType():
            return "function"
    raise TypeError(f"not a CType: {ctype!r}")


def _pointer_name(ctype: PointerType) -> str:
    target = ctype.target
    if isinstance(strip(target), FunctionType):
        return "function*"
    return f"{type_name(target)}*"


def _array_name(ctype: ArrayType) -> str:
    # `int m[2][3]` is ArrayType(ArrayType(int, 3), 2); C writes the
    # outermost dimension first, so collect dimensions walking inwards.
    dims = ""
    while isinstance(ctype, ArrayType):
        dims += f"[{'' if ctype.count is None else ctype.count}]"
        ctype = ctype.element
    return f"{type_name(ctype)}{dims}"
