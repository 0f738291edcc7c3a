"""count / sum / hist statements: their AST, and that the words stay names
in expressions."""
from __future__ import annotations

import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import ast
from gs_cgen.script.parser import parse


def statements(text: str):
    return parse(f"trace f {{ {text} }}").traces[0].body


def test_count_sum_hist_with_and_without_keys():
    count, total, sizes = statements(
        "count calls; sum bytes = n + 1 by p->name, $pid; hist sizes = n by st;")
    assert (count.kind, count.name, count.value, count.keys) == \
        (ast.AggregationKind.COUNT, "calls", None, ())
    assert total.kind is ast.AggregationKind.SUM and total.name == "bytes"
    assert isinstance(total.value, ast.Binary)
    assert total.key_texts == ("p->name", "$pid")
    assert isinstance(total.keys[1], ast.SpecialVar)
    assert sizes.kind is ast.AggregationKind.HIST and sizes.key_texts == ("st",)


def test_the_keywords_are_names_in_expressions():
    let, printed = statements("let count = 1; print sum + count;")
    assert let.name == "count"
    assert printed.text == "sum + count"


@pytest.mark.parametrize("text, message", [
    ("count calls = 3;", "expected"),
    ("sum bytes;", "expected '='"),
    ("hist h = n by;", "expected an expression"),
    ("count c by a b;", "expected"),
])
def test_malformed_aggregations_are_syntax_errors(text, message):
    with pytest.raises(ScriptError) as error:
        statements(text)
    assert message in error.value.message
