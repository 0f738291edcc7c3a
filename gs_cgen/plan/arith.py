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


def literal_type(value: int, decimal: bool = True) -> IntType:
    """C's type for an unsuffixed constant (C11 6.4.4.1): the first of int,
    long that holds a decimal value, of int, unsigned int, long, unsigned
    long that holds a 0x/0o/0b one. A decimal above LONG_MAX is unsigned
    long, C90's rule (gcc would make it __int128, which the probe cannot
    compute with)."""
    candidates = (INT, LONG, ULONG) if decimal else (INT, UINT, LONG, ULONG)
    return next((t for t in candidates if _fits(value, t)), ULONG)


def _fits(value: int, ctype: IntType) -> bool:
    bits = 8 * ctype.size
    low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if ctype.signed else (0, 1 << bits)
    return low <= value < high


def operand_type(value: ir.Scalar, ctype: CType) -> CType:
    """The type a value takes part in arithmetic with: a bit-field narrower
    than int promotes to int whatever its declared type, `unsigned int u:3`
    included (C11 6.3.1.1p2; gcc does the same for char/short/long
    bit-fields narrower than int)."""
    if isinstance(value, ir.BitField) and value.bit_size < 32 and is_integer(ctype):
        return INT
    return ctype


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


# ---------------------------------------------------------------------------
# Operators. C leaves some operations undefined; a tracer must not print a
# plausible number for them (docs/reference.md "Arithmetic"):
#   x / 0, x % 0                  -> error value "division by zero"
#   x << n, x >> n, n < 0 or n >= width of x's promoted type
#                                 -> error value "shift count out of range"
#   signed overflow (INT_MAX + 1, INT_MIN / -1, -LONG_MIN)
#                                 -> wraps in two's complement, as gcc -fwrapv
# Constant operands are decided here, when the probe is planned; run-time
# ones by the probe (ir.Below, and the emitter's divisor check).

SHIFT_RANGE = "shift count out of range"
DIVISION_BY_ZERO = "division by zero"
_MASK = (1 << 64) - 1


def operate(op: str, left: ir.Scalar, right: ir.Scalar, result: IntType) -> ir.Scalar:
    """`left op right` for operands already converted to C's types (the
    common type; for shifts the promoted left and right types), in
    `result`: folded when both are constants."""
    if op in ("<<", ">>"):
        right = _shift_count(right, 8 * result.size)
    elif op in ("/", "%") and isinstance(right, ir.Const) and right.value & _MASK == 0:
        return ir.Fail("GS_STATUS_DIV_BY_ZERO", DIVISION_BY_ZERO)
    if isinstance(right, ir.Fail):
        return right
    return narrow(fold(ir.BinaryOp(op, left, right, result.signed)), result)


def _shift_count(count: ir.Scalar, width: int) -> ir.Scalar:
    """The count, failing unless 0 <= count < width. The count is already
    extended to 64 bits by its own type, so a negative one is huge as u64."""
    if isinstance(count, ir.Const):
        if count.value & _MASK >= width:
            return ir.Fail("GS_STATUS_SHIFT_RANGE", SHIFT_RANGE)
        return count
    return ir.Below(count, width, "GS_STATUS_SHIFT_RANGE")


def fold(node: ir.Scalar) -> ir.Scalar:
    """Compute an operator of constants now, with the probe's 64-bit
    semantics (emit/scalar.py); anything else is returned as it is."""
    match node:
        case ir.BinaryOp(op, ir.Const(a), ir.Const(b), signed) if op not in ("/", "%") or b:
            return ir.Const(_binary_constant(op, a & _MASK, b & _MASK, signed))
        case ir.UnaryOp(op, ir.Const(a)):
            value = {"-": -a, "~": ~a, "!": int(a & _MASK == 0)}[op]
            return ir.Const(value & _MASK)
        case ir.Logical(op, ir.Const(a), right):
            decided = (a != 0) == (op == "||")            # short-circuit
            if decided:
                return ir.Const(int(op == "||"))
            return fold(ir.BinaryOp("!=", right, ir.Const(0), False))
    return node


def _binary_constant(op: str, a: int, b: int, signed: bool) -> int:
    sa, sb = (_signed64(a), _signed64(b)) if signed else (a, b)
    match op:
        case "/" | "%":
            quotient = abs(sa) // abs(sb)
            quotient = quotient if (sa < 0) == (sb < 0) else -quotient   # toward zero
            return (quotient if op == "/" else sa - quotient * sb) & _MASK
        case "<<":
            return (a << (b & 63)) & _MASK
        case ">>":
            return (sa >> (b & 63)) & _MASK
        case "==" | "!=":
            return int((a == b) == (op == "=="))
        case "<" | "<=" | ">" | ">=":
            return int({"<": sa < sb, "<=": sa <= sb, ">": sa > sb, ">=": sa >= sb}[op])
    return {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b,
            "^": a ^ b}[op] & _MASK


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value
