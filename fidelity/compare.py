"""Canonical values and the verdict for each variable at each site.

Both tools' values become one canonical JSON form, compared exactly:
  integers (__int128 too) and bitfields -> the number; bool -> true/false
  _Float16, float, double -> "f:" + float.hex() of the exact value ("f:-nan", "f:inf"),
                             from gdb's bits (its float() would drop a NaN's sign)
  long double             -> "x87:" + the value rounded to x87's 64-bit
                             significand ([-]SIGNIFICANDpEXPONENT): exact from
                             gdb's 80 bits; whatever decimal text or number
                             gs-cgen gives is rounded the same way; an
                             encoding the FPU rejects (integer bit not equal
                             to "exponent != 0") -> "x87:invalid", gdb's
                             `<invalid float value>`, which gs-cgen prints too
  enum                    -> "enum:NAME" (first enumerator with that value; a Rust
                             one's last path component), else the number
  pointer                 -> "p:0x..."; a DW_OP_implicit_pointer (gdb: <synthetic
                             pointer>) -> {"synthetic pointer": POINTEE}: no
                             address equals it; gs-cgen's `<error: synthetic
                             pointer ...>` with `*NAME` as the pointee does
  char array, and a char pointer that is a variable itself (not a member;
  in a target compared by layout a pointer: as_layout)
                          -> "str:" + its text up to the first NUL, UTF-8 with
                             \\xNN escapes, cut to STRING_CHARS characters;
                             "str:NULL" for a null char pointer; one whose text
                             cannot be read is unavailable
  struct, union           -> {member: VALUE}, anonymous members flattened;
                             _Complex -> {"real": VALUE, "imag": VALUE}
  array, vector           -> [VALUE, ...]
  Rust enum               -> {"variant": NAME, "fields": {member: VALUE}}: the
                             active variant (gdb's print/r, gs-cgen's raw())
  unavailable             -> None (gdb: optimized out, an error, or
                             `[uninitialized]` (DW_OP_GNU_uninit: gdb shows
                             whatever the location holds but says it is no
                             value yet); gs-cgen: any status but ok/truncated,
                             a missing member, or an aggregate with no leaf
                             where gdb's whole value is optimized out)

A variable is one value, however many members it has. Comparing leaf by
leaf (the gdb value gives the shape):
  MISMATCH            some leaf both tools have differs
  TRACER_ONLY         gs-cgen has a leaf that gdb says is optimized out
  TRACER_UNAVAILABLE  gdb has a leaf that gs-cgen does not (a struct only
                      partly read counts here)
  MATCH               every leaf gdb has, gs-cgen has, equal; none more
  BOTH_UNAVAILABLE    gdb has no leaf and neither has gs-cgen
  TRACER_ERROR        gs-cgen gave no value at all: the name was refused,
                      the script failed, or the site had no event
(first rule that applies wins). "gdb reads" a value when it has any leaf.
"""
from __future__ import annotations

import math
import re
import struct
from decimal import Decimal, InvalidOperation
from fractions import Fraction

STRING_CHARS = 64

MATCH = "MATCH"
MISMATCH = "MISMATCH"
TRACER_UNAVAILABLE = "TRACER_UNAVAILABLE"
BOTH_UNAVAILABLE = "BOTH_UNAVAILABLE"
TRACER_ONLY = "TRACER_ONLY"
TRACER_ERROR = "TRACER_ERROR"
VERDICTS = (MATCH, MISMATCH, TRACER_UNAVAILABLE, BOTH_UNAVAILABLE, TRACER_ONLY, TRACER_ERROR)

_ENUM_TEXT = re.compile(r"^(?:.*::)?(?:<(?P<number>-?\d+)>|(?P<name>[A-Za-z_]\w*))$")


# ------------------------------------------------------------------ scalars

def float_key(number: float) -> str:
    if math.isnan(number):
        return "f:-nan" if math.copysign(1.0, number) < 0 else "f:nan"
    return "f:" + number.hex()


def x87_key(value: Fraction | None, sign: str = "") -> str | None:
    """An exact value rounded to x87 extended precision (64-bit
    significand, round half to even): "x87:[-]SIGNIFICANDpEXPONENT"."""
    if value is None:
        return None
    if value == 0:
        return f"x87:{sign}0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    significand = round(magnitude / Fraction(2) ** (exponent - 63))   # in [2**63, 2**64]
    if significand == 2 ** 64:
        significand, exponent = 2 ** 63, exponent + 1
    return f"x87:{sign}{significand:x}p{exponent}"


X87_INVALID = "x87:invalid"
_INVALID_FLOAT_TEXT = "<invalid float value>"


