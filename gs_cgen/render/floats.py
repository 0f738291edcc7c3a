"""Floating-point bytes → numbers and text, exactly. Pure.

Python's float holds only IEEE binary64, so every format is decoded here from
its bits into an exact fraction: IEEE binary16/32/64/128, bfloat16, x87
80-bit extended precision (long double on x86_64) and the BID-encoded
decimal floats. Two renderings:

- `c_g_text`: C's `printf("%g")`, CONTRACT.md's rendering of float and double.
- `gdb_text`: what gdb 13's `print` shows for the value (target-float.c):
  `%.Ng` with N = DECIMAL_DIG of the format (ceil(1 + p·log10 2) for p
  significand bits: 21 for x87, 36 for binary128, 5 for binary16),
  `inf`/`-inf`, `nan(0xMANTISSA)` / `-nan(0x…)`, `<invalid float value>` for
  the x87 encodings the FPU itself rejects; decimal floats as the General
  Decimal Arithmetic to-scientific-string (libdecnumber, which gdb uses, and
  Python's `decimal` implement the same specification).
"""
from __future__ import annotations

import decimal
import math
import struct
from enum import Enum
from fractions import Fraction

from gs_cgen.dwarf.types import FloatFormat
from gs_cgen.lazydataclass import dataclass

INVALID = "<invalid float value>"


@dataclass(frozen=True)
class _Binary:
    exponent_bits: int
    mantissa_bits: int             # the stored significand field
    explicit_integer_bit: bool = False   # x87: the field includes the leading 1

    @property
    def total_bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def precision(self) -> int:
        """Significand bits, the hidden one included (gdb floatformat_precision)."""
        return self.mantissa_bits + (0 if self.explicit_integer_bit else 1)

    @property
    def decimal_digits(self) -> int:
        # gdb's floatformat_printf_format: ceil(1 + p * log10(2)).
        return math.ceil(1 + self.precision * 0.30102999566398119521)


_BINARY = {
    FloatFormat.BINARY16: _Binary(5, 10),
    FloatFormat.BFLOAT16: _Binary(8, 7),
    FloatFormat.BINARY32: _Binary(8, 23),
    FloatFormat.BINARY64: _Binary(11, 52),
    FloatFormat.X87_EXTENDED: _Binary(15, 64, explicit_integer_bit=True),
    FloatFormat.BINARY128: _Binary(15, 112),
}
# The formats Python's float decodes itself (binary32 widens to binary64
# exactly): the fast path for the common case.
_NATIVE = {FloatFormat.BINARY32: "<f", FloatFormat.BINARY64: "<d"}
# (bytes, exponent bits, bias, largest canonical coefficient): IEEE 754-2008 3.5.2.
_DECIMAL = {
    FloatFormat.DECIMAL32: (4, 8, 101, 10**7 - 1),
    FloatFormat.DECIMAL64: (8, 10, 398, 10**16 - 1),
    FloatFormat.DECIMAL128: (16, 14, 6176, 10**34 - 1),
}


class FloatKind(Enum):
    FINITE = "finite"
    INFINITE = "infinite"
    NAN = "nan"
    INVALID = "invalid"


@dataclass(frozen=True)
class BinaryFloat:
    """A decoded binary float: `magnitude` is exact for finite values;
    `mantissa` is the raw significand field (a NaN's payload)."""

    negative: bool
    kind: FloatKind
    magnitude: Fraction
    mantissa: int
    layout: _Binary


def is_decodable(fmt: FloatFormat) -> bool:
    return fmt in _BINARY or fmt in _DECIMAL


def significant_size(fmt: FloatFormat, size: int) -> int:
    """Bytes that carry the value: 10 of an x87 long double's 16 (the rest
    is padding that holds whatever the stack held)."""
    layout = _BINARY.get(fmt)
    return layout.total_bits // 8 if layout else size


