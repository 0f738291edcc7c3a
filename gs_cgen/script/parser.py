"""Trace script text -> gs_cgen.script.ast.Script.

lark (LALR) builds a parse tree with positions; `_ToAst` turns it into AST
nodes and validates what the grammar leaves open (integer digits, escapes,
trace patterns, builtin arity). Every lark error becomes a ScriptError whose
wording comes from the parser state (see `syntax_error`).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import stat
import sys
from pathlib import Path

import lark
from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (LarkError, UnexpectedCharacters, UnexpectedInput,
                             UnexpectedToken, VisitError)

from gs_cgen.cachedir import cache_root
from gs_cgen.cppnames import is_function_pattern, looks_like_cpp
from gs_cgen.errors import ScriptError, nearest
from gs_cgen.script import ast
from gs_cgen.script.format import decode_string, int_value, parse_format
from gs_cgen.script.typename import parse_type_name
from gs_cgen.source import SourceSpan

_GRAMMAR = Path(__file__).with_name("grammar.lark")

SPECIAL_VARIABLES = ("pid", "tid", "host_pid", "input_pid", "timestamp", "pc", "sp",
                     "retval", "duration")
# Lists of variables, in `print` only (plan/variables.py).
VARIABLE_LIST_SPECIALS = ("args", "locals")
# `$entry(expr)`: the one special written as a call (return blocks only).
ENTRY_SPECIAL = "$entry"
RETURN_SUFFIX = ":return"

# name -> (fewest, most) arguments, and how the usage reads in errors.
BUILTINS = {
    "strncmp": (3, 3, "strncmp(a, b, n)"),
    "starts_with": (2, 2, "starts_with(a, b)"),
    "memcmp": (2, 3, "memcmp(a, b, len)"),
    "hex": (1, 1, 'hex("de ad")'),
    "len": (1, 1, "len(x)"),
    "raw": (1, 1, "raw(x)"),
}
_MAX_INT = 2**64 - 1
_HEX_BYTES = re.compile(r"[0-9a-fA-F ]*")

_ADDRESS = re.compile(r"0[xX]([0-9a-fA-F]+)")
# A C identifier, optionally with a symbol version (`memcpy@@GLIBC_2.14`).
_FUNCTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(@@?[A-Za-z_][A-Za-z0-9_.]*)?")


def parse(text: str) -> ast.Script:
    """Parse a whole trace script. Raises ScriptError on any syntax error."""
    try:
        tree = _lark().parse(text)
        return _ToAst(text).transform(tree)
    except VisitError as exc:
        # lark wraps whatever a transformer callback raises (our ScriptError,
        # or a bug of ours, which should surface as itself).
        raise exc.orig_exc from None
    except UnexpectedInput as exc:
        raise syntax_error(exc, text) from None
    except LarkError as exc:  # pragma: no cover - defensive, keeps lark inside
        raise ScriptError(f"syntax error: {exc}") from None


@functools.cache
def _lark() -> Lark:
    # Built once per process, and its LALR tables once per grammar: building
    # them takes ~0.1 s, loading them from the cache ~10 ms.
    grammar = _GRAMMAR.read_text()
    options = dict(
        parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True,
        lexer_callbacks={
            "UNTERMINATED_STRING": _unterminated_string,
            "UNTERMINATED_COMMENT": _unterminated_comment,
        })
    return cached_lark(grammar, options, parser_cache_path(grammar, options))


def parser_cache_path(grammar: str, options: dict) -> str | None:
    """Where the tables built from `grammar` with `options` are cached: the
    name is a digest of everything they depend on (the grammar text, the
    options, lark's and Python's versions), so an edited grammar or an
    upgraded lark never finds the old tables."""
    root = cache_root()
    if root is None:
        return None
    return os.path.join(root, "parser", f"lark-{_digest(grammar, options)}.cache")


def _digest(grammar: str, options: dict) -> str:
    # Functions (lexer callbacks) by their qualified name: the pickle holds
    # references to them, not their code.
    def spelled(value):
        if isinstance(value, dict):
            return sorted((k, spelled(v)) for k, v in value.items())
        return f"{value.__module__}.{value.__qualname__}" if callable(value) else repr(value)

    key = "\0".join([grammar, repr(spelled(options)), lark.__version__,
                     repr(sys.version_info[:2])])
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def cached_lark(grammar: str, options: dict, path: str | None) -> Lark:
    """Lark from the cache file at `path` when it is ours and holds the
    tables of this grammar and these options; else built, and written there
    for the next run (best effort: a read-only disk just means no cache)."""
    digest = _digest(grammar, options)
    if path is not None:
        parser = _load(path, digest)
        if parser is not None:
            return parser
    parser = Lark(grammar, **options)
    if path is not None:
        _store(path, digest, parser)
    return parser


def _load(path: str, digest: str) -> Lark | None:
    # The tables are a pickle: load only a regular file of our own that no
    # one else can write (its directory is created 0700 too), and whose
    # first line is the digest its name was made from.
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            if f.readline() != digest.encode() + b"\n":
                return None
            return Lark.load(f)
    except Exception:   # noqa: BLE001 - missing, truncated, another lark's: rebuild
        return None


def _store(path: str, digest: str, parser: Lark) -> None:
    import tempfile  # noqa: PLC0415 - only a cache miss writes
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(digest.encode() + b"\n")
            parser.save(f)
        os.replace(tmp, path)       # whole or not at all, for a concurrent reader
    except Exception:   # noqa: BLE001 - a disk or pickling failure: no cache
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _unterminated_string(token: Token) -> None:
    raise ScriptError("unterminated string literal", _token_span(token),
                      hints=("close it with '\"' on the same line; write \\n "
                             "for a newline inside a string",))


def _unterminated_comment(token: Token) -> None:
    span = SourceSpan(token.line, token.column, token.line, token.column + 2)
    raise ScriptError("unterminated comment: '/*' has no matching '*/'", span)


# Words of the language itself; none can name a script variable.
KEYWORDS = frozenset({"trace", "print", "let", "if", "else", "bt", "backtrace", "true",
                      "false", "cast"})


def _token_span(token: Token) -> SourceSpan:
    return SourceSpan(token.line, token.column, token.end_line,
                      token.end_column)


def _meta_span(meta) -> SourceSpan:
    return SourceSpan(meta.line, meta.column, meta.end_line, meta.end_column)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, char in enumerate(text) if char == "\n")
    return starts


_CONTRADICTING = {ast.BacktraceMode.INLINE: ast.BacktraceMode.NOINLINE,
                  ast.BacktraceMode.NOINLINE: ast.BacktraceMode.INLINE}


def _backtrace_modes(words: list[Token]) -> frozenset[ast.BacktraceMode]:
    """`bt`'s mode words; a repeated or contradicted one is an error, not
    a silent last-one-wins."""
    modes: dict[ast.BacktraceMode, Token] = {}
    for word in words:
        mode = ast.BacktraceMode(str(word))
        if mode in modes:
            raise ScriptError(f"'{word}' is given twice in this bt", _token_span(word))
        other = _CONTRADICTING.get(mode)
        if other in modes:
            raise ScriptError(f"'{word}' contradicts '{other.value}' in this bt",
                              _token_span(word),
                              hints=("write one of 'inline' (inlined calls as their own "
                                     "frames) or 'noinline' (machine frames only)",))
        modes[mode] = word
    return frozenset(modes)


@v_args(meta=True)
class _ToAst(Transformer):
    """Parse tree -> AST. One instance per parse: it keeps the text so that
    `print expr;` and `if` can record their source exactly as written."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text
        self._line_starts = _line_starts(text)

    def _source(self, span: SourceSpan) -> str:
        start = self._line_starts[span.line - 1] + span.column - 1
        end = self._line_starts[span.end_line - 1] + span.end_column - 1
        return self._text[start:end]

    # ------------------------------------------------------------ structure

    def start(self, meta, traces):
        return ast.Script(tuple(traces), self._text)

    def trace_block(self, meta, children):
        token, body = children
        return ast.TraceBlock(trace_pattern(str(token), _token_span(token)),
                              str(token), body, _meta_span(meta),
                              _token_span(token))

    def block(self, meta, statements):
        return tuple(statements)

    # ----------------------------------------------------------- statements

    def print_stmt(self, meta, args):
        span, first = _meta_span(meta), args[0]
        first_text = self._source(first.span)
        if isinstance(first, ast.StringLiteral) and first_text.startswith('"'):
            return ast.PrintFormat(parse_format(first_text, first.span),
                                   tuple(args[1:]), span)
        if len(args) > 1:
            raise ScriptError(
                "print with several values needs a format string first",
                first.span, hints=('write: print "{} {}", a, b;',))
        return ast.PrintExpr(first, first_text, span)

    def let_stmt(self, meta, children):
        name, value = children
        if str(name) in KEYWORDS:
            # The contextual lexer reads a keyword after `let` as a NAME.
            raise ScriptError(f"'{name}' is a keyword and cannot be bound with let",
                              _token_span(name), hints=("choose another name",))
        return ast.Let(str(name), value, _meta_span(meta))

    def if_stmt(self, meta, children):
        condition, then_body, else_body = children
        return ast.If(condition, self._source(condition.span), then_body,
                      else_body or (), _meta_span(meta))

    def else_clause(self, meta, children):
        (body,) = children
        return (body,) if isinstance(body, ast.If) else body

    def bt_stmt(self, meta, children):
        return ast.Backtrace(_meta_span(meta), _backtrace_modes(children))

    def count_stmt(self, meta, children):
        name, keys = children
        return self._aggregate(meta, ast.AggregationKind.COUNT, name, None, keys)

    def sum_stmt(self, meta, children):
        name, value, keys = children
        return self._aggregate(meta, ast.AggregationKind.SUM, name, value, keys)

    def hist_stmt(self, meta, children):
        name, value, keys = children
        return self._aggregate(meta, ast.AggregationKind.HIST, name, value, keys)

    def by_clause(self, meta, keys):
        return tuple(keys)

    def by_key(self, meta, children):
        """A `by` value and its `as LABEL` name (None without one)."""
        expr, label = children
        return expr, None if label is None else str(label)

    def _aggregate(self, meta, kind, name, value, keys):
        keys = keys or ()
        exprs = tuple(expr for expr, _ in keys)
        return ast.Aggregate(kind, str(name), value, exprs,
                             tuple(self._source(expr.span) for expr in exprs),
                             _meta_span(meta), _token_span(name),
                             tuple(label for _, label in keys))

    def assign_stmt(self, meta, children):
        # GhostScope's wording (docs/scripting.md, "Scoping & Shadowing").
        raise ScriptError(
            "Assignment is not supported: variables are immutable. "
            "Use 'let a = ...' to bind once.", _meta_span(meta))

    def expr_stmt(self, meta, children):
        text = self._source(children[0].span)
        raise ScriptError("an expression on its own is not a statement",
                          _meta_span(meta),
                          hints=(f"to show its value, write: print {text};",))

    # ---------------------------------------------------------- expressions

    def binary(self, meta, children):
        left, op, right = children
        return ast.Binary(ast.BinaryOp(op.value), left, right,
                          _meta_span(meta))

    def unary(self, meta, children):
        op, operand = children
        return ast.Unary(ast.UnaryOp(op.value), operand, _meta_span(meta))

    def member(self, meta, children):
        base, field = children
        if field.type == "INT" and (isinstance(base, ast.IntLiteral) or not str(field).isdigit()):
            # `1.5` lexes as 1 . 5; `t.0x1` is no tuple field
            raise ScriptError("floating-point literals are not supported" if
                              isinstance(base, ast.IntLiteral) else
                              f"'{field}' is not a tuple field (write .0, .1, ...)",
                              _meta_span(meta))
        return ast.Member(base, str(field), _meta_span(meta))

    def index(self, meta, children):
        base, index = children
        return ast.Index(base, index, _meta_span(meta))

    def paren(self, meta, children):
        # The span grows to cover the parentheses so that source slices
        # (print text, if conditions) read as written.
        return dataclasses.replace(children[0], span=_meta_span(meta))

    def name(self, meta, children):
        return ast.Name(str(children[0]), _meta_span(meta))

    def int_lit(self, meta, children):
        text = str(children[0])
        return ast.IntLiteral(integer(text, _meta_span(meta)), _meta_span(meta),
                              decimal=text[:2].lower() not in ("0x", "0o", "0b"))

    def string_lit(self, meta, children):
        span = _meta_span(meta)
        return ast.StringLiteral(decode_string(str(children[0]), span), span)

    def special(self, meta, children):
        return special_variable(str(children[0]), _meta_span(meta))

    def special_call(self, meta, children):
        token, expr = children
        if str(token) != ENTRY_SPECIAL:
            raise ScriptError(f"'{token}' is not a function; only $entry takes an "
                              "expression: $entry(expr)", _token_span(token))
        return ast.EntryValue(expr, self._source(expr.span), _meta_span(meta))

    def true_lit(self, meta, children):
        return ast.BoolLiteral(True, _meta_span(meta))

    def false_lit(self, meta, children):
        return ast.BoolLiteral(False, _meta_span(meta))

    def cast(self, meta, children):
        operand, type_token = children
        type_span = _token_span(type_token)
        type_name = decode_string(str(type_token), type_span).decode().strip()
        if not type_name:
            raise ScriptError("cast needs a type name, e.g. cast(p, \"int *\")",
                              type_span)
        return ast.Cast(operand, type_name, _meta_span(meta),
                        parse_type_name(type_name, type_span))

    def call(self, meta, children):
        name, args = children[0], tuple(a for a in children[1:] if a is not None)
        call = ast.Call(str(name), args, _meta_span(meta))
        check_builtin_call(call, _token_span(name))
        return call


