"""C's integer rules (C11 6.3.1.1 promotions, 6.3.1.8 usual arithmetic
conversions) on our type model, for expressions the probe computes."""
from __future__ import annotations

from gs_cgen.dwarf.types import (ArrayType, BoolType, CType, EnumType, FunctionType, IntType,
                                 PointerType, VoidType, strip, type_size)
from gs_cgen.plan import ir

INT = IntType("int", 4, True)
UINT = IntType("unsigned int", 4, False)
LONG = IntType("long", 8, True)
ULONG = IntType("unsigned long", 8, False)
BOOL = BoolType("bool", 1)
CHAR = IntType("char", 1, True, is_char=True)
VOID = VoidType()


def is_integer(ctype: CType | None) -> bool:
    """An integer the probe computes with: at most 64 bits (its registers'
    width); `__int128` is printed from memory but takes no part in arithmetic."""
    if ctype is None or is_wide_integer(ctype):
        return False
    return isinstance(strip(ctype), (IntType, BoolType, EnumType))


def is_wide_integer(ctype: CType | None) -> bool:
    base = strip(ctype) if ctype else None
    return isinstance(base, IntType) and base.size > 8


def is_pointer(ctype: CType | None) -> bool:
    return isinstance(strip(ctype), PointerType) if ctype else False


def is_scalar(ctype: CType | None) -> bool:
    return is_integer(ctype) or is_pointer(ctype)


def signedness(ctype: CType) -> bool:
    base = strip(ctype)
    return bool(getattr(base, "signed", False))


def promote(ctype: CType) -> IntType:
    """Integer promotion: anything narrower than int becomes int."""
    base = strip(ctype)
    size, signed = type_size(base), signedness(base)
    if size < 4 or isinstance(base, BoolType):
        return INT
    if size == 4:
        return INT if signed else UINT
    return LONG if signed else ULONG


def common_type(left: CType, right: CType) -> IntType:
    """Usual arithmetic conversions for two integer operands."""
    a, b = promote(left), promote(right)
    if a.signed == b.signed:
        return a if a.size >= b.size else b
    unsigned, signed = (a, b) if not a.signed else (b, a)
    if unsigned.size >= signed.size:
        return unsigned
    return signed          # a wider signed type holds every unsigned value


def literal_type(value: int) -> IntType:
    """C's type for a decimal constant: int, then long, then unsigned long."""
    if -(2**31) <= value < 2**31:
        return INT
    if -(2**63) <= value < 2**63:
        return LONG
    return ULONG


def pointee_size(ctype: CType) -> int:
    """Element size for pointer arithmetic; void* and function* scale by 1."""
    target = strip(strip(ctype).target)
    if isinstance(target, (VoidType, FunctionType)):
        return 1
    return type_size(target) or 1


def is_char_like(ctype: CType | None) -> bool:
    base = strip(ctype) if ctype else None
    return isinstance(base, IntType) and base.is_char


def is_string_type(ctype: CType | None) -> bool:
    """char*, const char*, unsigned char* and char[N]."""
    base = strip(ctype) if ctype else None
    if isinstance(base, PointerType):
        return is_char_like(base.target)
    if isinstance(base, ArrayType):
        return is_char_like(base.element)
    return False


def pointer_to(ctype: CType) -> PointerType:
    return PointerType(lambda: ctype)


def narrow(value: ir.Scalar, ctype: CType) -> ir.Scalar:
    """Apply C's conversion to `ctype` when it is an integer narrower than 64
    bits; constants are converted here, and a value already of that width
    and signedness (a load, a conversion) is left as it is."""
    if not is_integer(ctype) or type_size(ctype) >= 8:
        return value
    size, signed = type_size(ctype), signedness(ctype)
    match value:
        case ir.Const(value=number):
            bits = 8 * size
            number &= (1 << bits) - 1
            if signed and number >> (bits - 1):
                number -= 1 << bits
            return ir.Const(number)
        case ir.Convert(size=s, signed=sg) | ir.Load(size=s, signed=sg) \
                if (s, sg) == (size, signed):
            return value
    return ir.Convert(value, size, signed)
