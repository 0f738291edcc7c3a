"""Where a function's return value is when it has just returned: `$retval`
of a return block (CONTRACT.md "Return probes") as a place, typed by the
function's DWARF return type.

The System V x86-64 psABI (section 3.2.3, "Returning of Values") decides
it by classifying the type into eightbytes:
  INTEGER  integers, bools, enums, pointers, and aggregates of at most 16
           bytes whose every eightbyte holds some integer part: rax, then rdx;
  MEMORY   aggregates over 16 bytes or with unaligned fields: the caller
           passed a buffer in rdi, and the callee returns its address in
           rax, so the object is read from memory at rax;
  SSE/X87  float, double, __float128, vectors and aggregates with an
           eightbyte of only floating-point parts come back in xmm0/xmm1,
           long double in st0: no uprobe sees those registers (struct
           pt_regs has only the general-purpose ones), so they are a
           compile-time error naming the type.
"""
from __future__ import annotations

from enum import Enum

from gs_cgen.dwarf.types import (ArrayType, BoolType, ComplexType, CType, EnumType, FloatType,
                                 IntType, PointerType, StructType, VectorType, VoidType, strip,
                                 type_name, type_size)
from gs_cgen.errors import PlanError
from gs_cgen.plan import arith, ir

RETURN_REGISTERS = ("ax", "dx")        # struct pt_regs fields, first and second eightbyte
_EIGHTBYTE = 8


class ReturnClass(Enum):
    INTEGER = "INTEGER"
    MEMORY = "MEMORY"
    SSE = "SSE"
    X87 = "X87"


def return_value_place(ctype: CType, function: str, span) -> ir.Place:
    """`$retval` of `function`, whose DWARF return type is `ctype`."""
    base = strip(ctype)
    if isinstance(base, VoidType):
        raise PlanError(f"'{function}' returns void: there is no $retval", span,
                        hints=("$duration and $entry(expr) are available in its return block",))
    kind = classify(base)
    if kind in (ReturnClass.SSE, ReturnClass.X87):
        raise PlanError(_unreadable_message(ctype, function, kind), span)
    if kind is ReturnClass.MEMORY:
        # psABI: "%rax will contain the address that has been passed in by
        # the caller in %rdi" — the object is in the caller's buffer.
        return ir.MemoryPlace(ir.NonNull(ir.RegisterValue(RETURN_REGISTERS[0])), ctype)
    size = type_size(base)
    if size <= _EIGHTBYTE and not isinstance(base, StructType):
        # psABI: a value narrower than rax leaves its upper bits undefined;
        # C's value is the low bits, extended by the type's signedness.
        return ir.ValuePlace(arith.narrow(ir.RegisterValue(RETURN_REGISTERS[0]), ctype), ctype)
    parts = tuple(ir.CompositePart(offset, min(_EIGHTBYTE, size - offset),
                                   ir.ValuePlace(ir.RegisterValue(register), arith.ULONG))
                  for offset, register in zip(range(0, size, _EIGHTBYTE), RETURN_REGISTERS))
    return ir.CompositePlace(parts, ctype)


def _unreadable_message(ctype: CType, function: str, kind: ReturnClass) -> str:
    where = "st0 (the x87 stack)" if kind is ReturnClass.X87 else "xmm0/xmm1"
    return (f"'{function}' returns '{type_name(ctype)}', which the x86-64 ABI returns in "
            f"{where}; a uprobe sees only the general-purpose registers (struct pt_regs), "
            "so $retval cannot be read")


def classify(ctype: CType) -> ReturnClass:
    """The psABI class of a returned value of type `ctype` (typedefs and
    qualifiers already stripped)."""
    if isinstance(ctype, (IntType, BoolType, EnumType, PointerType)):
        return ReturnClass.INTEGER
    if isinstance(ctype, FloatType):
        return ReturnClass.X87 if ctype.size > 8 and "long double" in ctype.name \
            else ReturnClass.SSE
    if isinstance(ctype, ComplexType):           # a pair of its part type
        return _classify_aggregate(ArrayType(ctype.part, 2))
    if isinstance(ctype, VectorType):
        return ReturnClass.SSE
    if isinstance(ctype, (StructType, ArrayType)):
        return _classify_aggregate(ctype)
    return ReturnClass.MEMORY


def _classify_aggregate(ctype: CType) -> ReturnClass:
    size = type_size(ctype)
    if size > 2 * _EIGHTBYTE or size == 0:
        return ReturnClass.MEMORY
    eightbytes: list[set[ReturnClass]] = [set() for _ in range((size + 7) // _EIGHTBYTE)]
    for offset, leaf in _leaves(ctype, 0):
        leaf_class = classify(leaf)
        leaf_size = max(type_size(leaf), 1)
        if leaf_class is ReturnClass.MEMORY or offset % min(leaf_size, _EIGHTBYTE):
            return ReturnClass.MEMORY           # unaligned fields: psABI rule 1
        if leaf_class is ReturnClass.X87:
            return ReturnClass.X87
        for index in range(offset // _EIGHTBYTE,
                           min(len(eightbytes), (offset + leaf_size - 1) // _EIGHTBYTE + 1)):
            eightbytes[index].add(leaf_class)
    # A merged eightbyte is INTEGER when any of its parts is.
    classes = [ReturnClass.INTEGER if ReturnClass.INTEGER in found or not found
               else ReturnClass.SSE for found in eightbytes]
    return ReturnClass.SSE if ReturnClass.SSE in classes else ReturnClass.INTEGER


def _leaves(ctype: CType, offset: int):
    """(byte offset, scalar type) of every scalar inside an aggregate."""
    base = strip(ctype)
    if isinstance(base, StructType):
        for inherited in base.bases:
            # A class with a virtual base is not trivially copyable: the
            # psABI returns it in memory (VoidType classifies MEMORY).
            yield from (_leaves(inherited.type, offset + inherited.offset)
                        if inherited.offset is not None else [(offset, VoidType())])
        for member in base.members:
            if member.bit_size is not None:     # integer bits: an INTEGER byte
                yield offset + member.offset + (member.bit_offset or 0) // 8, arith.CHAR
            else:
                yield from _leaves(member.type, offset + member.offset)
    elif isinstance(base, ArrayType):
        element_size = type_size(base.element)
        for index in range(base.count or 0):
            yield from _leaves(base.element, offset + index * element_size)
    else:
        yield offset, base
