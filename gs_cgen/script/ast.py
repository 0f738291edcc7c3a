"""The trace script's syntax tree: frozen dataclasses, each with its span.

Mirrors GhostScope's trace language (see CONTRACT.md). The parser builds it;
check.py validates scoping and format strings; plan/ consumes it.
"""
from __future__ import annotations

from enum import Enum

from gs_cgen.lazydataclass import dataclass
from gs_cgen.source import SourceSpan


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True)
class IntLiteral:
    value: int
    span: SourceSpan
    decimal: bool = True        # C types decimal and 0x/0o/0b constants differently


@dataclass(frozen=True)
class BoolLiteral:
    value: bool
    span: SourceSpan


@dataclass(frozen=True)
class StringLiteral:
    """Escapes already decoded: `value` holds the bytes the user meant."""

    value: bytes
    span: SourceSpan


@dataclass(frozen=True)
class Name:
    """An identifier: a script `let` variable or a DWARF variable."""

    ident: str
    span: SourceSpan


@dataclass(frozen=True)
class SpecialVar:
    """`$pid`, `$tid`, `$host_pid`, `$input_pid`, `$timestamp`, `$pc`, `$sp`
    (ident without `$`)."""

    ident: str
    span: SourceSpan


@dataclass(frozen=True)
class Member:
    """`base.field`; auto-dereferences pointers."""

    base: "Expr"
    field: str
    span: SourceSpan


@dataclass(frozen=True)
class Index:
    base: "Expr"
    index: "Expr"
    span: SourceSpan


class UnaryOp(Enum):
    NEG = "-"
    NOT = "!"
    BIT_NOT = "~"
    DEREF = "*"
    ADDR_OF = "&"


@dataclass(frozen=True)
class Unary:
    op: UnaryOp
    operand: "Expr"
    span: SourceSpan


class BinaryOp(Enum):
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    BIT_AND = "&"
    BIT_OR = "|"
    BIT_XOR = "^"
    SHL = "<<"
    SHR = ">>"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "&&"
    OR = "||"


@dataclass(frozen=True)
class Binary:
    op: BinaryOp
    left: "Expr"
    right: "Expr"
    span: SourceSpan


@dataclass(frozen=True)
class PointerTo:
    """One `*` of a type name, with the qualifiers written after it."""

    qualifiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArrayOf:
    """One `[N]` of a type name; None for `[]`."""

    count: int | None


@dataclass(frozen=True)
class TypeName:
    """A C type name (script/typename.py): a base named `name` (a tag
    after `keyword`, a typedef or tag name, or with `is_base` a canonical
    C base spelling such as "unsigned long"), its `qualifiers`, then the
    `derivations` that build the type from it, innermost first."""

    keyword: str | None
    name: str
    is_base: bool
    qualifiers: tuple[str, ...]
    derivations: tuple[PointerTo | ArrayOf, ...]
    text: str


@dataclass(frozen=True)
class Cast:
    """`cast(expr, "TYPE")`; `type_name` is TYPE as written (trimmed)."""

    operand: "Expr"
    type_name: str
    span: SourceSpan
    type: TypeName | None = None


@dataclass(frozen=True)
class Call:
    """Builtins: strncmp, starts_with, memcmp, hex."""

    function: str
    args: tuple["Expr", ...]
    span: SourceSpan


@dataclass(frozen=True)
class EntryValue:
    """`$entry(expr)` in a return block: `expr` evaluated when the call was
    entered, carried to the return (CONTRACT.md "Return probes"); `text`
    is `expr` as written."""

    expr: "Expr"
    text: str
    span: SourceSpan


Expr = (IntLiteral | BoolLiteral | StringLiteral | Name | SpecialVar | Member
        | Index | Unary | Binary | Cast | Call | EntryValue)


# ------------------------------------------------------------ format strings

class FormatKind(Enum):
    DEFAULT = ""      # {}
    HEX = "x"         # {:x}
    HEX_UPPER = "X"   # {:X}
    POINTER = "p"     # {:p}
    STRING = "s"      # {:s}


class DumpLength(Enum):
    NONE = "none"          # not a memory dump
    STATIC = "static"      # {:x.16}
    STAR = "star"          # {:x.*}  (length is the preceding argument)
    VARIABLE = "variable"  # {:x.len$}


