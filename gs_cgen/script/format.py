"""String-literal text: C escapes and print format strings.

Both work on the literal exactly as written (quotes included) so that an
error can point at the column of the offending character. A literal never
spans lines (the grammar forbids raw newlines), so a column inside it is
`span.column + index`.
"""
from __future__ import annotations

import re

from gs_cgen.errors import ScriptError
from gs_cgen.script.ast import (DumpLength, FormatKind, FormatPiece,
                                FormatString, Placeholder)
from gs_cgen.source import SourceSpan

# C's simple escape sequences (C11 6.4.4.4). Octal (`\0`, `\12`) and `\xNN`
# are handled separately.
_SIMPLE_ESCAPES = {
    "n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f",
    "v": b"\v", "\\": b"\\", '"': b'"', "'": b"'", "?": b"?",
}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"

_KINDS = {
    "x": FormatKind.HEX, "X": FormatKind.HEX_UPPER,
    "p": FormatKind.POINTER, "s": FormatKind.STRING,
}
# GhostScope allows memory dumps only as hex bytes or ASCII.
_DUMP_KINDS = (FormatKind.HEX, FormatKind.HEX_UPPER, FormatKind.STRING)
_BASES = {"0x": 16, "0o": 8, "0b": 2}
_BASE_NAMES = {16: "hex", 8: "octal", 2: "binary", 10: "decimal"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPEC_HINT = ("valid placeholders: {}, {:x}, {:X}, {:p}, {:s}, {:x.N}, {:s.N}, "
              "{:x.*}, {:s.*}, {:x.name$}, {:s.name$}")


def int_value(text: str) -> int:
    """Value of an integer literal: decimal, 0x, 0o or 0b, `_` separators.

    Raises ValueError naming the problem; callers add the position.
    """
    digits = text.replace("_", "")
    base = _BASES.get(digits[:2].lower(), 10)
    body = digits[2:] if base != 10 else digits
    if not body:
        raise ValueError(f"'{text}' has no digits after its prefix")
    allowed = "0123456789abcdef"[:base]
    bad = next((d for d in body if d.lower() not in allowed), None)
    if bad is not None:
        raise ValueError(f"invalid digit '{bad}' in {_BASE_NAMES[base]} "
                         f"literal '{text}'")
    if base == 10 and len(body) > 1 and body[0] == "0":
        # C would read 017 as octal; GhostScope spells octal 0o17.
        raise ValueError(f"leading zero in '{text}': write 0o{body.lstrip('0')}"
                         f" for octal or {body.lstrip('0')} for decimal")
    return int(body, base)


def decode_string(literal: str, span: SourceSpan) -> bytes:
    """The bytes a string literal (quotes included) stands for."""
    body, out, i = literal[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\":
            decoded, i = _escape(body, i, span)
            out += decoded
        else:
            out += body[i].encode()
            i += 1
    return bytes(out)


def parse_format(literal: str, span: SourceSpan) -> FormatString:
    """Split a format string literal (quotes included) into text pieces and
    placeholders. `{{` and `}}` stand for literal braces."""
    body, pieces, text, i = literal[1:-1], [], bytearray(), 0
    while i < len(body):
        char, following = body[i], body[i + 1:i + 2]
        if char == "\\":
            decoded, i = _escape(body, i, span)
            text += decoded
        elif char in "{}" and following == char:
            text += char.encode()
            i += 2
        elif char == "{":
            end = body.find("}", i)
            if end < 0:
                raise _error("unclosed '{' in format string", span, i, 1,
                             "write '{{' for a literal brace")
            _flush(text, pieces)
            pieces.append(_placeholder(body[i + 1:end], span, i))
            i = end + 1
        elif char == "}":
            raise _error("unmatched '}' in format string", span, i, 1,
                         "write '}}' for a literal brace")
        else:
            text += char.encode()
            i += 1
    _flush(text, pieces)
    return FormatString(tuple(pieces), span)


def _flush(text: bytearray, pieces: list[FormatPiece]) -> None:
    # surrogateescape keeps `\xff`-style bytes that are not UTF-8 intact.
    if text:
        pieces.append(text.decode("utf-8", "surrogateescape"))
        text.clear()


def _escape(body: str, i: int, span: SourceSpan) -> tuple[bytes, int]:
    """Decode the escape sequence starting at body[i] (a backslash)."""
    letter = body[i + 1:i + 2]
    if letter in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[letter], i + 2
    if letter and letter in _OCTAL:
        end = i + 1
        while end < min(i + 4, len(body)) and body[end] in _OCTAL:
            end += 1
        value = int(body[i + 1:end], 8)
        if value > 0xFF:
            raise _error(f"octal escape '{body[i:end]}' is larger than a byte",
                         span, i, end - i)
        return bytes([value]), end
    if letter == "x":
        digits = body[i + 2:i + 4]
        if len(digits) == 2 and all(d in _HEX for d in digits):
            return bytes([int(digits, 16)]), i + 4
        raise _error("'\\x' must be followed by two hex digits", span, i, 2)
    raise _error(f"unknown escape sequence '\\{letter}'", span, i, 2,
                 "supported escapes: \\n \\t \\r \\\\ \\\" \\0 \\xNN")


def _placeholder(inner: str, span: SourceSpan, at: int) -> Placeholder:
    """Parse the text between `{` (at body index `at`) and `}`."""
    width = len(inner) + 2
    if inner == "":
        return Placeholder(FormatKind.DEFAULT)
    if not inner.startswith(":"):
        raise _error(f"invalid placeholder '{{{inner}}}'", span, at, width,
                     "placeholders are positional: write '{}' and pass "
                     "the value as an argument after the format string")
    kind = _KINDS.get(inner[1:2])
    rest = inner[2:]
    if kind is None or (rest and not rest.startswith(".")):
        raise _error(f"unknown format specifier '{{{inner}}}'", span, at,
                     width, _SPEC_HINT)
    if not rest:
        return Placeholder(kind)
    if kind not in _DUMP_KINDS:
        raise _error(f"'{{{inner}}}': a memory dump length only works with "
                     "':x', ':X' or ':s'", span, at, width, _SPEC_HINT)
    return _dump(kind, rest[1:], span, at, width)


def _dump(kind: FormatKind, length: str, span: SourceSpan, at: int,
          width: int) -> Placeholder:
    """`{:x.LENGTH}` where LENGTH is N, `*` or `name$`."""
    if length == "*":
        return Placeholder(kind, DumpLength.STAR)
    if length.endswith("$") and _IDENT.fullmatch(length[:-1]):
        return Placeholder(kind, DumpLength.VARIABLE,
                           length_variable=length[:-1])
    if length[:1].isdigit() and not length.endswith("$"):
        try:
            value = int_value(length)
        except ValueError as exc:
            raise _error(str(exc), span, at, width) from None
        if value > 0:
            return Placeholder(kind, DumpLength.STATIC, static_length=value)
        raise _error("memory dump length must be at least 1", span, at, width)
    raise _error(f"invalid memory dump length '{length}'", span, at, width,
                 "use a number ({:x.16}), '*' to take the length from the "
                 "argument before the value, or 'name$' for a script variable")


def _error(message: str, span: SourceSpan, body_index: int, width: int,
           hint: str | None = None) -> ScriptError:
    # +1 skips the opening quote of the literal.
    column = span.column + 1 + body_index
    where = SourceSpan(span.line, column, span.line, column + width)
    return ScriptError(message, where, hints=(hint,) if hint else ())
