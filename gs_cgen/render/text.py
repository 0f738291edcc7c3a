"""Value trees → the text and JSON that CONTRACT.md ("Rendering") and
docs/rendering.md specify. Shared by the plain, pretty and JSON outputs.

`value_text`/`error_text`/`enum_text` serve the older `decode.Value` (duck
typed, so this module does not import it) until decode.py produces
`values.Value` trees; new code calls `format_value`.
"""
from __future__ import annotations

from gs_cgen.dwarf.types import (CType, FloatFormat, PointerType, StructType, strip,
                                 type_name, type_size)
from gs_cgen.render import floats
from gs_cgen.render.status import ValueStatus
from gs_cgen.render.values import (ArrayValue, BoolValue, ComplexValue, EnumValue, ErrorValue,
                                   FloatValue, IntValue, MapValue, OwnerValue, PointerValue, StringValue,
                                   StructValue, TupleValue, UnitValue, UnknownReason, UnknownValue, Value,
                                   VariantValue, aggregate_name)
from gs_cgen.script.ast import FormatKind

TRUNCATED = "... <truncated>"

_STATUS_NAMES = {
    ValueStatus.OK: "ok",
    ValueStatus.OPTIMIZED_OUT: "optimized_out",
    ValueStatus.NULL_DEREF: "null_deref",
    ValueStatus.READ_ERROR: "read_error",
    ValueStatus.ACCESS_ERROR: "read_error",     # a failed read either way
    ValueStatus.OFFSETS_UNAVAILABLE: "offsets_unavailable",
    ValueStatus.TRUNCATED: "truncated",
    ValueStatus.UNAVAILABLE: "unavailable",
    ValueStatus.ZERO_LENGTH: "unavailable",
    ValueStatus.TLS_UNAVAILABLE: "tls_unavailable",
    ValueStatus.TLS_NOT_ALLOCATED: "tls_not_allocated",
    ValueStatus.LENGTH_OVER_LIMIT: "length_over_limit",
}
# Why a thread-local value is missing (gs_prelude.h gs_tls_block).
TLS_UNAVAILABLE_TEXT = "TLS offsets unavailable"
TLS_NOT_ALLOCATED_TEXT = "TLS block not allocated for this thread"


def format_value(value: Value, kind: FormatKind = FormatKind.DEFAULT) -> str:
    """One value as `print` shows it; `kind` is the `{}`/`{:x}`/`{:X}`/
    `{:p}`/`{:s}` specifier, applied to every element of an aggregate."""
    match value:
        case ErrorValue(status=status, address=address, detail=detail):
            return status_text(status, address, detail)
        case UnknownValue(reason=UnknownReason.DEPTH_LIMIT):
            return "{...}"
        case UnknownValue(ctype=ctype, data=data):
            return f"<unsupported type {type_name(ctype)}: {format_dump(data, 'x', False)}>"
        case StructValue():
            return _struct_text(value, kind)
        case ArrayValue(elements=elements, truncated=truncated, more=more):
            parts = [format_value(e, kind) for e in elements] + ([f"... <{more} more>"] if more else [])
            return "[" + _join(parts, truncated) + "]"
        case MapValue(entries=entries, is_set=is_set, more=more):
            parts = [format_value(e, kind) if is_set else
                     f"{format_value(e[0], kind)}: {format_value(e[1], kind)}" for e in entries]
            return "{" + ", ".join(parts + ([f"... <{more} more>"] if more else [])) + "}"
        case TupleValue(name=name, elements=elements):
            return (name or "") + "(" + ", ".join(format_value(e, kind) for e in elements) + \
                ("," if name is None and len(elements) == 1 else "") + ")"
        case UnitValue(name=name):
            return name
        case VariantValue(payload=payload, label=None):
            return format_value(payload, kind)
        case VariantValue(payload=payload, label=label, variant=variant):
            return f"{label}({variant}: {format_value(payload, kind)})"
        case OwnerValue():
            return _owner_text(value, kind)
        case StringValue():
            return _string_text(value, kind)
        case PointerValue():
            return _pointer_text(value, kind)
        case FloatValue() if kind is FormatKind.DEFAULT:
            return float_text(value)
        case ComplexValue(real=real, imag=imag):
            # gdb's form (generic_val_print_complex): `1.5 + -0.25i`.
            return f"{format_value(real, kind)} + {format_value(imag, kind)}i"
    return _integer_text(value, kind)


# CONTRACT.md renders float and double as C's %g; it is silent on the
# other floating types, so those render as gdb prints them (docs/rendering.md).
_CONTRACT_FORMATS = (FloatFormat.BINARY32, FloatFormat.BINARY64)


_RUST_FLOATS = ("f32", "f64")


