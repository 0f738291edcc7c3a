"""strncmp, starts_with, memcmp and hex: boolean builtins that are true when
the bytes are equal (GhostScope's meaning, not C's 0)."""
from __future__ import annotations

from gs_cgen.errors import PlanError
from gs_cgen.plan import ir
from gs_cgen.script import ast


def plan_builtin(planner, call: ast.Call) -> ir.Scalar:
    match call.function:
        case "strncmp":
            a, b, n = call.args
            return _string_prefix(planner, call, a, b, _literal_length(n, call))
        case "starts_with":
            a, b = call.args
            return _string_prefix(planner, call, a, b, None)
        case "memcmp":
            return _memcmp(planner, call)
        case "hex":
            raise PlanError("hex(\"…\") can only be an argument of memcmp", call.span)
    raise PlanError(f"unknown function '{call.function}'", call.span)


def _string_prefix(planner, call, a, b, length: int | None) -> ir.Scalar:
    """strncmp(a, b, n) / starts_with(a, b): one side must be a string."""
    left, right = planner.place(a), planner.place(b)
    literal_first = isinstance(left, ir.StringPlace)
    if literal_first and isinstance(right, ir.StringPlace):
        count = min(length, len(left.value), len(right.value)) if length is not None else \
            len(right.value)
        return ir.Const(int(left.value[:count] == right.value[:count]))
    if not literal_first and not isinstance(right, ir.StringPlace):
        raise PlanError(f"{call.function} needs a string literal or string script variable "
                        "on one side", call.span)
    literal, other, other_expr = (left, right, b) if literal_first else (right, left, a)
    expected = literal.value if length is None else literal.value[:length]
    address = planner.string_address(other, other_expr)
    if not expected:
        return ir.Const(1)
    return ir.BytesEqual(address, expected[:planner.compare_cap], "prefix")


def _memcmp(planner, call: ast.Call) -> ir.Scalar:
    a, b, *rest = call.args
    known = [(e, data) for e in (a, b) if (data := _known_bytes(planner, e)) is not None]
    if not known:
        if not rest:
            raise PlanError("memcmp needs a length unless one side is hex(\"…\") or a string",
                            call.span)
        left = planner.string_address(planner.place(a), a)
        right = planner.string_address(planner.place(b), b)
        length, _ = planner.integer(rest[0])
        return ir.MemoryEqual(left, right, length, planner.compare_cap)
    length = _literal_length(rest[0], call) if rest else len(known[0][1])
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
    return ir.BytesEqual(address, known[0][1][:length], "prefix")


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


def _literal_length(expr: ast.Expr, call: ast.Call) -> int:
    if isinstance(expr, ast.IntLiteral) and expr.value >= 0:
        return expr.value
    raise PlanError(f"the length of {call.function} must be a non-negative integer literal",
                    expr.span)