@dataclass(frozen=True)
class Placeholder:
    kind: FormatKind
    dump: DumpLength = DumpLength.NONE
    static_length: int | None = None
    length_variable: str | None = None


FormatPiece = str | Placeholder


@dataclass(frozen=True)
class FormatString:
    pieces: tuple[FormatPiece, ...]
    span: SourceSpan

    @property
    def placeholders(self) -> tuple[Placeholder, ...]:
        return tuple(p for p in self.pieces if isinstance(p, Placeholder))

    @property
    def argument_count(self) -> int:
        """Arguments the format consumes; `.*` consumes a length first."""
        return sum(2 if p.dump is DumpLength.STAR else 1 for p in self.placeholders)


# ----------------------------------------------------------------- statements

@dataclass(frozen=True)
class PrintFormat:
    """`print "fmt {}", a, b;`"""

    format: FormatString
    args: tuple[Expr, ...]
    span: SourceSpan


@dataclass(frozen=True)
class PrintExpr:
    """`print expr;` renders `expr = VALUE`. `text` is the expression as written."""

    expr: Expr
    text: str
    span: SourceSpan


@dataclass(frozen=True)
class Let:
    name: str
    value: Expr
    span: SourceSpan


@dataclass(frozen=True)
class If:
    """`if c {..} else if d {..} else {..}`: `else_body` holds a nested If for
    `else if`, the statements of `else`, or is empty."""

    condition: Expr
    condition_text: str
    then_body: tuple["Stmt", ...]
    else_body: tuple["Stmt", ...]
    span: SourceSpan


class BacktraceMode(Enum):
    """A word of `bt WORD...`: `raw` (addresses instead of functions and
    lines), `full` (each frame's parameters), `inline` / `noinline` (inlined
    calls as their own frames, or machine frames only)."""

    RAW = "raw"
    FULL = "full"
    INLINE = "inline"
    NOINLINE = "noinline"


@dataclass(frozen=True)
class Backtrace:
    """`bt` / `backtrace` with its mode words, any combination of `raw`,
    `full` and one of `inline` / `noinline`."""

    span: SourceSpan
    modes: frozenset[BacktraceMode] = frozenset()

    @property
    def raw(self) -> bool:
        return BacktraceMode.RAW in self.modes

    @property
    def full(self) -> bool:
        return BacktraceMode.FULL in self.modes

    @property
    def inlined(self) -> bool:
        """Inlined calls shown as frames: by default, except with `raw`
        (one address per machine frame) unless `inline` asks for them."""
        if BacktraceMode.INLINE in self.modes:
            return True
        return not self.raw and BacktraceMode.NOINLINE not in self.modes


class AggregationKind(Enum):
    COUNT = "count"
    SUM = "sum"       # of an integer expression
    HIST = "hist"     # power-of-2 histogram of an integer expression


@dataclass(frozen=True)
class Aggregate:
    """`count NAME [by k, ...];`, `sum NAME = v [by ...];`, `hist NAME = v
    [by ...];`. `value` is None for count; `key_texts` are the `by`
    expressions as written, `key_labels` their `as LABEL` names (None
    where none is given; --metrics names those after the text)."""

    kind: AggregationKind
    name: str
    value: Expr | None
    keys: tuple[Expr, ...]
    key_texts: tuple[str, ...]
    span: SourceSpan
    name_span: SourceSpan
    key_labels: tuple[str | None, ...] = ()


Stmt = PrintFormat | PrintExpr | Let | If | Backtrace | Aggregate


# ------------------------------------------------------------ trace patterns

@dataclass(frozen=True)
class FunctionPattern:
    name: str


@dataclass(frozen=True)
class LinePattern:
    file: str
    line: int


@dataclass(frozen=True)
class AddressPattern:
    """`0xADDR` (module virtual address) or `module_suffix:0xADDR`."""

    address: int
    module: str | None = None


@dataclass(frozen=True)
class ReturnPattern:
    """`FUNC:return`: the block runs when FUNC returns to its caller."""

    function: str


TracePattern = FunctionPattern | LinePattern | AddressPattern | ReturnPattern


@dataclass(frozen=True)
class TraceBlock:
    pattern: TracePattern
    pattern_text: str
    body: tuple[Stmt, ...]
    span: SourceSpan
    pattern_span: SourceSpan


@dataclass(frozen=True)
class Script:
    traces: tuple[TraceBlock, ...]
    text: str