def float_text(value: FloatValue) -> str:
    if getattr(value.ctype, "name", None) in _RUST_FLOATS:
        return rust_float_text(value.number, value.format)
    if value.format in _CONTRACT_FORMATS:
        return floats.c_g_text(value.raw, value.format)
    return floats.gdb_text(value.raw, value.format)


def rust_float_text(number: float, fmt: FloatFormat) -> str:
    """Rust's `{:?}` of an f32/f64: the shortest text that reads back
    (`1.5`, `1.0`, `0.1`), in exponent form below 1e-5 and from 1e16
    (`1e-7`, `1e16`), `inf`, `NaN`."""
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "inf" if number > 0 else "-inf"
    if fmt is FloatFormat.BINARY32:
        import struct  # noqa: PLC0415
        text = _shortest_f32(number, struct)
    else:
        text = repr(number)
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-5 or magnitude >= 1e16):
        mantissa, _, exponent = f"{float(text):e}".partition("e")
        mantissa = _shortest_mantissa(float(text))
        return f"{mantissa}e{int(exponent)}"
    if "e" in text:
        text = f"{float(text):f}".rstrip("0")
    return text if "." in text else text + ".0"


def _shortest_mantissa(number: float) -> str:
    text = f"{number:e}"
    for digits in range(0, 17):
        candidate = f"{number:.{digits}e}"
        if float(candidate) == number:
            text = candidate
            break
    mantissa = text.split("e")[0]
    return mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa


def _shortest_f32(number: float, struct) -> str:
    packed = struct.pack("<f", number)
    for digits in range(1, 10):
        candidate = f"{number:.{digits}g}"
        if struct.pack("<f", float(candidate)) == packed:
            return repr(float(candidate))
    return repr(number)


def format_dump(data: bytes, style: str, truncated: bool) -> str:
    """A `{:x.N}` (`"x"`, or `"X"`) or `{:s.N}` (`"s"`) memory dump."""
    match style:
        case "x":
            text = " ".join(f"{byte:02x}" for byte in data)
        case "X":
            text = " ".join(f"{byte:02X}" for byte in data)
        case "s":
            text = escape_bytes(data.split(b"\0", 1)[0], quoted=False)
        case _:
            raise ValueError(f"unknown dump style {style!r}")
    return _mark_truncated(text, truncated)


def value_json(value: Value) -> object:
    """The `"value"` of docs/rendering.md "JSON values"; None when unavailable."""
    match value:
        case BoolValue(flag=flag):
            return flag
        case IntValue(number=number):
            return number
        case FloatValue(raw=raw, format=fmt):
            # A number where a JSON (binary64) number holds the value exactly;
            # else, and for inf/nan (no JSON literal), the text form.
            number = floats.exact_double(raw, fmt)
            return float_text(value) if number is None else number
        case ComplexValue(real=real, imag=imag):
            return {"real": value_json(real), "imag": value_json(imag)}
        case EnumValue():
            return format_value(value)
        case PointerValue(ctype=ctype, address=address):
            return {"address": address, "type": _pointer_type_name(ctype)}
        case StringValue(data=data):
            return data.decode("utf-8", "backslashreplace")
        case StructValue(fields=fields):
            return {name: value_json(field) for name, field in fields}
        case ArrayValue(elements=elements, more=more):
            shown = [value_json(element) for element in elements]
            return _cut_json("elements", shown, len(shown) + more) if more else shown
        case TupleValue(elements=elements):
            return [value_json(element) for element in elements]
        case MapValue(entries=entries, is_set=True, more=more):
            shown = [value_json(key) for key in entries]
            return _cut_json("elements", shown, len(shown) + more) if more else shown
        case MapValue(entries=entries, more=more):
            shown = [{"key": value_json(k), "value": value_json(v)} for k, v in entries]
            return _cut_json("entries", shown, len(shown) + more) if more else shown
        case OwnerValue(address=address, target=target, use_count=use_count):
            owner = {"address": address, "value": None if target is None else value_json(target)}
            return owner if use_count is None else {**owner, "use_count": use_count}
        case UnitValue(name="()"):
            return []                            # the empty tuple, as tuples are arrays
        case UnitValue(name=name):
            return name
        case VariantValue(variant=variant, payload=payload, label=label) if label:
            return {"variant": int(variant), "fields": [value_json(payload)]}
        case VariantValue(variant=variant, payload=payload):
            fields = value_json(payload)
            return {"variant": variant, "fields": [] if isinstance(payload, UnitValue) else fields}
    return None                                  # ErrorValue, UnknownValue