def x87_from_bits(bits: int) -> str | None:
    sign = "-" if bits >> 79 else ""
    exponent, significand = (bits >> 64) & 0x7FFF, bits & (2 ** 64 - 1)
    if (exponent == 0) != (significand >> 63 == 0):
        # pseudo-denormal, unnormal, pseudo-infinity or pseudo-NaN: gdb's
        # floatformat_i387_ext_is_valid says no, and `print` shows
        # <invalid float value> (clang's garbage stack slots at an entry PC)
        return X87_INVALID
    if exponent == 0x7FFF:
        return f"x87:{sign}inf" if significand << 1 == 2 ** 64 else f"x87:{sign}nan"
    value = Fraction(significand) * Fraction(2) ** (max(exponent, 1) - 16383 - 63)
    return x87_key(-value if sign else value, sign)


def x87_from_text(text) -> str | None:
    """gs-cgen's long double, as decimal text or a JSON number."""
    lowered = str(text).strip().lower()
    if lowered == _INVALID_FLOAT_TEXT:
        return X87_INVALID
    if "inf" in lowered or "nan" in lowered:
        return "x87:" + ("-" if lowered.startswith("-") else "") + ("inf" if "inf" in lowered else "nan")
    try:
        value = Fraction(Decimal(lowered))
    except (InvalidOperation, ValueError):
        return None
    return x87_key(value, "-" if lowered.startswith("-") else "")


_IEEE_FORMATS = {2: "<e", 4: "<f", 8: "<d"}


def _ieee_key(bits: int, size: int) -> str:
    return float_key(struct.unpack(_IEEE_FORMATS[size], bits.to_bytes(size, "little"))[0])


def _string_key(data: bytes | str) -> str:
    text = data.decode("utf-8", "backslashreplace") if isinstance(data, bytes) else data
    return "str:" + text[:STRING_CHARS]


# ------------------------------------------------------------------ gdb side

def from_gdb(raw: dict):
    """The canonical form of a gdb_script.py raw value."""
    kind = raw["k"]
    match kind:
        case "int" | "bool":
            return raw["v"]
        case "float":
            return _ieee_key(int(raw["bits"], 16), raw["size"])
        case "ldouble":
            return x87_from_bits(int(raw["bits"], 16))
        case "enum":
            # Rust's enumerators are paths (`values::Level::High`): the
            # last component names the enumerator, as gs-cgen prints it.
            return f"enum:{raw['name'].rsplit('::', 1)[-1]}" if raw["name"] else raw["v"]
        case "ptr":
            return f"p:0x{raw['v']:x}"
        case "synthetic":
            return {"synthetic pointer": from_gdb(raw["pointee"])}
        case "cstr":
            if raw.get("null"):
                return "str:NULL"
            if raw.get("unreadable"):
                return None                       # gdb has the pointer, not the value
            return _string_key(bytes.fromhex(raw["hex"]))
        case "chars":
            return _string_key(bytes.fromhex(raw["hex"]))
        case "struct":
            return {name: from_gdb(member) for name, member in raw["fields"]}
        case "array":
            return [from_gdb(item) for item in raw["items"]]
        case "variant":
            return {"variant": raw["name"], "fields": from_gdb(raw["payload"])}
        case "other":
            return {"other": raw["text"]}
    return None                                   # optout, error


def as_layout(raw: dict) -> dict:
    """A gdb raw value as a target compared by DWARF layout reads it: a
    top-level `char *` is its address, as raw(NAME) prints it (gdb's
    print/r shows the address and the text; the text is no part of the
    pointer's layout)."""
    if raw["k"] == "cstr":
        return {"k": "ptr", "v": 0 if raw.get("null") else raw["ptr"]}
    return raw


# --------------------------------------------------------------- gs-cgen side

def from_tracer(entry: dict, shape: dict):
    """The canonical form of one gs-cgen JSON value (CONTRACT.md "--output
    json": {expr, type, value, status}), read as the type gdb's raw value
    `shape` has (gs-cgen's JSON does not say every member's type)."""
    status = entry.get("status")
    if shape["k"] == "cstr" and status == "null_deref":
        return "str:NULL"
    if status not in ("ok", "truncated"):
        return None
    return _tracer_value(entry.get("value"), shape)


def _tracer_value(value, shape: dict):
    if value is None:
        return None
    kind = shape["k"]
    if kind in ("optout", "error", "uninit"):     # no shape from gdb: keep it as it is
        # ... unless it has no leaf either: gdb calls a whole element in an
        # optimized-out piece optimized out, gs-cgen gives its every member
        # as null (clang's arrays in pieces)
        return {"value": value} if _has_leaf(value) else None
    converter = _CONVERTERS.get(kind)
    converted = converter(value, shape) if converter else None
    return converted if converted is not None else {"unexpected": value}