# ------------------------------------------------------ token validation

def trace_pattern(text: str, span: SourceSpan) -> ast.TracePattern:
    """Classify the text after `trace`: function, FILE:LINE, 0xADDR or
    MODULE:0xADDR."""
    if text.startswith("'") and text.endswith("'" + RETURN_SUFFIX):
        quoted = text[1:-len(RETURN_SUFFIX) - 1].strip()
        return ast.ReturnPattern(_cpp_function_pattern(quoted, span).name)
    if text.startswith("'"):
        return _cpp_function_pattern(text[1:-1].strip(), span)
    if text.endswith(RETURN_SUFFIX) and len(text) > len(RETURN_SUFFIX):
        return _return_pattern(text[:-len(RETURN_SUFFIX)], span)
    if _FUNCTION.fullmatch(text):
        return ast.FunctionPattern(text)
    if looks_like_cpp(text):
        return _cpp_function_pattern(text, span)
    if address := _ADDRESS.fullmatch(text):
        return ast.AddressPattern(int(address.group(1), 16))
    where, colon, after = text.rpartition(":")
    if text[:2].lower() == "0x":
        raise ScriptError(f"invalid address '{text}' in trace pattern", span,
                          hints=("write the address as 0x followed by hex "
                                 "digits, e.g. 0x401234",))
    if not colon:
        raise ScriptError(
            f"trace pattern '{text}' names a file but no line", span,
            hints=(f"write '{text}:LINE', a function name or 0xADDR",))
    if address := _ADDRESS.fullmatch(after):
        return ast.AddressPattern(int(address.group(1), 16), module=where)
    if after.isdigit() and int(after) > 0:
        return ast.LinePattern(where, int(after))
    raise ScriptError(
        f"invalid trace pattern '{text}': expected a line number or 0xADDR "
        "after ':'", span,
        hints=("patterns are FUNCTION, FILE:LINE, 0xADDR or MODULE:0xADDR",))


