"""Static checks on a parsed script: `let` scoping and print arguments.

Scoping follows GhostScope (docs/scripting.md, "Scoping & Shadowing"):
every `{ ... }` is a scope, `if`'s branches are separate scopes, script
variables are immutable, cannot be re-declared in one scope, cannot shadow
an outer script variable, and are invisible after their scope ends. A name
that is not a script variable is left alone: it may be a DWARF variable,
which plan/ resolves later.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field

from gs_cgen.errors import ScriptError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.script import ast


def check(script: ast.Script) -> None:
    """Raise ScriptError for the first scoping or print-argument problem."""
    if not script.traces:
        raise ScriptError("the script has no trace blocks",
                          hints=('write e.g. trace main { print "hit"; }',))
    for trace in script.traces:
        # Each trace block is independent: its variables die with it.
        _check_block(trace.body, _Scope(visible=frozenset()))


@dataclass
class _Scope:
    """Names visible from enclosing blocks, names declared in this block so
    far, and names whose block has already ended (shared by the whole trace
    block so that a later use can be reported as out of scope)."""

    visible: frozenset[str]
    local: set[str] = field(default_factory=set)
    ended: set[str] = field(default_factory=set)

    def nested(self) -> "_Scope":
        return _Scope(self.visible | self.local, ended=self.ended)

    def in_scope(self, name: str) -> bool:
        return name in self.visible or name in self.local


def _check_block(body: tuple[ast.Stmt, ...], scope: _Scope) -> None:
    for statement in body:
        _check_statement(statement, scope)
    scope.ended.update(scope.local)


def _check_statement(statement: ast.Stmt, scope: _Scope) -> None:
    _check_variable_lists(statement)
    match statement:
        case ast.Let():
            _check_uses(statement.value, scope)
            _declare(statement, scope)
        case ast.PrintExpr():
            _check_uses(statement.expr, scope)
        case ast.PrintFormat():
            for arg in statement.args:
                _check_uses(arg, scope)
            _check_print_arguments(statement, scope)
        case ast.If():
            _check_uses(statement.condition, scope)
            _check_block(statement.then_body, scope.nested())
            _check_block(statement.else_body, scope.nested())
        case ast.Backtrace():
            pass
        case ast.Aggregate():
            for expr in (statement.value, *statement.keys):
                if expr is not None:
                    _check_uses(expr, scope)


def _declare(let: ast.Let, scope: _Scope) -> None:
    # Wording from GhostScope's docs ("Friendly errors").
    if let.name in scope.local:
        raise ScriptError("Redeclaration in the same scope is not allowed: "
                          f"'{let.name}'", let.span)
    if let.name in scope.visible:
        raise ScriptError("Shadowing is not allowed for immutable variables: "
                          f"'{let.name}'", let.span,
                          hints=("pick a different name for the inner "
                                 "variable",))
    scope.local.add(let.name)


def _check_uses(expr: ast.Expr, scope: _Scope) -> None:
    for name in _names(expr):
        if not scope.in_scope(name.ident) and name.ident in scope.ended:
            raise ScriptError(
                f"Use of variable '{name.ident}' outside of its scope",
                name.span, hints=("a 'let' inside { ... } is visible only "
                                  "up to that block's closing '}'",))


# `$args` / `$locals` expand to a list of values (plan/variables.py).
_VARIABLE_LISTS = ("args", "locals")


def _check_variable_lists(statement: ast.Stmt) -> None:
    """`$args` and `$locals` stand alone in a `print`: `print $args;`."""
    match statement:
        case ast.PrintExpr(expr=ast.SpecialVar()):
            return
        case ast.PrintExpr(expr=expr) | ast.Let(value=expr) | ast.If(condition=expr):
            exprs: tuple = (expr,)
        case ast.PrintFormat(args=args):
            exprs = args
        case _:
            return
    for expr in exprs:
        for special in _specials(expr):
            if special.ident in _VARIABLE_LISTS:
                raise ScriptError(f"'${special.ident}' is a list of variables: it can only be "
                                  f"printed on its own", special.span,
                                  hints=(f"print ${special.ident};",))


def _specials(expr: ast.Expr) -> Iterator[ast.SpecialVar]:
    return (e for e in _subexpressions(expr) if isinstance(e, ast.SpecialVar))


def _names(expr: ast.Expr) -> Iterator[ast.Name]:
    """Every Name in `expr`, left to right. Member fields are not names."""
    return (e for e in _subexpressions(expr) if isinstance(e, ast.Name))


def _subexpressions(expr: ast.Expr) -> Iterator[ast.Expr]:
    """`expr` and everything inside it, left to right."""
    yield expr
    match expr:
        case ast.Member(base=base) | ast.Cast(operand=base) | ast.Unary(operand=base):
            yield from _subexpressions(base)
        case ast.Index(base=base, index=index):
            yield from _subexpressions(base)
            yield from _subexpressions(index)
        case ast.Binary(left=left, right=right):
            yield from _subexpressions(left)
            yield from _subexpressions(right)
        case ast.Call(args=args):
            for arg in args:
                yield from _subexpressions(arg)


def _check_print_arguments(statement: ast.PrintFormat, scope: _Scope) -> None:
    fmt, args = statement.format, statement.args
    wanted, given = fmt.argument_count, len(args)
    if wanted != given:
        # Point at the first surplus argument, or at the format string when
        # arguments are missing.
        where = args[wanted].span if given > wanted else fmt.span
        raise ScriptError(
            f"format string expects {_count(wanted)} but {given} "
            f"{'was' if given == 1 else 'were'} given", where,
            hints=_count_hints(fmt))
    for placeholder in fmt.placeholders:
        length = placeholder.length_variable
        if length is not None and not scope.in_scope(length):
            raise ScriptError(
                f"length variable '{length}' in '{{:{placeholder.kind.value}"
                f".{length}$}}' is not a script variable in scope", fmt.span,
                hints=(f"declare it first: let {length} = ...;",))


def _count(n: int) -> str:
    return f"{n} argument" if n == 1 else f"{n} arguments"


def _count_hints(fmt: ast.FormatString) -> tuple[str, ...]:
    if any(p.dump is ast.DumpLength.STAR for p in fmt.placeholders):
        return ("each '.*' placeholder takes two arguments: the length, "
                "then the value",)
    return ()