def value_status(value: Value) -> str:
    """The JSON `"status"`: an error's kind, `truncated` when any part of
    the value was cut by the cap, `unavailable` for undecodable types."""
    match value:
        case ErrorValue(status=status):
            # A status outside the contract's list (e.g. division by zero)
            # is still "no value here".
            return _STATUS_NAMES.get(status, "unavailable")
        case UnknownValue():
            return "unavailable"
    return "truncated" if _is_truncated(value) else "ok"


def status_text(status: ValueStatus, address: int | None = None,
                detail: str | None = None) -> str:
    """The text of a value that could not be read; never a number."""
    match status:
        case ValueStatus.OPTIMIZED_OUT:
            return "<OPTIMIZED_OUT>"
        case ValueStatus.NULL_DEREF:
            return "<error: null pointer dereference>"
        case ValueStatus.READ_ERROR | ValueStatus.ACCESS_ERROR:
            return f"<error: read failed at 0x{address or 0:x}>"
        case ValueStatus.OFFSETS_UNAVAILABLE:
            return "<error: offsets unavailable>"
        case ValueStatus.TLS_UNAVAILABLE:
            return f"<error: {TLS_UNAVAILABLE_TEXT}>"
        case ValueStatus.TLS_NOT_ALLOCATED:
            return f"<error: {TLS_NOT_ALLOCATED_TEXT}>"
        case ValueStatus.UNAVAILABLE:
            return f"<error: {detail}>"
        case ValueStatus.ZERO_LENGTH:
            return "<error: zero length>"
        case ValueStatus.TRUNCATED:
            return TRUNCATED
        case ValueStatus.LENGTH_OVER_LIMIT:
            return f"<error: {length_over_limit_text(address or 0)}>"
    return f"<error: {status.value.replace('_', ' ')}>"


def length_over_limit_text(packed: int) -> str:
    """A comparison's run-time length beyond the bytes it can compare
    (gs_prelude.h gs_compare_length packs limit << 32 | length)."""
    limit, length = packed >> 32, packed & 0xFFFFFFFF
    shown = f"{length}" if length < 0xFFFFFFFF else f"at least {length}"
    return f"length {shown} is more than the {limit} bytes this comparison can compare"


def escape_bytes(data: bytes, quoted: bool) -> str:
    """Printable ASCII as is, everything else `\\xNN`; inside quotes `"`
    and `\\` are backslash-escaped so the text reads back unambiguously."""
    out = []
    for byte in data:
        char = chr(byte)
        if quoted and char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= byte <= 0x7E:
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


_RUST_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\",
                 '"': '\\"'}