def _return_pattern(function: str, span: SourceSpan) -> ast.ReturnPattern:
    """`FUNC:return` (CONTRACT.md "Return probes"): FUNC as a function
    pattern names it."""
    if _FUNCTION.fullmatch(function) or looks_like_cpp(function):
        return ast.ReturnPattern(_cpp_function_pattern(function, span).name
                                 if looks_like_cpp(function) else function)
    raise ScriptError(f"invalid trace pattern '{function}{RETURN_SUFFIX}': ':return' "
                      "follows a function name", span,
                      hints=("write FUNCTION:return, e.g. trace parse:return { print $retval; }",))


def _cpp_function_pattern(text: str, span: SourceSpan) -> ast.FunctionPattern:
    if not is_function_pattern(text):
        raise ScriptError(f"invalid C++ function name '{text}' in trace pattern", span,
                          hints=("write NAME, ns::NAME, Class::method, NAME<int> or "
                                 "'ns::NAME(int, double)' (in single quotes when it has "
                                 "spaces or an operator)",))
    return ast.FunctionPattern(text)


def integer(text: str, span: SourceSpan) -> int:
    """Value of an integer literal token (range: unsigned 64-bit)."""
    try:
        value = int_value(text)
    except ValueError as exc:
        raise ScriptError(str(exc), span) from None
    if value > _MAX_INT:
        raise ScriptError(f"integer literal '{text}' does not fit in 64 bits",
                          span)
    return value


