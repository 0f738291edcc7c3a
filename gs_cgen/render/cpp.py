"""C++ values from their bytes, as gdb's libstdc++ printers show them, in
gs-cgen's compact form (CONTRACT.md "Rust and C++ programs"): strings as
text, sequences as `[...]`, maps `{k: v}` in the container's order (key
order for std::map, node order for unordered ones), std::optional,
std::variant, smart pointers with what they point at, classes with their
bases first. The layouts are gs_cgen/printers/cpp.py's; the bytes behind
pointers a DeepCapture's follows (plan/follows.py), found by the same walk
of the type tree as render/rust.py finds them."""
from __future__ import annotations

from gs_cgen.dwarf.types import ArrayType, BoolType, StructType, strip, type_size
from gs_cgen.plan.model import DeepCapture
from gs_cgen.printers import cpp
from gs_cgen.printers.layout import Kind, Shown
from gs_cgen.render import values
from gs_cgen.render.status import ValueStatus
from gs_cgen.render.rust import _Decoder
from gs_cgen.render.values import (ArrayValue, BoolValue, ErrorValue, MapValue, OwnerValue,
                                   StringValue, StructValue, TupleValue, UnitValue, Value,
                                   VariantValue, base_field_name)

_MAX_DEPTH = 12
_BOOL = BoolType("bool", 1)


def decode_cpp(ctype, data: bytes, address: int | None = None,
               capture: DeepCapture | None = None) -> Value:
    """A C++ value of `ctype` whose bytes are `data` (the root object of
    `capture`, when its pointers were followed)."""
    return _CppDecoder(capture, data).value(ctype, data, 0, None, 0, 0)


def decode_std(ctype, data: bytes, address: int | None = None) -> Value | None:
    """A std value read without its pointers followed (values.py: inside
    a plain capture): None when `ctype` is no std type gs-cgen shows."""
    if cpp.layout(ctype).kind is Kind.PLAIN:
        return None
    return decode_cpp(ctype, data, address)


def _word(data: bytes, at: int, size: int = 8) -> int:
    return int.from_bytes(data[at:at + size], "little")


