"""Differential testing of gs-cgen's C arithmetic against gcc.

A seeded generator builds script expressions over the operands of
tests/fixtures/arith_operands.c (every integer type at its edges, enums,
narrow bitfields, parameters of arith_probe) and script integer literals,
with every C operator. Each expression's text is also a C expression (the
generator parenthesizes every operand that is not a leaf, and literals are
spelled for C by `c_literal`).

Who says what the right answer is:
- gcc, for every expression C defines: the fixture is rebuilt with the
  expressions' printf lines inside arith_probe (`oracle_source`) and run.
  It is built with -fwrapv, because gs-cgen's rule for signed overflow is
  two's-complement wrap-around (docs/reference.md "Arithmetic").
- This module's own model (`evaluate`), only where C has undefined
  behaviour and gs-cgen's rules (docs/reference.md) decide instead: division or
  remainder by zero and shift counts that are negative or not below the
  promoted width are `<error: ...>` values; INT_MIN / -1 wraps like any
  signed overflow (gcc's program would trap there). The model is itself
  checked against gcc on every expression that gcc can run.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

SEED = 20240609


# ----------------------------------------------------------------- types

@dataclass(frozen=True)
class IntType:
    """An integer type after the integer promotions: what C computes in."""

    name: str
    bits: int
    signed: bool

    def wrap(self, value: int) -> int:
        value &= (1 << self.bits) - 1
        if self.signed and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value


INT = IntType("int", 32, True)
UINT = IntType("unsigned int", 32, False)
LONG = IntType("long", 64, True)
ULONG = IntType("unsigned long", 64, False)


def common_type(a: IntType, b: IntType) -> IntType:
    """C11 6.3.1.8 for promoted operands of the x86-64 LP64 widths."""
    if a.bits != b.bits:
        wider = a if a.bits > b.bits else b
        return wider          # a wider signed type holds every narrower unsigned value
    return a if not a.signed else b


# -------------------------------------------------------------- operands

@dataclass(frozen=True)
class Operand:
    """A variable of the fixture: `ctype` as gdb's `whatis` spells it,
    `value` what gdb's `print/d` shows, `promoted` its type in arithmetic."""

    name: str
    ctype: str
    value: int
    promoted: IntType


def _ops(ctype: str, promoted: IntType, **values: int) -> list[Operand]:
    return [Operand(name, ctype, value, promoted) for name, value in values.items()]


OPERANDS: list[Operand] = [
    *_ops("_Bool", INT, g_true=1, g_false=0),
    *_ops("char", INT, g_c_min=-128, g_c_m1=-1, g_c_max=127),
    *_ops("signed char", INT, g_sc_min=-128, g_sc_7=7),
    *_ops("unsigned char", INT, g_uc_max=255, g_uc_1=1, p_uc=200),
    *_ops("short", INT, g_s_min=-32768, g_s_m1=-1, g_s_max=32767, p_s=-2),
    *_ops("unsigned short", INT, g_us_max=65535, g_us_3=3),
    *_ops("int", INT, g_i_min=-2**31, g_i_m1=-1, g_i_0=0, g_i_1=1, g_i_7=7, g_i_m7=-7,
          g_i_31=31, g_i_32=32, g_i_max=2**31 - 1, p_i=-100),
    *_ops("unsigned int", UINT, g_u_0=0, g_u_1=1, g_u_top=2**31, g_u_max=2**32 - 1,
          p_u=3000000000),
    *_ops("long", LONG, g_l_min=-2**63, g_l_m1=-1, g_l_5=5, g_l_63=63, g_l_64=64,
          g_l_max=2**63 - 1, p_l=-9000000000),
    *_ops("unsigned long", ULONG, g_ul_1=1, g_ul_big=0x123456789abcdef0, g_ul_max=2**64 - 1),
    *_ops("long long", LONG, g_ll_min=-2**63, g_ll_m5=-5),
    *_ops("unsigned long long", ULONG, g_ull_top=2**63, g_ull_max=2**64 - 1),
    *_ops("enum color", UINT, g_red=0, g_blue=200),        # no negative enumerator
    *_ops("enum delta", INT, g_down=-3, g_up=3),
    # Bitfields narrower than int promote to int, unsigned ones too (6.3.1.1p2).
    Operand("g_bits.u3", "unsigned int", 7, INT),
    Operand("g_bits.s5", "int", -16, INT),
    Operand("g_bits.u31", "unsigned int", 2**31 - 1, INT),
]


# -------------------------------------------------------------- literals

