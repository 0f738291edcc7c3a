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
    hex_a, hex_b = _hex_bytes(a), _hex_bytes(b)
    if hex_a is not None and hex_b is not None:
        length = _literal_length(rest[0], call) if rest else len(hex_a)
        return ir.Const(int(hex_a[:length] == hex_b[:length]))
    if hex_a is not None or hex_b is not None:
        pattern, other = (hex_a, b) if hex_a is not None else (hex_b, a)
        length = _literal_length(rest[0], call) if rest else len(pattern)
        if length > len(pattern):
            raise PlanError(f"memcmp length {length} exceeds the {len(pattern)} hex bytes",
                            call.span)
        if length == 0:
            return ir.Const(1)
        address = planner.string_address(planner.place(other), other)
        return ir.BytesEqual(address, pattern[:length], "prefix")
    if not rest:
        raise PlanError("memcmp needs a length unless one side is hex(\"…\")", call.span)
    left = planner.string_address(planner.place(a), a)
    right = planner.string_address(planner.place(b), b)
    length, _ = planner.integer(rest[0])
    return ir.MemoryEqual(left, right, length, planner.compare_cap)


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