class _CppDecoder(_Decoder):
    def value(self, ctype, element: bytes, offset: int, source, element_index: int,
              depth: int) -> Value:
        """The value of `ctype` at `offset` of `element`, the bytes of
        element `element_index` of `source` (None: the root object)."""
        if depth > _MAX_DEPTH:
            return values.UnknownValue(ctype, values.UnknownReason.DEPTH_LIMIT, type_size(ctype))
        base = strip(ctype)
        size = type_size(ctype)
        if isinstance(base, ArrayType) and base.count and isinstance(strip(base.element),
                                                                     StructType):
            step = type_size(base.element)
            return ArrayValue(ctype, tuple(
                self.value(base.element, element, offset + i * step, source, element_index,
                           depth + 1) for i in range(base.count)))
        if not isinstance(base, StructType) or base.language != "c++":
            return values.decode_object(ctype, element[offset:offset + size],
                                        len(element) < offset + size)
        if len(element) < offset + size:
            return values.decode_object(ctype, element[offset:offset + size], True)
        shape = cpp.layout(base)
        at = (ctype, shape, element, offset, source, element_index, depth)
        match shape.kind:
            case Kind.TEXT | Kind.SEQUENCE:
                return self._contiguous(*at)
            case Kind.BITS:
                return self._bits(*at)
            case Kind.DEQUE:
                return self._deque(*at)
            case Kind.CHAIN | Kind.RBTREE:
                return self._nodes(*at)
            case Kind.HANDLE:
                return self._handle(*at)
            case Kind.OPTIONAL:
                if not element[offset + shape.pointer_offset]:
                    return UnitValue(ctype, "std::nullopt")
                (member,) = shape.members
                return TupleValue(ctype, shape.label, (self.value(
                    member.type, element, offset + member.offset, source, element_index,
                    depth + 1),))
            case Kind.VARIANT:
                return self._variant(*at)
            case Kind.ELEMENTS:
                return TupleValue(ctype, None, tuple(
                    self.value(m.type, element, offset + m.offset, source, element_index,
                               depth + 1) for m in shape.members))
            case Kind.WRAPPER:                 # std::array: its elements, cut as a collection
                inner = self.value(shape.inner.type, element, offset + shape.inner.offset,
                                   source, element_index, depth + 1)
                limit = self.max_shown(None)
                if isinstance(inner, ArrayValue) and len(inner.elements) > limit:
                    return ArrayValue(ctype, inner.elements[:limit],
                                      more=len(inner.elements) - limit)
                return inner
            case Kind.UNIT:
                return ArrayValue(ctype, ())
        return self._class(ctype, base, element, offset, source, element_index, depth)

    def _class(self, ctype, base: StructType, element, offset, source, index, depth) -> Value:
        """A class: its bases first (`<Base>: Base { ... }`), as gdb; one
        with a virtual base as values.py shows it (no std value inside
        it is followed: its bases' place is in the vtable)."""
        if any(b.offset is None for b in base.bases):
            return values.decode_object(ctype, element[offset:offset + base.size])
        fields = [(base_field_name(b), self.value(b.type, element, offset + b.offset, source,
                                                  index, depth + 1)) for b in base.bases]
        for member in base.members:
            if member.bit_size is not None:
                value = values.decode_object(ctype, element[offset:offset + base.size])
                return value                   # bit-fields: as a C struct
            value = self.value(member.type, element, offset + member.offset, source, index,
                               depth + 1)
            if member.name is not None:
                fields.append((member.name, value))
            elif isinstance(value, StructValue):       # an anonymous union / struct
                fields.extend(value.fields)
        return StructValue(ctype, tuple(fields), name=None)

    # ------------------------------------------------------------ follows
    def _follow_index(self, source, pointer_offset: int, add: int = 0) -> int | None:
        if self.capture is None:
            return None
        return self.index.get((source, pointer_offset, add, False, self.tag))

    def _contiguous(self, ctype, shape, element, offset, source, index, depth) -> Value:
        """string, string_view, vector, span: elements behind a pointer."""
        size = max(type_size(shape.element), 1)
        if shape.end_pointer:
            start = _word(element, offset + shape.pointer_offset)
            end = _word(element, offset + shape.length_offset)
            count = max(end - start, 0) // size
        elif shape.length_offset is None:
            count = shape.offsets[0]
        else:
            count = _word(element, offset + shape.length_offset)
        text = shape.kind is Kind.TEXT
        if count == 0:
            return StringValue(ctype, b"") if text else ArrayValue(ctype, ())
        found = self._followed(source, offset + shape.pointer_offset, index,
                               add=shape.value_offset)
        if found is None:
            return self._raw(ctype, element, offset)
        follow_index, follow, status, _, address, body = found
        if status is not ValueStatus.OK:
            return ErrorValue(status, address, None, ctype)
        limit = self.max_shown(follow)
        if text:
            shown = body[:min(count, limit)]
            return StringValue(ctype, shown, count > len(shown), address)
        per_rep = follow.cap // size
        items = tuple(self.value(shape.element, body[i * size:(i + 1) * size], 0, follow_index,
                                 index * per_rep + i, depth + 1)
                      for i in range(min(count, len(body) // size, limit)))
        return ArrayValue(ctype, items, more=count - len(items))

    def _bits(self, ctype, shape, element, offset, source, index, depth) -> Value:
        """vector<bool>: (finish word - start word) * 64 + the bit offsets."""
        start_p, start_bit, finish_p, finish_bit = (
            _word(element, offset + at, 8 if i % 2 == 0 else 4)
            for i, at in enumerate(shape.offsets))
        count = max((finish_p - start_p) * 8 + finish_bit - start_bit, 0)
        if count == 0:
            return ArrayValue(ctype, ())
        found = self._followed(source, offset + shape.offsets[0], index)
        if found is None:
            return self._raw(ctype, element, offset)
        _, follow, status, _, address, body = found
        if status is not ValueStatus.OK:
            return ErrorValue(status, address, None, ctype)
        shown = min(count, 8 * len(body) - start_bit, self.max_shown(follow))
        bits = tuple(BoolValue(_BOOL, bool(body[(start_bit + i) // 8] >> ((start_bit + i) % 8) & 1))
                     for i in range(shown))
        return ArrayValue(ctype, bits, more=count - shown)

    def _deque(self, ctype, shape, element, offset, source, index, depth) -> Value:
        """std::deque: elements from _M_start._M_cur in its buffer to
        _M_finish._M_cur, buffer after buffer through the map."""
        s_cur, s_first, s_node, f_cur, f_first, f_node = (
            _word(element, offset + at) for at in shape.offsets[:6])
        per_buffer, size = shape.offsets[6], max(type_size(shape.element), 1)
        first = (s_cur - s_first) // size
        count = max((f_node - s_node) // 8 * per_buffer + (f_cur - f_first) // size - first, 0)
        if count == 0:
            return ArrayValue(ctype, ())
        pointers = self._followed(source, offset + shape.offsets[2], index)
        if pointers is None:
            return self._raw(ctype, element, offset)
        map_index, map_follow, status, _, address, body = pointers
        if status is not ValueStatus.OK:
            return ErrorValue(status, address, None, ctype)
        buffers = self._follow_index(map_index, 0)
        map_elements = map_follow.cap // 8
        items = []
        for j in range(min(count, self.max_shown(map_follow))):
            buffer, within = divmod(first + j, per_buffer)
            if buffer >= len(body) // 8 or buffers is None:
                break
            rep = index * map_elements + buffer
            state, _, where, data = self.sub_slot(buffers, rep)
            if state is not ValueStatus.OK:
                if not items:
                    return ErrorValue(state, where, None, ctype)
                break
            per_rep = self.capture.follows[buffers].cap // size
            items.append(self.value(shape.element, data[within * size:(within + 1) * size], 0,
                                    buffers, rep * per_rep + within, depth + 1))
        return ArrayValue(ctype, tuple(items), more=count - len(items))

    def _nodes(self, ctype, shape, element, offset, source, index, depth) -> Value:
        """list, forward_list, unordered_*: nodes in chain order; map, set:
        the tree's nodes read (in pre-order) put in key order."""
        count = None if shape.count_offset is None else _word(element, offset + shape.count_offset)
        empty = MapValue(ctype, (), shape.shown is Shown.SET) if shape.shown is not \
            Shown.SEQUENCE else ArrayValue(ctype, ())
        if count == 0:
            return empty
        follow_index = self._follow_index(source, offset + shape.pointer_offset)
        if follow_index is None:
            return self._raw(ctype, element, offset)
        follow = self.capture.follows[follow_index]
        nodes = []                     # (rep, address, bytes)
        failed = None
        for k in range(follow.links):
            rep = index * follow.links + k
            status, _, address, body = self.sub_slot(follow_index, rep)
            if status is not ValueStatus.OK:
                if status is not ValueStatus.UNAVAILABLE:
                    failed = ErrorValue(status, address, None, ctype)
                break
            nodes.append((rep, address, body))
        if failed is not None and not nodes:
            return failed
        limit = self.max_shown(follow)
        if shape.kind is Kind.RBTREE:
            ordered = _in_order(nodes, _word(element, offset + shape.pointer_offset), shape, limit)
        else:
            ordered = nodes[:limit]
        items = [self._node_value(shape, follow_index, rep, body, depth) for rep, _, body in ordered]
        if count is None:                 # forward_list: cut when the walk did not end
            last = ordered[-1][2] if ordered else None
            cut = failed is not None or (
                last is not None and len(ordered) == follow.links and
                _word(last, shape.next_offset) != 0)
            return ArrayValue(ctype, tuple(items), truncated=cut)
        more = max(count - len(items), 0)
        if shape.shown is Shown.SEQUENCE:
            return ArrayValue(ctype, tuple(items), more=more)
        return MapValue(ctype, tuple(items), shape.shown is Shown.SET, more=more)

    def _node_value(self, shape, follow_index: int, rep: int, body: bytes, depth: int):
        if shape.shown is not Shown.MAP:
            return self.value(shape.element, body, shape.value_offset, follow_index, rep,
                              depth + 1)
        pair = strip(shape.element)
        first, second = pair.member("first"), pair.member("second")
        at = shape.value_offset
        return (self.value(first.type, body, at + first.offset, follow_index, rep, depth + 1),
                self.value(second.type, body, at + second.offset, follow_index, rep, depth + 1))

    def _handle(self, ctype, shape, element, offset, source, index, depth) -> Value:
        address = _word(element, offset + shape.pointer_offset)
        if address == 0:
            return UnitValue(ctype, "nullptr")
        use_count = None
        if shape.count_offset is not None:
            counts = self._followed(source, offset + shape.count_offset, index,
                                    add=shape.value_offset)
            if counts is not None and counts[2] is ValueStatus.OK:
                use_count = _word(counts[5], 0, 4)
            elif counts is not None:
                return ErrorValue(counts[2], counts[4], None, ctype)
        target = None
        if use_count != 0:                    # an expired weak_ptr's object is gone
            found = self._followed(source, offset + shape.pointer_offset, index)
            if found is not None:
                follow_index, _, status, _, where, body = found
                target = self.value(shape.element, body, 0, follow_index, index, depth + 1) \
                    if status is ValueStatus.OK else ErrorValue(status, where, None, shape.element)
        return OwnerValue(ctype, shape.label, address, target, use_count)

    def _variant(self, ctype, shape, element, offset, source, index, depth) -> Value:
        width = type_size(shape.element)
        chosen = _word(element, offset + shape.pointer_offset, width)
        if chosen >= len(shape.members):      # variant_npos in the index's width
            return UnitValue(ctype, "std::variant(valueless)")
        member = shape.members[chosen]
        outer = self.tag
        self.tag = outer * 32 + chosen + 1
        try:
            payload = self.value(member.type, element, offset + member.offset, source, index,
                                 depth + 1)
        finally:
            self.tag = outer
        return VariantValue(ctype, str(chosen), payload, label=shape.label)

    def _raw(self, ctype, element, offset) -> Value:
        """A std value whose data was not read with it (no follow planned
        for it): its DWARF layout."""
        return values.decode_raw(ctype, element[offset:offset + type_size(ctype)])


def _in_order(nodes, root: int, shape, limit: int):
    """The tree's nodes in key order (left subtree, node, right subtree)
    as far as the nodes read reach: a child not read ends the walk."""
    by_address = {address: (rep, address, body) for rep, address, body in nodes}
    ordered, stack, current = [], [], root
    while len(ordered) < limit:
        while current:
            node = by_address.get(current)
            if node is None:
                return ordered                 # not read: the rest is `more`
            stack.append(node)
            current = _word(node[2], shape.next_offset)
        if not stack:
            break
        node = stack.pop()
        ordered.append(node)
        current = _word(node[2], shape.right_offset)
    return ordered


values.LANGUAGE_DECODERS["c++"] = decode_std