def literal_type(text: str) -> IntType:
    """The C type of a script literal: C11 6.4.4.1 for unsuffixed
    constants (decimal: int, long; hex/octal/binary: int, unsigned int,
    long, unsigned long), and unsigned long for a decimal above LONG_MAX
    (C90's rule; gcc would make it __int128)."""
    value = literal_value(text)
    decimal = not text[:2].lower() in ("0x", "0o", "0b")
    candidates = (INT, LONG, ULONG) if decimal else (INT, UINT, LONG, ULONG)
    return next(t for t in candidates if t.wrap(value) == value)


def literal_value(text: str) -> int:
    return int(text.replace("_", ""), 0)


def c_literal(text: str) -> str:
    """The same constant spelled for gcc."""
    digits = text.replace("_", "")
    if digits[:2].lower() == "0o":
        return "0" + digits[2:]
    if literal_type(text) is ULONG and not digits[:2].lower() in ("0x", "0b"):
        return digits + "UL"
    return digits


LITERALS = ["0", "1", "2", "7", "31", "32", "63", "64", "100", "0x7f", "0xff", "255", "65535",
            "0x7fffffff", "2147483647", "2147483648", "0x80000000", "4294967295",
            "0xffffffff", "4294967296", "0x100000000", "9223372036854775807",
            "0x7fffffffffffffff", "9223372036854775808", "0x8000000000000000",
            "18446744073709551615", "0xffffffffffffffff", "0o17", "0o37777777777", "0b1010",
            "0b1111_1111", "1_000_000", "0xdead_beef"]


# ------------------------------------------------------------ expressions

BINARY = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", "<=", ">", ">=",
          "&&", "||"]
UNARY = ["-", "~", "!"]
BOOLEAN = {"==", "!=", "<", "<=", ">", ">=", "&&", "||", "!"}


@dataclass(frozen=True)
class Leaf:
    text: str          # script spelling (an operand name or a script literal)
    c_text: str
    value: int
    ctype: IntType


@dataclass(frozen=True)
class Unary:
    op: str
    operand: "Node"


@dataclass(frozen=True)
class Binary:
    op: str
    left: "Node"
    right: "Node"


Node = Leaf | Unary | Binary


def operand_leaf(operand: Operand) -> Leaf:
    return Leaf(operand.name, operand.name, operand.value, operand.promoted)


def literal_leaf(text: str) -> Leaf:
    return Leaf(text, c_literal(text), literal_value(text), literal_type(text))


def script_text(node: Node) -> str:
    return _text(node, lambda leaf: leaf.text)


def c_text(node: Node) -> str:
    return _text(node, lambda leaf: leaf.c_text)


def _text(node: Node, spell) -> str:
    match node:
        case Leaf():
            return spell(node)
        case Unary(op, operand):
            return op + _operand_text(operand, spell)
        case Binary(op, left, right):
            return f"{_operand_text(left, spell)} {op} {_operand_text(right, spell)}"
    raise TypeError(node)


def _operand_text(node: Node, spell) -> str:
    text = _text(node, spell)
    return text if isinstance(node, Leaf) else f"({text})"


# ------------------------------------------------------------------ model

class Undefined(Exception):
    """C leaves it undefined; gs-cgen renders `<error: REASON>`."""


@dataclass(frozen=True)
class Result:
    value: int
    ctype: IntType
    boolean: bool         # a comparison, `!`, `&&` or `||`: rendered true/false
    gcc_safe: bool        # gcc's program can compute it (no INT_MIN / -1 trap)


def evaluate(node: Node) -> Result:
    """gs-cgen's rules (= C's with -fwrapv where C defines the result)."""
    match node:
        case Leaf(value=value, ctype=ctype):
            return Result(value, ctype, False, True)
        case Unary(op, operand):
            return _unary(op, evaluate(operand))
        case Binary(op="&&" | "||", left=left, right=right):
            return _logical(node.op, left, right)
        case Binary(op, left, right):
            return _binary(op, evaluate(left), evaluate(right))
    raise TypeError(node)


def _unary(op: str, operand: Result) -> Result:
    if op == "!":
        return Result(int(operand.value == 0), INT, True, operand.gcc_safe)
    ctype = operand.ctype
    value = -operand.value if op == "-" else ~operand.value
    return Result(ctype.wrap(value), ctype, False, operand.gcc_safe)


def _logical(op: str, left: Node, right: Node) -> Result:
    first = evaluate(left)
    if (first.value != 0) == (op == "||"):        # short-circuit: right not evaluated
        return Result(int(op == "||"), INT, True, first.gcc_safe)
    second = evaluate(right)
    return Result(int(second.value != 0), INT, True, first.gcc_safe and second.gcc_safe)


