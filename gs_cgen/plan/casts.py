"""`cast(expr, "TYPE")`: the type TYPE names at a probe, and what the cast
makes of its operand.

Lookup order (docs/reference.md "Casts and builtin lengths"): the probe's own module (a definition in
the probe's compile unit first), then the other loaded modules with DWARF
(several of them: all must define the name alike, else the cast is
ambiguous), then the spellings whose meaning the x86_64 ABI fixes (C base
types, `uint8_t`…, `size_t`, GhostScope's `u8`/`i32`…), which hold even
where the program's DWARF never names them.
"""
from __future__ import annotations

from gs_cgen.dwarf.types import (ArrayType, BoolType, CType, FloatType, IntType, PointerType,
                                 QualifiedType, StructType, TypedefType, VectorType, VoidType,
                                 strip, type_name)
from gs_cgen.errors import PlanError, nearest
from gs_cgen.plan import arith, ir
from gs_cgen.script import ast

# x86_64 LP64 (System V psABI 3.1.2): char is signed.
_ABI_BASES: dict[str, CType] = {
    "void": VoidType(),
    "char": IntType("char", 1, True, True),
    "signed char": IntType("signed char", 1, True, True),
    "unsigned char": IntType("unsigned char", 1, False, True),
    "short": IntType("short", 2, True), "unsigned short": IntType("unsigned short", 2, False),
    "int": IntType("int", 4, True), "unsigned int": IntType("unsigned int", 4, False),
    "long": IntType("long", 8, True), "unsigned long": IntType("unsigned long", 8, False),
    "long long": IntType("long long", 8, True),
    "unsigned long long": IntType("unsigned long long", 8, False),
    "_Bool": BoolType("_Bool", 1),
    "float": FloatType("float", 4), "double": FloatType("double", 8),
    "long double": FloatType("long double", 16),
    "__int128": IntType("__int128", 16, True),
    "unsigned __int128": IntType("unsigned __int128", 16, False),
}
# Fixed-width names (<stdint.h>, <stddef.h>, Linux's __u8, GhostScope's u8/i8).
_WIDTHS = {8: ("signed char", "unsigned char"), 16: ("short", "unsigned short"),
           32: ("int", "unsigned int"), 64: ("long", "unsigned long")}
_ABI_TYPEDEFS = {
    **{name: _WIDTHS[bits][0] for bits in _WIDTHS
       for name in (f"int{bits}_t", f"__s{bits}", f"s{bits}", f"i{bits}")},
    **{name: _WIDTHS[bits][1] for bits in _WIDTHS
       for name in (f"uint{bits}_t", f"__u{bits}", f"u{bits}")},
    "size_t": "unsigned long", "ssize_t": "long", "ptrdiff_t": "long",
    "intptr_t": "long", "uintptr_t": "unsigned long", "byte": "unsigned char",
    "f32": "float", "f64": "double",
}


def cast_type(planner, cast: ast.Cast) -> CType:
    """The CType of a cast's TYPE at the planner's probe; PlanError when no
    module knows it, or other modules define it differently."""
    spec = cast.type
    base = planner.modules.find_type(spec.keyword, spec.name, spec.is_base, planner.module,
                                     planner.probe_address, cast.span)
    if base is None:
        base = _abi_type(spec)
    if base is None:
        raise _unknown(planner, spec, cast)
    for qualifier in reversed(spec.qualifiers):     # renders as written: `const volatile T`
        base = QualifiedType(qualifier, base)
    for step in spec.derivations:
        base = _derive(base, step)
    return base


def _derive(ctype: CType, step: ast.PointerTo | ast.ArrayOf) -> CType:
    if isinstance(step, ast.ArrayOf):
        return ArrayType(ctype, step.count)
    derived: CType = PointerType(lambda target=ctype: target)
    for qualifier in reversed(step.qualifiers):
        derived = QualifiedType(qualifier, derived)
    return derived


def _abi_type(spec: ast.TypeName) -> CType | None:
    if spec.keyword is not None:
        return None
    if spec.is_base:
        return _ABI_BASES.get(spec.name)
    base = _ABI_TYPEDEFS.get(spec.name)
    return TypedefType(spec.name, _ABI_BASES[base]) if base else None


def _unknown(planner, spec: ast.TypeName, cast: ast.Cast) -> PlanError:
    what = f"{spec.keyword} {spec.name}" if spec.keyword else spec.name
    pool = [*planner.modules.type_names(planner.module), *_ABI_TYPEDEFS, *_ABI_BASES]
    return PlanError(f"unknown type '{what}' in cast: no loaded module's DWARF defines it",
                     cast.span, candidates=nearest(spec.name, pool),
                     hints=(planner.modules.searched(),))


# ------------------------------------------------------------ the operand

def cast_place(planner, cast: ast.Cast, target: CType) -> ir.Place:
    """What `cast(operand, TYPE)` is: a scalar TYPE converts the operand's
    value as C does (to `_Bool`: `!= 0`); a struct, union or array TYPE is
    the object at the address the operand's value holds (a pointer or an
    integer: GhostScope's `cast(&node.words, "uint32_t[4]")`), or the
    operand's own storage seen as TYPE when the operand is an object in
    memory of another type; any other TYPE reinterprets that storage."""
    source = planner.place(cast.operand)
    if isinstance(source, ir.UnavailablePlace):
        return ir.UnavailablePlace(target, source.reason, source.optimized_out)
    if arith.is_scalar(target):
        value, _ = planner.value(source, cast.operand)
        if isinstance(strip(target), BoolType):
            return ir.ValuePlace(ir.BinaryOp("!=", value, ir.Const(0), False), target)
        return ir.ValuePlace(arith.narrow(value, target), target)
    if isinstance(strip(target), (StructType, ArrayType, VectorType)) and \
            arith.is_scalar(getattr(source, "ctype", None)):
        value, _ = planner.value(source, cast.operand)
        return ir.MemoryPlace(ir.NonNull(value), target)
    if isinstance(source, ir.MemoryPlace):
        return ir.MemoryPlace(source.address, target)
    raise PlanError(f"cannot cast '{cast.operand.span.slice(planner.source_text)}' to "
                    f"'{type_name(target)}'", cast.span)