def decode_binary(raw: bytes, fmt: FloatFormat) -> BinaryFloat:
    layout = _BINARY[fmt]
    bits = int.from_bytes(raw[:layout.total_bits // 8], "little")
    mantissa = bits & ((1 << layout.mantissa_bits) - 1)
    exponent = (bits >> layout.mantissa_bits) & ((1 << layout.exponent_bits) - 1)
    negative = bool(bits >> (layout.total_bits - 1))
    top = (1 << layout.exponent_bits) - 1
    if layout.explicit_integer_bit:
        integer_bit = mantissa >> (layout.mantissa_bits - 1)
        # Intel SDM vol. 1 8.2.2: pseudo-denormals, unnormals, pseudo-infinities
        # and pseudo-NaNs (integer bit not equal to "exponent != 0") are invalid
        # operands; gdb prints them as <invalid float value>.
        if (exponent == 0) != (integer_bit == 0):
            return BinaryFloat(negative, FloatKind.INVALID, Fraction(0), mantissa, layout)
        fraction = mantissa & ~(1 << (layout.mantissa_bits - 1))
        significand = mantissa
    else:
        fraction = mantissa
        significand = mantissa | (1 << layout.mantissa_bits) if exponent else mantissa
    if exponent == top:
        kind = FloatKind.NAN if fraction else FloatKind.INFINITE
        return BinaryFloat(negative, kind, Fraction(0), mantissa, layout)
    scale = max(exponent, 1) - layout.bias - (layout.precision - 1)
    magnitude = Fraction(significand) * (Fraction(2) ** scale)
    return BinaryFloat(negative, FloatKind.FINITE, magnitude, mantissa, layout)


def exact_value(raw: bytes, fmt: FloatFormat) -> Fraction | None:
    """The exact value of a finite float; None for inf, NaN, invalid."""
    if fmt in _DECIMAL:
        number = decode_decimal(raw, fmt)
        return Fraction(number) if number.is_finite() else None
    value = decode_binary(raw, fmt)
    if value.kind is not FloatKind.FINITE:
        return None
    return -value.magnitude if value.negative else value.magnitude


def is_negative(raw: bytes, fmt: FloatFormat) -> bool:
    if fmt in _DECIMAL:
        return decode_decimal(raw, fmt).is_signed()
    return decode_binary(raw, fmt).negative


def to_double(raw: bytes, fmt: FloatFormat) -> float:
    """The nearest Python float; inf and NaN keep their sign, and values
    beyond binary64's range become inf."""
    if fmt in _NATIVE:
        return struct.unpack_from(_NATIVE[fmt], raw)[0]
    sign = -1.0 if is_negative(raw, fmt) else 1.0
    value = exact_value(raw, fmt)
    if value is None:
        return math.copysign(math.inf if _is_infinite(raw, fmt) else math.nan, sign)
    try:
        number = float(abs(value))
    except OverflowError:
        number = math.inf
    return math.copysign(number, sign)


def exact_double(raw: bytes, fmt: FloatFormat) -> float | None:
    """The finite double equal to the value, or None when none is (a long
    double's extra digits, a decimal 0.1, inf, NaN)."""
    number = to_double(raw, fmt)
    if not math.isfinite(number):
        return None
    if fmt in _NATIVE or Fraction(number) == exact_value(raw, fmt):
        return number
    return None


def _is_infinite(raw: bytes, fmt: FloatFormat) -> bool:
    if fmt in _DECIMAL:
        return decode_decimal(raw, fmt).is_infinite()
    return decode_binary(raw, fmt).kind is FloatKind.INFINITE


def c_g_text(raw: bytes, fmt: FloatFormat) -> str:
    """C's `printf("%g")` of the value; glibc prints a negative NaN `-nan`."""
    if fmt in _NATIVE:
        number = struct.unpack_from(_NATIVE[fmt], raw)[0]
        if not math.isnan(number):
            return "%g" % number      # Python rounds exactly as glibc does
    value = decode_binary(raw, fmt)
    sign = "-" if value.negative else ""
    if value.kind is FloatKind.NAN or value.kind is FloatKind.INVALID:
        return f"{sign}nan"       # glibc prints invalid x87 operands as nan too
    if value.kind is FloatKind.INFINITE:
        return f"{sign}inf"
    return sign + printf_g(value.magnitude, 6)


def gdb_text(raw: bytes, fmt: FloatFormat) -> str:
    """gdb's `print` of the value (see the module docstring)."""
    if fmt in _DECIMAL:
        return str(decode_decimal(raw, fmt))
    value = decode_binary(raw, fmt)
    sign = "-" if value.negative else ""
    match value.kind:
        case FloatKind.INVALID:
            return INVALID
        case FloatKind.NAN:
            return f"{sign}nan(0x{_gdb_mantissa_hex(value)})"
        case FloatKind.INFINITE:
            return f"{sign}inf"
    return sign + printf_g(value.magnitude, value.layout.decimal_digits)


def _gdb_mantissa_hex(value: BinaryFloat) -> str:
    # gdb's floatformat_mantissa: the field's leading (len % 32) bits in
    # `%lx`, then each further 32 bits as `%08lx`.
    length = value.layout.mantissa_bits
    head_bits = length % 32 or 32
    text = f"{value.mantissa >> (length - head_bits):x}"
    for shift in range(length - head_bits - 32, -1, -32):
        text += f"{(value.mantissa >> shift) & 0xFFFFFFFF:08x}"
    return text


def printf_g(magnitude: Fraction, precision: int) -> str:
    """C's `%.{precision}g` of a non-negative exact value (C11 7.21.6.1):
    round to `precision` significant digits, half to even as glibc does on
    the exact binary value; fixed notation when -4 <= exponent < precision,
    else d.ddde±XX; trailing zeros and a trailing point removed."""
    if magnitude == 0:
        return "0"
    exponent = _decimal_exponent(magnitude)
    digits = _round_half_even(magnitude / _power_of_ten(exponent - precision + 1))
    if digits == 10 ** precision:                 # 9.99… rounded up to 10.0…
        exponent, digits = exponent + 1, digits // 10
    text = str(digits)
    if -4 <= exponent < precision:
        if exponent >= 0:
            whole, rest = text[:exponent + 1], text[exponent + 1:]
        else:
            whole, rest = "0", "0" * (-exponent - 1) + text
        rest = rest.rstrip("0")
        return f"{whole}.{rest}" if rest else whole
    rest = text[1:].rstrip("0")
    mantissa = f"{text[0]}.{rest}" if rest else text[0]
    return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _decimal_exponent(value: Fraction) -> int:
    """floor(log10(value)) for value > 0, exactly."""
    estimate = math.floor(math.log10(value.numerator) - math.log10(value.denominator))
    while _power_of_ten(estimate) > value:
        estimate -= 1
    while _power_of_ten(estimate + 1) <= value:
        estimate += 1
    return estimate


def _power_of_ten(exponent: int) -> Fraction:
    return Fraction(10) ** exponent


def _round_half_even(value: Fraction) -> int:
    floor = value.numerator // value.denominator
    remainder = value - floor
    if remainder > Fraction(1, 2) or (remainder == Fraction(1, 2) and floor % 2):
        return floor + 1
    return floor


def decode_decimal(raw: bytes, fmt: FloatFormat) -> decimal.Decimal:
    """A BID-encoded decimal float (IEEE 754-2008 3.5.2, the x86_64 psABI's
    encoding) as an exact Python Decimal, payloads and signed zeros kept."""
    size, exponent_bits, bias, largest = _DECIMAL[fmt]
    bits = int.from_bytes(raw[:size], "little")
    width = 8 * size
    sign = bits >> (width - 1)
    trailing = width - 1 - exponent_bits          # coefficient bits in the short form
    if (bits >> (width - 3)) & 0b11 == 0b11:
        special = (bits >> (width - 6)) & 0b11111
        if special == 0b11110:
            return decimal.Decimal((sign, (), "F"))
        if special == 0b11111:
            # The payload is the trailing significand field: what follows the
            # sign and the (exponent bits + 3)-bit combination field.
            payload = bits & ((1 << (width - exponent_bits - 4)) - 1)
            digits = tuple(map(int, str(payload))) if 0 < payload <= largest // 10 else ()
            return decimal.Decimal((sign, digits, "N" if bits >> (width - 7) & 1 else "n"))
        exponent = (bits >> (trailing - 2)) & ((1 << exponent_bits) - 1)
        coefficient = (0b100 << (trailing - 2)) | (bits & ((1 << (trailing - 2)) - 1))
    else:
        exponent = (bits >> trailing) & ((1 << exponent_bits) - 1)
        coefficient = bits & ((1 << trailing) - 1)
    if coefficient > largest:
        coefficient = 0                           # non-canonical: the standard reads 0
    return decimal.Decimal((sign, tuple(map(int, str(coefficient))), exponent - bias))