def _binary(op: str, left: Result, right: Result) -> Result:
    safe = left.gcc_safe and right.gcc_safe
    if op in ("<<", ">>"):
        return Result(_shift(op, left, right), left.ctype, False, safe)
    ctype = common_type(left.ctype, right.ctype)
    a, b = ctype.wrap(left.value), ctype.wrap(right.value)
    if op in BOOLEAN:
        return Result(int(_compare(op, a, b)), INT, True, safe)
    if op in ("/", "%"):
        if b == 0:
            raise Undefined("division by zero")
        safe = safe and not (ctype.signed and a == -(1 << (ctype.bits - 1)) and b == -1)
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)   # toward zero
        value = quotient if op == "/" else a - quotient * b
    else:
        value = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op]
    return Result(ctype.wrap(value), ctype, False, safe)


def _shift(op: str, left: Result, right: Result) -> int:
    count, ctype = right.value, left.ctype
    if count < 0 or count >= ctype.bits:
        raise Undefined("shift count out of range")
    if op == "<<":
        return ctype.wrap(left.value << count)
    return ctype.wrap(left.value) >> count        # arithmetic for signed, as gcc


def _compare(op: str, a: int, b: int) -> bool:
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
            ">=": a >= b}[op]


def rendered(node: Node) -> str:
    """What gs-cgen must print for `print EXPR;` after `EXPR = `."""
    try:
        result = evaluate(node)
    except Undefined as undefined:
        return f"<error: {undefined}>"
    if result.boolean:
        return "true" if result.value else "false"
    return str(result.value)


def gcc_can_run(node: Node) -> bool:
    try:
        return evaluate(node).gcc_safe
    except Undefined:
        return False


# -------------------------------------------------------------- generator

class Generator:
    """Deterministic expressions that cover every operator over every
    operand type, literals at the edges, and nesting."""

    def __init__(self, seed: int = SEED) -> None:
        self.random = random.Random(seed)
        self.leaves = [operand_leaf(o) for o in OPERANDS] + [literal_leaf(t) for t in LITERALS]
        # Shift counts that are in range for most widths, so that shifts are
        # not almost always errors.
        self.counts = [leaf for leaf in self.leaves if 0 <= leaf.value < 32]

    def expressions(self) -> list[Node]:
        found = [*self._every_pair(), *self._unary_on_every_leaf(), *self._nested(300)]
        unique, seen = [], set()
        for node in found:
            if script_text(node) not in seen:
                seen.add(script_text(node))
                unique.append(node)
        return unique

    def _every_pair(self):
        """Each binary operator with each leaf on the left and a random
        right operand, and with each literal on the right of a random
        variable."""
        operands = [operand_leaf(o) for o in OPERANDS]
        for op in BINARY:
            for left in self.leaves:
                yield Binary(op, left, self._right(op))
            for literal in LITERALS:
                yield Binary(op, self.random.choice(operands), literal_leaf(literal))

    def _right(self, op: str) -> Leaf:
        if op in ("<<", ">>") and self.random.random() < 0.7:
            return self.random.choice(self.counts)
        return self.random.choice(self.leaves)

    def _unary_on_every_leaf(self):
        for op in UNARY:
            for leaf in self.leaves:
                yield Unary(op, leaf)

    def _nested(self, count: int):
        while count:
            node = self._tree(self.random.randint(2, 3))
            if not isinstance(node, Leaf):       # a bare operand is not arithmetic
                count -= 1
                yield node

    def _tree(self, depth: int) -> Node:
        if depth == 0 or self.random.random() < 0.2:
            return self.random.choice(self.leaves)
        if self.random.random() < 0.15:
            return Unary(self.random.choice(UNARY), self._tree(depth - 1))
        op = self.random.choice(BINARY)
        right = self._right(op) if op in ("<<", ">>") else self._tree(depth - 1)
        return Binary(op, self._tree(depth - 1), right)


# ---------------------------------------------------------------- oracle

def oracle_lines(nodes: list[Node]) -> str:
    """The body that `#include ARITH_ORACLE` puts inside arith_probe: one
    printf per expression, printing the value by its C type as gs-cgen
    renders it (C's 0/1 results of comparisons and logic as false/true)."""
    lines = ['#define GS_FMT(x) _Generic((x), int: "%d\\n", unsigned int: "%u\\n", '
             'long: "%ld\\n", unsigned long: "%lu\\n", long long: "%lld\\n", '
             'unsigned long long: "%llu\\n")']
    for node in nodes:
        expr = c_text(node)
        if evaluate(node).boolean:
            lines.append(f'puts(({expr}) ? "true" : "false");')
        else:
            lines.append(f"printf(GS_FMT({expr}), ({expr}));")
    return "\n".join(lines) + "\n"
