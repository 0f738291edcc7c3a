"""Aggregation statements (`count`, `sum`, `hist`) → AggregateStep per
probe, and one AggregationPlan per aggregation name shared by every probe
that names it (CONTRACT.md "Aggregations"). Knows no C syntax.

A key is laid out here, once per aggregation: a gs_agg_key_head (status
byte), then each `by` value at an 8-byte-aligned offset, 8 bytes for a
scalar, GS_AGG_STRING_CAP for a C string. Two probes naming the same
aggregation must agree on its kind and on every key and value type, since
they update one map.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import field

from gs_cgen.abi import abi
from gs_cgen.dwarf.types import type_name
from gs_cgen.errors import PlanError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan import arith, ir
from gs_cgen.plan.model import (AggregateStep, AggregationKey, AggregationKeyKind,
                                AggregationPlan)
from gs_cgen.script import ast

_SCALAR_SIZE = 8
_KEY_TYPES = "integers, enums, bools, pointers and C strings"
_NOT_LABEL_CHARACTERS = re.compile(r"[^A-Za-z0-9_]+")


@dataclass
class AggregationTable:
    """The aggregations of one script, by name, in the order first seen."""

    plans: dict[str, AggregationPlan] = field(default_factory=dict)

    def declare(self, shape: AggregationPlan, where: str) -> AggregationPlan:
        """The aggregation `shape.name`: `shape` itself the first time,
        else the one already declared, which must have the same shape."""
        known = self.plans.get(shape.name)
        if known is None:
            shape = _with_index(shape, len(self.plans))
            self.plans[shape.name] = shape
            return shape
        if _signature(known) != _signature(shape):
            first = f"line {known.span.line}" if known.span else "an earlier probe"
            raise PlanError(
                f"aggregation '@{shape.name}' is used with different types: "
                f"{_describe(known)} at {first}, {_describe(shape)} here ({where}); "
                "the probes naming one aggregation update one map",
                shape.span, hints=("give the second one another name",))
        return known

    def all(self) -> tuple[AggregationPlan, ...]:
        return tuple(self.plans.values())


def plan_aggregate(stmt: ast.Aggregate, exprs, table: AggregationTable, text: str,
                   where: str) -> AggregateStep:
    """One aggregation statement at one probe site."""
    keys, values, offset = [], [], abi().structs["gs_agg_key_head"].size
    labels = stmt.key_labels or (None,) * len(stmt.keys)
    for key_expr, key_text, label in zip(stmt.keys, stmt.key_texts, labels):
        key, scalar = _key(key_expr, key_text, exprs, offset)
        key = dataclasses.replace(key, label=label or default_label(key_text))
        keys.append(key)
        values.append(scalar)
        offset += key.size
    if offset > abi().constants["GS_AGG_MAX_KEY_SIZE"]:
        raise PlanError(f"the key of '@{stmt.name}' needs {offset} bytes, more than the "
                        f"{abi().constants['GS_AGG_MAX_KEY_SIZE']}-byte limit (a C string "
                        f"key takes {abi().constants['GS_AGG_STRING_CAP']})", stmt.span)
    value, value_type, signed = None, None, False
    if stmt.value is not None:
        value, ctype = _integer_value(stmt, exprs, text)
        value_type, signed = type_name(ctype), arith.signedness(arith.promote(ctype))
    shape = AggregationPlan(0, stmt.name, stmt.kind.value, tuple(keys), offset, value_type,
                            signed, stmt.span)
    declared = table.declare(shape, where)
    _check_labels(declared, stmt, labels, where)
    return AggregateStep(declared, tuple(values), value, stmt.span.slice(text))


def default_label(text: str) -> str:
    """A `by` expression's text as a Prometheus label name: `$pid` → pid,
    `req->path` → req_path, `a.b` → a_b, `arr[2]` → arr_2 (a label is
    [a-zA-Z_][a-zA-Z0-9_]*, and `__` starts only Prometheus' own)."""
    label = _NOT_LABEL_CHARACTERS.sub("_", text).strip("_")
    if not label or label[0].isdigit():
        label = f"key_{label}"
    return label


def _check_labels(declared: AggregationPlan, stmt: ast.Aggregate, labels, where: str) -> None:
    """Probes naming one aggregation share one map and one metric, whose
    labels are named by its first statement: a later `as LABEL` that names
    a key otherwise is an error, not a label silently dropped."""
    for key, label in zip(declared.keys, labels):
        if label is not None and label != key.label:
            raise PlanError(f"'@{stmt.name}' labels this key '{key.label}' where it is first "
                            f"used, '{label}' here ({where})", stmt.span,
                            hints=(f"write 'as {key.label}', or give this one another name",))


def _key(expr: ast.Expr, text: str, exprs, offset: int) -> tuple[AggregationKey, ir.Scalar]:
    """A `by` value: a C string's address, or a scalar's 64-bit value."""
    place = exprs.place(expr)
    if isinstance(place, ir.StringPlace):
        raise PlanError(f"'{text}' is a string literal: a key is a value read at the probe",
                        expr.span)
    ctype = place.ctype
    if arith.is_string_type(ctype):
        size = abi().constants["GS_AGG_STRING_CAP"]
        return (AggregationKey(text, AggregationKeyKind.STRING, ctype, type_name(ctype),
                               offset, size),
                exprs.string_address(place, expr))
    if ctype is not None and not arith.is_scalar(ctype):
        raise PlanError(f"'{text}' of type '{type_name(ctype)}' cannot be an aggregation key: "
                        f"keys are {_KEY_TYPES}", expr.span)
    value, ctype = exprs.value(place, expr)
    return (AggregationKey(text, AggregationKeyKind.SCALAR, ctype, type_name(ctype), offset,
                           _SCALAR_SIZE), value)


def _integer_value(stmt: ast.Aggregate, exprs, text: str):
    place = exprs.place(stmt.value)
    ctype = getattr(place, "ctype", None)
    if isinstance(place, ir.StringPlace) or (ctype is not None and not arith.is_integer(ctype)):
        what = "a string literal" if ctype is None else f"of type '{type_name(ctype)}'"
        raise PlanError(f"{stmt.kind.value} needs an integer: '{stmt.value.span.slice(text)}' "
                        f"is {what}", stmt.value.span,
                        hints=("cast(p, \"unsigned long\") makes a pointer an integer",))
    return exprs.integer_of(place, stmt.value)


def _with_index(shape: AggregationPlan, index: int) -> AggregationPlan:
    return dataclasses.replace(shape, index=index)


def _signature(plan: AggregationPlan) -> tuple:
    return (plan.kind, tuple((k.kind, k.type_text) for k in plan.keys), plan.value_type)


def _describe(plan: AggregationPlan) -> str:
    value = f" of {plan.value_type}" if plan.value_type else ""
    keys = f" by ({', '.join(k.type_text for k in plan.keys)})" if plan.keys else ""
    return f"{plan.kind}{value}{keys}"
