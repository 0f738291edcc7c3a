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
    for key_expr, key_text in zip(stmt.keys, stmt.key_texts):
        key, scalar = _key(key_expr, key_text, exprs, offset)
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
    return AggregateStep(declared, tuple(values), value, stmt.span.slice(text))


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
    return AggregationPlan(index, shape.name, shape.kind, shape.keys, shape.key_size,
                           shape.value_type, shape.value_signed, shape.span)


def _signature(plan: AggregationPlan) -> tuple:
    return (plan.kind, tuple((k.kind, k.type_text) for k in plan.keys), plan.value_type)


def _describe(plan: AggregationPlan) -> str:
    value = f" of {plan.value_type}" if plan.value_type else ""
    keys = f" by ({', '.join(k.type_text for k in plan.keys)})" if plan.keys else ""
    return f"{plan.kind}{value}{keys}"
