"""Return-block syntax (CONTRACT.md "Return probes"): `FUNC:return`,
`$retval`, `$duration`, `$entry(expr)`."""
from __future__ import annotations

import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import ast
from gs_cgen.script.parser import parse


def test_return_pattern_names_the_function():
    assert parse("trace fact:return { }").traces[0].pattern == ast.ReturnPattern("fact")
    assert parse("trace ns::add:return { }").traces[0].pattern == ast.ReturnPattern("ns::add")
    assert parse("trace memcpy@@GLIBC_2.14:return { }").traces[0].pattern == \
        ast.ReturnPattern("memcpy@@GLIBC_2.14")
    assert parse("trace 'geo::add(int, int)':return { }").traces[0].pattern == \
        ast.ReturnPattern("geo::add(int, int)")
    # A plain function and FILE:LINE are what they were.
    assert parse("trace fact { }").traces[0].pattern == ast.FunctionPattern("fact")
    assert parse("trace a.c:12 { }").traces[0].pattern == ast.LinePattern("a.c", 12)


def test_return_specials_and_entry_values():
    body = parse('trace f:return { print $retval; print "{} {}", $duration, '
                 '$entry(req->id + 1); }').traces[0].body
    assert body[0].expr == ast.SpecialVar("retval", body[0].expr.span)
    duration, entry = body[1].args
    assert duration.ident == "duration"
    assert isinstance(entry, ast.EntryValue) and entry.text == "req->id + 1"
    assert isinstance(entry.expr, ast.Binary)
    assert entry.span.slice('trace f:return { print $retval; print "{} {}", $duration, '
                            '$entry(req->id + 1); }') == "$entry(req->id + 1)"


@pytest.mark.parametrize("text, message", [
    ("trace f:return { print $entry; }",
     "$entry needs an expression: $entry(expr) is expr's value when the call was entered"),
    ("trace f:return { print $pid(1); }",
     "'$pid' is not a function; only $entry takes an expression: $entry(expr)"),
    ("trace 0x1139:return { }",
     "invalid trace pattern '0x1139:return': ':return' follows a function name"),
    ("trace a.c:return { }",
     "invalid trace pattern 'a.c:return': ':return' follows a function name"),
])
def test_malformed_return_syntax(text, message):
    with pytest.raises(ScriptError) as caught:
        parse(text)
    assert caught.value.message == message