def _has_leaf(value) -> bool:
    if isinstance(value, list):
        return any(_has_leaf(item) for item in value)
    if isinstance(value, dict):
        return any(_has_leaf(member) for member in value.values())
    return value is not None


def _int(value, _shape):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value, _shape):
    return value if isinstance(value, bool) else None


def _float(value, _shape):
    if isinstance(value, str):
        with_sign = value.strip().lower()
        if with_sign in ("nan", "-nan", "inf", "-inf"):
            return "f:" + with_sign
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float_key(float(value))
    return None


def _long_double(value, _shape):
    return x87_from_text(value) if isinstance(value, (int, float, str)) else None


def _enum(value, _shape):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _ENUM_TEXT.match(value) if isinstance(value, str) else None
    if not match:
        return None
    return int(match["number"]) if match["number"] else f"enum:{match['name']}"


def _pointer(value, _shape):
    if isinstance(value, dict) and isinstance(value.get("address"), int):
        return f"p:0x{value['address']:x}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"p:0x{value:x}"
    return None


def _string(value, _shape):
    return _string_key(value) if isinstance(value, str) else None


def _struct(value, shape):
    if not isinstance(value, dict):
        return None
    return {name: _tracer_value(value.get(name), member) for name, member in shape["fields"]}


def _array(value, shape):
    if not isinstance(value, list):
        return None
    items = value + [None] * (len(shape["items"]) - len(value))
    return [_tracer_value(item, member) for item, member in zip(items, shape["items"])]


def _variant(value, shape):
    """gs-cgen's JSON enum: {"variant": NAME, "fields": ...}, its raw()
    payload an object of the variant's members ([] when it has none)."""
    if not (isinstance(value, dict) and isinstance(value.get("variant"), str)
            and value.keys() == {"variant", "fields"}):
        return None
    fields = value["fields"]
    return {"variant": value["variant"],
            "fields": _tracer_value({} if fields == [] else fields, shape["payload"])}


_CONVERTERS = {
    "int": _int, "bool": _bool, "float": _float, "ldouble": _long_double, "enum": _enum,
    "ptr": _pointer, "synthetic": _pointer, "cstr": _string, "chars": _string,
    "struct": _struct, "array": _array, "variant": _variant,
}


# ------------------------------------------------------------------ verdict

_OPAQUE = ("unexpected", "value", "other")        # marker dicts that are one leaf


def leaves(value, path: str = ""):
    """(path, leaf) pairs; a synthetic pointer's leaves are its pointee's ("*")."""
    if isinstance(value, dict) and "synthetic pointer" in value:
        yield from leaves(value["synthetic pointer"], f"{path}*")
    elif isinstance(value, dict) and not any(marker in value for marker in _OPAQUE):
        for name, member in value.items():
            yield from leaves(member, f"{path}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def gdb_reads(gdb_value) -> bool:
    return any(leaf is not None for _, leaf in leaves(gdb_value))


def verdict(gdb_value, tracer_value) -> tuple[str, list[str]]:
    """The verdict and the member paths that decided it."""
    tracer_leaves = dict(leaves(tracer_value)) if isinstance(tracer_value, (dict, list)) \
        and _same_shape(gdb_value, tracer_value) else None
    found = {MISMATCH: [], TRACER_ONLY: [], TRACER_UNAVAILABLE: []}
    if tracer_leaves is None:
        # A scalar, or shapes that do not fit: compare as one value (an
        # aggregate gdb has no leaf of, say a Rust String whose every
        # member is optimized out beside its zero-sized markers, is none).
        pairs = [("", gdb_value if gdb_reads(gdb_value) else None, tracer_value)]
    else:
        pairs = [(path, leaf, tracer_leaves.get(path)) for path, leaf in leaves(gdb_value)]
    for path, ours, theirs in pairs:
        if ours is None and theirs is None:
            continue
        if ours is None:
            found[TRACER_ONLY].append(path)
        elif theirs is None:
            found[TRACER_UNAVAILABLE].append(path)
        elif ours != theirs:
            found[MISMATCH].append(path)
    # A member of another shape than gdb's (say an object where gdb has a
    # struct's members) is a wrong value, not a missing one.
    found[MISMATCH] += [path for path, leaf in (tracer_leaves or {}).items()
                        if _unexpected(leaf) and path not in found[MISMATCH]]
    for name in (MISMATCH, TRACER_ONLY, TRACER_UNAVAILABLE):
        if found[name]:
            return name, found[name]
    return (MATCH if gdb_reads(gdb_value) else BOTH_UNAVAILABLE), []


def _unexpected(leaf) -> bool:
    return isinstance(leaf, dict) and "unexpected" in leaf


def _same_shape(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys()
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b)
    return False
