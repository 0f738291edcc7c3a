"""Aggregations at plan time: key layout, one AggregationPlan per name
shared by the probes, and the errors (non-integer sum, unknown name, key of
an unsupported type, one name with two shapes)."""
from __future__ import annotations

import pytest

from gs_cgen.errors import GsError, PlanError
from gs_cgen.plan.model import AggregateStep, AggregationKeyKind
from tests.unit.plan.test_build import plan


def test_keys_are_laid_out_after_the_status_head():
    result = plan("trace handle { hist sizes = size by req->path, fd, g_color; }")
    (sizes,) = result.aggregations
    assert (sizes.name, sizes.kind, sizes.value_type, sizes.value_signed) == \
        ("sizes", "hist", "long", True)
    layout = [(k.text, k.kind, k.offset, k.size) for k in sizes.keys]
    assert layout == [("req->path", AggregationKeyKind.STRING, 8, 64),
                      ("fd", AggregationKeyKind.SCALAR, 72, 8),
                      ("g_color", AggregationKeyKind.SCALAR, 80, 8)]
    assert sizes.key_size == 88
    (step,) = result.probes[0].steps
    assert isinstance(step, AggregateStep) and step.aggregation is sizes


def test_one_name_in_two_probes_is_one_aggregation():
    result = plan("trace handle { count calls by fd; } trace server.c:42 { count calls by fd; }")
    assert len(result.aggregations) == 1
    assert [p.steps[0].aggregation.index for p in result.probes] == [0, 0]
    # An aggregation-only probe renders no line: it sends no event.
    assert all(not p.lines for p in result.probes)


def test_one_name_with_two_shapes_names_both():
    with pytest.raises(PlanError) as error:
        plan("trace handle {\n sum total = fd;\n}\ntrace server.c:42 {\n sum total = size;\n}")
    message = error.value.message
    assert "aggregation '@total' is used with different types" in message
    assert "sum of int at line 2" in message and "sum of long here" in message


@pytest.mark.parametrize("script, message", [
    ("sum s = req;", "sum needs an integer: 'req' is of type 'struct request*'"),
    ("hist h = \"text\";", "hist needs an integer: '\"text\"' is a string literal"),
    ("count c by *req;", "'*req' of type 'struct request' cannot be an aggregation key"),
    ("count c by nosuch;", "nosuch"),
])
def test_plan_errors(script, message):
    with pytest.raises(GsError) as error:
        plan(f"trace handle {{ {script} }}")
    assert message in error.value.message


def test_labels_are_the_as_names_or_the_key_texts_made_label_names():
    result = plan("trace handle { count c by req->path as path, fd, $pid, g_color + 1; }")
    assert [k.label for k in result.aggregations[0].keys] == ["path", "fd", "pid", "g_color_1"]


@pytest.mark.parametrize("text, label", [
    ("$pid", "pid"), ("req->path", "req_path"), ("a.b", "a_b"), ("arr[2]", "arr_2"),
    ("*p", "p"), ('cast(x, "int")', "cast_x_int"), ("__x", "x"), ("1 + n", "key_1_n"),
])
def test_default_labels(text, label):
    from gs_cgen.plan.aggregations import default_label
    assert default_label(text) == label


def test_a_later_as_naming_a_key_otherwise_is_an_error():
    with pytest.raises(PlanError) as error:
        plan("trace handle { count c by fd; } trace server.c:42 { count c by fd as file; }")
    assert error.value.message.startswith(
        "'@c' labels this key 'fd' where it is first used, 'file' here")
    # The same name, or none, is the first statement's label.
    result = plan("trace handle { count c by fd as file; } "
                  "trace server.c:42 { count c by fd; count c by fd as file; }")
    assert [k.label for k in result.aggregations[0].keys] == ["file"]