def special_variable(text: str, span: SourceSpan) -> ast.SpecialVar:
    """`$pid` etc.; anything else lists the valid names."""
    ident = text[1:]
    if ident in SPECIAL_VARIABLES or ident in VARIABLE_LIST_SPECIALS:
        return ast.SpecialVar(ident, span)
    if text == ENTRY_SPECIAL:
        raise ScriptError("$entry needs an expression: $entry(expr) is expr's value when "
                          "the call was entered", span)
    valid = tuple("$" + name for name in (*SPECIAL_VARIABLES, *VARIABLE_LIST_SPECIALS))
    raise ScriptError(f"unknown special variable '{text}'", span,
                      hints=("special variables are " + ", ".join(valid),),
                      candidates=nearest(text, valid))


def check_builtin_call(call: ast.Call, name_span: SourceSpan) -> None:
    """Arity and literal-argument rules GhostScope enforces at parse time."""
    if call.function not in BUILTINS:
        raise ScriptError(
            f"unknown function '{call.function}'", name_span,
            hints=("builtins are " + ", ".join(u for _, _, u in
                                               BUILTINS.values()),),
            candidates=nearest(call.function, BUILTINS))
    fewest, most, usage = BUILTINS[call.function]
    if not fewest <= len(call.args) <= most:
        wanted = str(fewest) if fewest == most else f"{fewest} or {most}"
        raise ScriptError(f"{call.function} takes {wanted} arguments, "
                          f"got {len(call.args)}", call.span,
                          hints=(f"usage: {usage}",))
    if call.function == "hex":
        _check_hex(call.args[0])
    if call.function == "memcmp" and len(call.args) == 2 and not any(
            isinstance(a, ast.Call) and a.function == "hex" for a in call.args):
        raise ScriptError("memcmp needs a length unless one side is hex(...)",
                          call.span, hints=("usage: memcmp(a, b, len)",))