def rust_escape(data: bytes) -> str:
    """A Rust string's text as `{:?}` quotes it: `\\0 \\t \\n \\r \\\\ \\"`,
    other unprintable characters as `\\u{1b}`, bytes that are not UTF-8
    (an OsString's) as `\\xFF`."""
    out = []
    for char in data.decode("utf-8", "surrogateescape"):
        if char in _RUST_ESCAPES:
            out.append(_RUST_ESCAPES[char])
        elif "\udc80" <= char <= "\udcff":
            out.append(f"\\x{ord(char) - 0xDC00:02X}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(f"\\u{{{ord(char):x}}}")
    return "".join(out)


def _struct_text(value: StructValue, kind: FormatKind) -> str:
    fields = [f"{name}: {format_value(field, kind)}" for name, field in value.fields]
    body = _join(fields, value.truncated)
    braces = f"{{ {body} }}" if body else "{}"
    base = strip(value.ctype)
    name = value.name or aggregate_name(value.ctype)
    if value.name is None and isinstance(base, StructType) and base.kind == "union":
        name = f"union {name}" if name else "union"
    return f"{name} {braces}" if name else braces


def _join(parts: list[str], truncated: bool) -> str:
    return ", ".join(parts + [TRUNCATED] if truncated else parts)


def _string_text(value: StringValue, kind: FormatKind) -> str:
    match kind:
        case FormatKind.DEFAULT:
            escaped = rust_escape(value.data) if value.rust else escape_bytes(value.data, True)
            text = '"' + escaped + '"'
            return text + TRUNCATED if value.truncated else text    # `"aaaa"... <truncated>`
        case FormatKind.POINTER:
            if value.address is None:
                return status_text(ValueStatus.UNAVAILABLE, detail="address unavailable")
            return f"0x{value.address:x}"
        case FormatKind.HEX:
            text = value.data.hex()
        case FormatKind.HEX_UPPER:
            text = value.data.hex().upper()
        case _:
            text = escape_bytes(value.data, quoted=False)
    return _mark_truncated(text, value.truncated)


def _mark_truncated(text: str, truncated: bool) -> str:
    # Unquoted text and dumps get a space before the marker so it cannot
    # be read as part of the data.
    if not truncated:
        return text
    return f"{text} {TRUNCATED}" if text else TRUNCATED


def _pointer_text(value: PointerValue, kind: FormatKind) -> str:
    match kind:
        case FormatKind.HEX:
            return f"{value.address:x}"
        case FormatKind.HEX_UPPER:
            return f"{value.address:X}"
        case FormatKind.POINTER:
            return f"0x{value.address:x}"
    # {:s} on a pointer needs the string the probe followed (a StringValue);
    # given only the pointer, show the pointer rather than invent text.
    where = f"0x{value.address:x}" if value.address else "NULL"
    return f"{where} ({_pointer_type_name(value.ctype)})"


def _pointer_type_name(ctype: CType | None) -> str:
    # A type is the same object for every event of a probe, and a large
    # struct's pointers are named millions of times (SQLite's parser state:
    # 2.6 M in 4,800 events): each name is computed once. The entry keeps
    # the type alive, so its id is never another type's.
    known = _POINTER_TYPE_NAMES.get(id(ctype))
    if known is not None and known[0] is ctype:
        return known[1]
    # `typedef int (*op_t)(int)` still prints as `function*`: the pointer
    # form always names the pointee, keeping the pointee's own typedefs.
    base = strip(ctype) if ctype is not None else None
    if isinstance(base, PointerType):
        name = type_name(base)
    else:
        name = type_name(ctype) if ctype is not None else "void*"
    _POINTER_TYPE_NAMES[id(ctype)] = (ctype, name)
    return name


_POINTER_TYPE_NAMES: dict[int, tuple[CType | None, str]] = {}


def _integer_text(value: Value, kind: FormatKind) -> str:
    """Integers, bools, enums, and floats under a non-default specifier
    (those format the value's bits, as `{:x}` on an integer does)."""
    if kind is FormatKind.DEFAULT:
        match value:
            case BoolValue(flag=flag):
                return "true" if flag else "false"
            case EnumValue(number=number, enumerator=enumerator):
                label = aggregate_name(value.ctype) or "enum"
                return f"{label}::{enumerator}" if enumerator else f"{label}::<{number}>"
        return str(value.number)
    width = _significant_width(value)
    bits = _bits(value, width)
    match kind:
        case FormatKind.HEX:
            return f"{bits:x}"
        case FormatKind.HEX_UPPER:
            return f"{bits:X}"
        case FormatKind.POINTER:
            return f"0x{bits:x}"
    return format_dump(bits.to_bytes(width, "little"), "s", False)


def _significant_width(value: Value) -> int:
    """Bytes `{:x}` shows: the type's, but of an x87 long double only the
    10 that hold the value (gdb's `print/x` shows the 6 padding bytes too)."""
    if value.ctype is None:
        return 8
    if isinstance(value, FloatValue):
        return floats.significant_size(value.format, type_size(value.ctype))
    return type_size(value.ctype)


def _bits(value: Value, width: int) -> int:
    """The value's two's-complement / IEEE bit pattern at `width` bytes."""
    match value:
        case BoolValue(flag=flag):
            return int(flag)
        case FloatValue(raw=raw):
            return int.from_bytes(raw[:width], "little")
    return value.number & ((1 << (8 * width)) - 1)


def _cut_json(name: str, shown: list, length: int) -> dict:
    """A collection cut at --max-elements: what is shown and its length."""
    return {name: shown, "length": length, "truncated": True}


def _owner_text(value: OwnerValue, kind: FormatKind) -> str:
    """`std::shared_ptr(use_count 2, 0x55d0... -> Point { x: 1, y: -1 })`."""
    count = "" if value.use_count is None else f"use_count {value.use_count}, "
    target = "" if value.target is None else f" -> {format_value(value.target, kind)}"
    return f"{value.label}({count}0x{value.address:x}{target})"


def _is_truncated(value: Value) -> bool:
    match value:
        case OwnerValue(target=target):
            return target is not None and _is_truncated(target)
        case ErrorValue(status=ValueStatus.TRUNCATED):
            return True
        case StringValue(truncated=truncated):
            return truncated
        case StructValue(fields=fields, truncated=truncated):
            return truncated or any(_is_truncated(field) for _, field in fields)
        case ArrayValue(elements=elements, truncated=truncated, more=more):
            return truncated or bool(more) or any(_is_truncated(element) for element in elements)
        case TupleValue(elements=elements):
            return any(_is_truncated(element) for element in elements)
        case MapValue(entries=entries, more=more, is_set=is_set):
            flat = entries if is_set else [v for pair in entries for v in pair]
            return bool(more) or any(_is_truncated(v) for v in flat)
        case VariantValue(payload=payload):
            return _is_truncated(payload)
        case ComplexValue(real=real, imag=imag):
            return _is_truncated(real) or _is_truncated(imag)
    return False
