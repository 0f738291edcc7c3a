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


def test_by_keys_take_an_as_label_and_as_stays_a_name():
    (total, let, printed) = statements(
        "sum bytes = n by req->method as method, $pid; let as = 1; print as;")
    assert total.key_texts == ("req->method", "$pid")
    assert total.key_labels == ("method", None)
    assert let.name == "as" and printed.text == "as"


def test_as_needs_a_label_name():
    with pytest.raises(ScriptError):
        statements("count c by fd as 3;")
