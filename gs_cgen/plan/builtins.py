"""strncmp, starts_with, memcmp and hex: boolean builtins that are true when
the bytes are equal (GhostScope's meaning, not C's 0)."""
from __future__ import annotations

from gs_cgen.abi import abi
from gs_cgen.errors import PlanError
from gs_cgen.plan import ir
from gs_cgen.script import ast


def known_bytes_cap() -> int:
    """The most bytes a comparison with a known side can compare: the
    target's bytes are read into the probe's work area (GS_WORK_SIZE); a
    C string compared with == is read with its terminator and one byte
    more (a longer string must not read as equal)."""
    return abi().constants["GS_WORK_SIZE"] - 2


def plan_builtin(planner, call: ast.Call) -> ir.Scalar:
    match call.function:
        case "strncmp":
            a, b, n = call.args
            return _string_prefix(planner, call, a, b, _length(planner, n))
        case "starts_with":
            a, b = call.args
            return _string_prefix(planner, call, a, b, None)
        case "memcmp":
            return _memcmp(planner, call)
        case "hex":
            raise PlanError("hex(\"…\") can only be an argument of memcmp", call.span)
    raise PlanError(f"unknown function '{call.function}'", call.span)


def _length(planner, expr: ast.Expr) -> int | ir.Scalar:
    """A builtin's length: an int when the script fixes it (a literal, a
    `let` of one), else the integer the probe computes; a negative one
    counts as 0 there (GhostScope's clamp)."""
    value, _ = planner.integer(expr)
    return value.value if isinstance(value, ir.Const) and value.value >= 0 else value


def _computed(length: int | ir.Scalar | None) -> bool:
    """A length known only at run time."""
    return length is not None and not isinstance(length, int)


def _string_prefix(planner, call, a, b, length: int | ir.Scalar | None) -> ir.Scalar:
    """strncmp(a, b, n) / starts_with(a, b): one side must be a string;
    the first min(n, its length) bytes are compared (GhostScope's meaning)."""
    left, right = planner.place(a), planner.place(b)
    literal_first = isinstance(left, ir.StringPlace)
    if literal_first and isinstance(right, ir.StringPlace):
        return _known_prefixes(left.value, right.value, length)
    if not literal_first and not isinstance(right, ir.StringPlace):
        raise PlanError(f"{call.function} needs a string literal or string script variable "
                        "on one side", call.span)
    literal, other, other_expr = (left, right, b) if literal_first else (right, left, a)
    address = planner.string_address(other, other_expr)
    if _computed(length):
        # Compared: min(n, the literal's length); above what the probe can
        # compare, the comparison fails rather than say equal.
        return ir.BytesEqual(address, literal.value[:known_bytes_cap()], "prefix", length,
                             clamp=len(literal.value))
    expected = literal.value if length is None else literal.value[:length]
    if not expected:
        return ir.Const(1)
    return ir.BytesEqual(address, _within_cap(expected, call), "prefix")


def _within_cap(expected: bytes, call: ast.Call) -> bytes:
    """Never compare part of what the script asked and call it equal."""
    if len(expected) > known_bytes_cap():
        raise PlanError(f"{call.function} would compare {len(expected)} bytes; a probe compares "
                        f"at most {known_bytes_cap()} bytes of target memory with a known string",
                        call.span)
    return expected


def _known_prefixes(a: bytes, b: bytes, length: int | ir.Scalar | None) -> ir.Scalar:
    """Both sides known: equal over min(n, len(a), len(b)) bytes."""
    if not _computed(length):
        count = min(length, len(a), len(b)) if length is not None else len(b)
        return ir.Const(int(a[:count] == b[:count]))
    common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if common >= min(len(a), len(b)):
        return ir.Const(1)
    return ir.BinaryOp("<=", length, ir.Const(common), True)     # negative n: 0 bytes, equal


def _memcmp(planner, call: ast.Call) -> ir.Scalar:
    a, b, *rest = call.args
    known = [(e, data) for e in (a, b) if (data := _known_bytes(planner, e)) is not None]
    length = _length(planner, rest[0]) if rest else None
    if not known:
        if length is None:
            raise PlanError("memcmp needs a length unless one side is hex(\"…\") or a string",
                            call.span)
        return _memory_equal(planner, call, a, b, length)
    if length is None:
        length = len(known[0][1])
    if _computed(length):
        if len(known) == 2:
            raise PlanError("memcmp of two byte strings known to the script needs a constant "
                            "length", rest[0].span)
        other = b if known[0][0] is a else a
        address = planner.string_address(planner.place(other), other)
        # At most the known side's bytes: beyond them, the comparison fails.
        return ir.BytesEqual(address, known[0][1][:known_bytes_cap()], "prefix", length)
    for expr, data in known:
        if length > len(data):
            raise PlanError(f"memcmp length {length} exceeds the {len(data)} bytes of "
                            f"'{expr.span.slice(planner.source_text)}'", call.span)
    if len(known) == 2:
        return ir.Const(int(known[0][1][:length] == known[1][1][:length]))
    if length == 0:
        return ir.Const(1)
    other = b if known[0][0] is a else a
    address = planner.string_address(planner.place(other), other)
    return ir.BytesEqual(address, _within_cap(known[0][1][:length], call), "prefix")


def _memory_equal(planner, call: ast.Call, a, b, length: int | ir.Scalar) -> ir.Scalar:
    """Two target buffers: at most compare_cap (GS_COMPARE_CAP) bytes, the
    probe's work area holding both."""
    if isinstance(length, int):
        if length > planner.compare_cap:
            raise PlanError(f"memcmp length {length} exceeds the {planner.compare_cap} bytes "
                            "a comparison of two target buffers can compare", call.args[2].span)
        if length == 0:
            return ir.Const(1)
        length = ir.Const(length)
    left = planner.string_address(planner.place(a), a)
    right = planner.string_address(planner.place(b), b)
    return ir.MemoryEqual(left, right, length, planner.compare_cap)
def _known_bytes(planner, expr: ast.Expr) -> bytes | None:
    """Bytes known when the script is compiled: hex("…"), a string literal
    or a script string variable; None for anything read at run time."""
    found = _hex_bytes(expr)
    if found is None and isinstance(expr, (ast.Name, ast.StringLiteral)):
        place = planner.place(expr)
        if isinstance(place, ir.StringPlace):
            found = place.value
    return found


def _hex_bytes(expr: ast.Expr) -> bytes | None:
    if isinstance(expr, ast.Call) and expr.function == "hex":
        (text,) = expr.args
        return bytes.fromhex(text.value.decode().replace(" ", ""))
    return None
