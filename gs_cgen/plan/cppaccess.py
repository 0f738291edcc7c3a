"""`len(x)` and `x[i]` of C++ standard library values (CONTRACT.md "Rust
and C++ programs"), from the layouts gs_cgen/printers/cpp.py recognizes:
the counts and pointers they need are read in the probe, as gdb's
libstdc++ xmethods compute `x.size()` and `x[i]`.

`word(offset, size)` reads an unsigned integer at that offset of the
object (plan/expr.py gives it, for the object's place)."""
from __future__ import annotations

from typing import Callable

from gs_cgen.dwarf.types import ArrayType, strip, type_size
from gs_cgen.plan import ir
from gs_cgen.printers import cpp
from gs_cgen.printers.layout import Kind, Layout

Word = Callable[[int, int], ir.Scalar]


def _op(op: str, left: ir.Scalar, right: ir.Scalar) -> ir.Scalar:
    return ir.BinaryOp(op, left, right, False)


def cpp_length(ctype, word: Word) -> ir.Scalar | None:
    """The element count (a string's bytes) of a C++ std value; None when
    `ctype` has none gs-cgen knows (not a std collection, or a
    forward_list, which keeps no count)."""
    shape = cpp.layout(ctype)
    match shape.kind:
        case Kind.TEXT | Kind.SEQUENCE:
            return _sequence_length(shape, word)
        case Kind.CHAIN | Kind.RBTREE if shape.count_offset is not None:
            return word(shape.count_offset, 8)
        case Kind.WRAPPER:                     # std::array: its declared count
            inner = strip(shape.inner.type)
            return ir.Const(inner.count) if isinstance(inner, ArrayType) and inner.count \
                is not None else None
        case Kind.UNIT:                        # std::array<T, 0>
            return ir.Const(0)
        case Kind.BITS:
            start, start_bit, finish, finish_bit = shape.offsets
            words = _op("-", word(finish, 8), word(start, 8))
            return _op("-", _op("+", _op("*", words, ir.Const(8)), word(finish_bit, 4)),
                       word(start_bit, 4))
        case Kind.DEQUE:
            return _deque_length(shape, word)
    return None


def _sequence_length(shape: Layout, word: Word) -> ir.Scalar:
    size = max(type_size(shape.element), 1)
    if shape.end_pointer:                      # std::vector: (_M_finish - _M_start) / size
        return _op("/", _op("-", word(shape.length_offset, 8), word(shape.pointer_offset, 8)),
                   ir.Const(size))
    if shape.length_offset is None:            # std::span of a static extent
        return ir.Const(shape.offsets[0])
    return word(shape.length_offset, 8)


def _deque_length(shape: Layout, word: Word) -> ir.Scalar:
    """(finish node - start node) buffers, plus finish's place in its
    buffer, less start's (libstdc++'s `_M_finish - _M_start`)."""
    s_cur, s_first, s_node, f_cur, f_first, f_node, per_buffer = shape.offsets
    size = ir.Const(max(type_size(shape.element), 1))
    buffers = _op("/", _op("-", word(f_node, 8), word(s_node, 8)), ir.Const(8))
    into_finish = _op("/", _op("-", word(f_cur, 8), word(f_first, 8)), size)
    into_start = _op("/", _op("-", word(s_cur, 8), word(s_first, 8)), size)
    return _op("-", _op("+", _op("*", buffers, ir.Const(per_buffer)), into_finish), into_start)


def cpp_element(ctype, index: ir.Scalar, word: Word,
                address: ir.Scalar) -> ir.MemoryPlace | None:
    """Element `index` of a std::string, string_view, vector, span or
    array (None for other types). An index at or past the length reads
    nothing: its address is 0, a null dereference, never another
    element's bytes."""
    shape = cpp.layout(ctype)
    if shape.kind is Kind.WRAPPER:
        inner = strip(shape.inner.type)
        if not isinstance(inner, ArrayType) or inner.count is None:
            return None
        start = _op("+", address, ir.Const(shape.inner.offset))
        element, length = inner.element, ir.Const(inner.count)
    elif shape.kind in (Kind.TEXT, Kind.SEQUENCE):
        start, element = word(shape.pointer_offset, 8), shape.element
        length = _sequence_length(shape, word)
    else:
        return None
    size = ir.Const(type_size(element) or 1)
    inside = _op("<", index, length)
    at = _op("+", start, ir.BinaryOp("*", index, size, True))
    return ir.MemoryPlace(ir.NonNull(_op("*", at, inside)), element)


def cpp_pointee(ctype, word: Word) -> tuple[ir.Scalar, object] | None:
    """(the pointer, the pointee type) of a std::unique_ptr or shared_ptr
    (None for other types): what `*p` and `p->member` reach, as gdb's
    libstdc++ xmethods do."""
    shape = cpp.layout(ctype)
    if shape.kind is not Kind.HANDLE or shape.element is None:
        return None
    return word(shape.pointer_offset, 8), shape.element