def _check_hex(arg: ast.Expr) -> None:
    # GhostScope: hex digits and spaces only, an even number of digits.
    if not isinstance(arg, ast.StringLiteral):
        raise ScriptError('hex takes a string literal, e.g. hex("de ad")',
                          arg.span)
    text = arg.value.decode("latin-1")
    if not _HEX_BYTES.fullmatch(text):
        raise ScriptError("hex string may contain only hex digits and spaces",
                          arg.span)
    if len(text.replace(" ", "")) % 2:
        raise ScriptError("hex string needs an even number of digits "
                          "(two per byte)", arg.span)


# ------------------------------------------------------------ syntax errors
# Built from lark's parser state: the terminals the LALR parser accepts at
# the error (see `_accepted_at`), never from scanning the text. Groups of
# terminals are named the way a user thinks of them ("an expression",
# "an operator", "a statement").

_REGEX_TERMINALS = {
    "NAME": "a name", "INT": "an integer", "STRING": "a string",
    "SPECIAL": "a special variable such as $pid", "$END": "end of input",
    "PATTERN": "a trace pattern (FUNCTION, FILE:LINE, 0xADDR or "
               "MODULE:0xADDR)",
    "QUALIFIED_NAME": "a name",
    "BT_MODE": "a bt mode (raw, full, inline, noinline)",
}
_STATEMENT_STARTS = {"print", "let", "if", "bt", "backtrace", "count", "sum", "hist"}
_OPERAND_STARTS = {"NAME", "QUALIFIED_NAME", "INT", "STRING", "SPECIAL", "true", "false",
                   "cast", "(", "-", "!", "~", "*", "&"}
# Binary operators plus the postfix ones (`.`, `[`, call `(`).
_OPERATORS = {"||", "&&", "|", "^", "&", "==", "!=", "<", "<=", ">", ">=",
              "<<", ">>", "+", "-", "*", "/", "%", ".", "->", "[", "("}
_LISTING_ORDER = (";", ",", ")", "]", "{", "}", "=", "else", "trace")


def syntax_error(exc: UnexpectedInput, text: str) -> ScriptError:
    """Turn a lark parse/lex error into a ScriptError at the offending spot."""
    if isinstance(exc, UnexpectedToken):
        offset = None if exc.token.type == "$END" else exc.token.start_pos
        expected = (_accepted_at(text, offset) or set(exc.accepts)
                    or set(exc.expected))
        found, span = _describe_token(exc.token, text)
    elif isinstance(exc, UnexpectedCharacters):
        expected = _accepted_at(text, None) or set(exc.allowed or ())
        found = f"'{exc.char}'"
        span = SourceSpan(exc.line, exc.column, exc.line, exc.column + 1)
    else:  # UnexpectedEOF (only from non-LALR parsers, kept for safety)
        expected = set(getattr(exc, "expected", ()))
        found, span = "end of input", _end_span(text)
    message = f"expected {describe_expected(expected)}, found {found}"
    hints, words = (), {_spelling(name) for name in expected}
    if "trace" in words and "print" not in words:
        hints = ("statements go inside a block: trace <pattern> { ... }",)
    elif found == "'='":
        hints = ("to compare, write '=='; script variables are bound once "
                 "with 'let'",)
    return ScriptError(message, span, hints=hints)


def _accepted_at(text: str, offset: int | None) -> set[str]:
    """Terminals the parser accepts just before source offset `offset`
    (None: where the lexer gave up, or at end of input).

    The error's own sets are too wide: UnexpectedCharacters carries the
    lexer state's terminals and UnexpectedToken is raised after the LALR
    parser already reduced on the bad lookahead. Replaying the tokens up to
    the error and asking the interactive parser gives the exact set.
    """
    interactive = _lark().parse_interactive(text)
    try:
        for token in interactive.iter_parse():
            if offset is not None and token.start_pos >= offset:
                break
    except UnexpectedInput:
        pass
    except (LarkError, ScriptError):
        return set()
    return set(interactive.accepts())


def describe_expected(names: set[str]) -> str:
    """`{'SEMICOLON', 'PLUS', ...}` -> "';' or an operator after expression"."""
    words = {_spelling(name) for name in names} - {None}
    groups, suffix = [], ""
    if words & _STATEMENT_STARTS:
        groups.append("a statement")
        words -= _STATEMENT_STARTS | _OPERAND_STARTS
    elif "NAME" in words and "INT" in words:
        groups.append("an expression")
        words -= _OPERAND_STARTS
    elif words & (_OPERATORS - {"(", "."}):
        # We sit right after a complete operand; '=' would only lead to the
        # "assignment is not supported" error, so do not suggest it.
        words -= _OPERATORS | {"="}
        groups.append("an operator")
        suffix = " after expression"
    listed = [_quote(word) for word in sorted(words, key=_listing_key)]
    # "a statement or '}'" but "';' or an operator after expression".
    phrases = groups + listed if suffix == "" else listed + groups
    return _join_or(phrases) + suffix if phrases else "something else"


@functools.cache
def _terminal_spellings() -> dict[str, str]:
    return {t.name: t.pattern.value for t in _lark().terminals
            if t.pattern.type == "str"}


def _spelling(name: str) -> str | None:
    if name in _REGEX_TERMINALS:
        return name
    return _terminal_spellings().get(name)  # None: an ignored terminal


def _listing_key(word: str) -> tuple[int, str]:
    if word in _LISTING_ORDER:
        return (_LISTING_ORDER.index(word), word)
    return (len(_LISTING_ORDER), word)


def _quote(word: str) -> str:
    return _REGEX_TERMINALS.get(word) or f"'{word}'"


def _join_or(phrases: list[str]) -> str:
    if len(phrases) == 1:
        return phrases[0]
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


def _describe_token(token: Token, text: str) -> tuple[str, SourceSpan]:
    if token.type == "$END":
        return "end of input", _end_span(text)
    span = _token_span(token)
    if token.type == "STRING":
        return f"string {token.value}", span
    return f"'{token.value}'", span


def _end_span(text: str) -> SourceSpan:
    # Just after the last non-blank character, so the caret sits on a
    # visible line instead of past the final newline.
    body = text.rstrip()
    line = body.count("\n") + 1
    column = len(body) - (body.rfind("\n") + 1) + 1
    return SourceSpan(line, column, line, column + 1)
