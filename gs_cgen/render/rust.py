"""Rust values from their bytes, as `{:?}` prints them (CONTRACT.md "Rust
and C++ programs"): structs by their own name, tuples and tuple structs
in parentheses, enums by their variant, std strings, sequences and owned
pointers by what they hold. The layouts are gs_cgen/printers/rust.py's;
the bytes behind pointers are a DeepCapture's follows (plan/follows.py),
found by the same walk of the type tree."""
from __future__ import annotations

import struct

from gs_cgen.dwarf.types import ArrayType, StructType, Variant, strip, type_size
from gs_cgen.plan.follows import follow_key
from gs_cgen.plan.model import DeepCapture
from gs_cgen.printers import rust
from gs_cgen.render import values
from gs_cgen.render.decode import ValueStatus, status_of
from gs_cgen.render.values import (ArrayValue, ErrorValue, MapValue, StringValue, StructValue,
                                   TupleValue, UnitValue, Value, VariantValue)

_MAX_DEPTH = 12


def decode_rust(ctype, data: bytes, address: int | None = None,
                capture: DeepCapture | None = None) -> Value:
    """A Rust value of `ctype` whose bytes are `data` (the root object of
    `capture`, when its pointers were followed)."""
    return _Decoder(capture, data).value(ctype, data, 0, None, 0, 0)


class _Decoder:
    def __init__(self, capture: DeepCapture | None, data: bytes) -> None:
        self.capture, self.data = capture, data
        follows = capture.follows if capture is not None else ()
        self.index = {follow_key(f): i for i, f in enumerate(follows)}

    def value(self, ctype, element: bytes, offset: int, source, element_index: int,
              depth: int) -> Value:
        """The value of `ctype` at `offset` of `element`, the bytes of
        element `element_index` of `source` (None: the root object)."""
        if depth > _MAX_DEPTH:
            return values.UnknownValue(ctype, values.UnknownReason.DEPTH_LIMIT, type_size(ctype))
        boxed = rust.pointer_layout(ctype)
        if boxed is not None and self.capture is not None:
            return self._pointee(ctype, boxed, element, offset, source, element_index, depth)
        base = strip(ctype)
        size = type_size(ctype)
        if isinstance(base, ArrayType) and base.count and not _bytes_only(base):
            step = type_size(base.element)
            return ArrayValue(ctype, tuple(
                self.value(base.element, element, offset + i * step, source, element_index,
                           depth + 1) for i in range(base.count)))
        if not isinstance(base, StructType) or base.language != "rust":
            return values.decode_object(ctype, element[offset:offset + size],
                                        len(element) < offset + size)
        shape = rust.layout(base)
        match shape.kind:
            case rust.Kind.TEXT | rust.Kind.SEQUENCE | rust.Kind.RING:
                return self._sequence(ctype, shape, element, offset, source, element_index, depth)
            case rust.Kind.POINTEE:
                return self._pointee(ctype, shape, element, offset, source, element_index, depth)
            case rust.Kind.MAP | rust.Kind.SET:
                return self._table(ctype, shape, element, offset, source, element_index, depth)
            case rust.Kind.TREE:
                return self._tree(ctype, shape, element, offset, source, element_index, depth)
            case rust.Kind.WRAPPER:
                inner = self.value(shape.inner.type, element, offset + shape.inner.offset, source,
                                   element_index, depth + 1)
                return StructValue(ctype, (("value", inner),), name=shape.label) \
                    if shape.label else inner
            case rust.Kind.ENUM:
                return self._enum(ctype, base, element, offset, source, element_index, depth)
        return self._struct(ctype, base, shape, element, offset, source, element_index, depth)

    def _struct(self, ctype, base: StructType, shape, element, offset, source, index, depth,
                name: str | None = None) -> Value:
        name = name or rust.display_name(base)
        fields = tuple((m.name or "?", self.value(m.type, element, offset + m.offset, source,
                                                  index, depth + 1)) for m in base.members)
        kind = shape.kind if shape is not None else rust.layout(base).kind
        if kind is rust.Kind.UNIT or not fields:
            return UnitValue(ctype, name)
        if kind in (rust.Kind.TUPLE, rust.Kind.TUPLE_STRUCT):
            return TupleValue(ctype, None if kind is rust.Kind.TUPLE else name,
                              tuple(v for _, v in fields))
        return StructValue(ctype, fields, name=name)

    def _enum(self, ctype, base: StructType, element, offset, source, index, depth) -> Value:
        chosen = values.active_variant(base, element[offset:offset + type_size(base)])
        if not isinstance(chosen, Variant):
            return chosen
        member = chosen.member
        payload_type = strip(member.type)
        if not isinstance(payload_type, StructType):
            return self.value(member.type, element, offset + member.offset, source, index, depth)
        payload = self._struct(member.type, payload_type, None, element, offset + member.offset,
                               source, index, depth + 1, name=member.name)
        return VariantValue(ctype, member.name or "?", payload)

    def _followed(self, source, pointer_offset: int, element_index: int,
                  backwards: bool = False, add: int = 0):
        """(follow index, follow, status, requested length, address, bytes
        read) of the follow whose pointer is at `pointer_offset` of that
        element; None when none was planned."""
        found = self.index.get((source, pointer_offset, add, backwards))
        if found is None or self.capture is None:
            return None
        follow = self.capture.follows[found]
        at = self.capture.follows_offset + follow.offset + element_index * follow.stride
        status = status_of(self.data[at])
        length, address = struct.unpack_from("<IxxxxQ", self.data, at + 4)
        body = self.data[at + 16:at + 16 + min(length, follow.cap)]
        return found, follow, status, length, address, body

    def _sequence(self, ctype, shape, element, offset, source, index, depth) -> Value:
        length_at = offset + shape.length_offset
        count = int.from_bytes(element[length_at:length_at + 8], "little")
        if shape.kind is not rust.Kind.TEXT and type_size(shape.element) == 0:
            return self._zero_sized(ctype, shape, element, offset, count)
        found = self._followed(source, offset + shape.pointer_offset, index,
                               add=shape.value_offset)
        if found is None:
            return self._raw(ctype, element, offset)
        follow_index, follow, status, _, address, body = found
        if count == 0:
            return StringValue(ctype, b"", rust=True) if shape.kind is rust.Kind.TEXT else \
                ArrayValue(ctype, ())
        if status is not ValueStatus.OK:
            return ErrorValue(status, address, None, ctype)
        limit = self.max_shown(follow)
        if shape.kind is rust.Kind.TEXT:
            shown = body[:min(count, limit)]
            return StringValue(ctype, shown, count > len(shown), address, rust=True)
        size = max(type_size(shape.element), 1)
        per_rep = follow.cap // size
        slots = list(range(min(count, len(body) // size, limit)))
        total = count
        if shape.kind is rust.Kind.RING:     # `count` is the capacity: len slots from head
            head, total = (int.from_bytes(element[offset + o:offset + o + 8], "little")
                           for o in (shape.head_offset, shape.count_offset))
            slots = []
            for i in range(min(total, count, limit)):
                slot = (head + i) % count if count else 0
                if slot >= len(body) // size:
                    break                    # past what was read: the rest is cut
                slots.append(slot)
        items = tuple(self.value(shape.element, body[i * size:(i + 1) * size], 0, follow_index,
                                 index * per_rep + i, depth + 1) for i in slots)
        return ArrayValue(ctype, items, more=total - len(items))

    def _zero_sized(self, ctype, shape, element, offset, count: int) -> Value:
        """A Vec<()> or VecDeque<()>: as many elements as its length, none
        of them in memory."""
        if shape.kind is rust.Kind.RING:
            at = offset + shape.count_offset
            count = int.from_bytes(element[at:at + 8], "little")
        unit = values.decode_object(shape.element, b"")
        shown = min(count, self.max_shown(None))
        return ArrayValue(ctype, (unit,) * shown, more=count - shown)

    def _table(self, ctype, shape, element, offset, source, index, depth) -> Value:
        """The full buckets of a hashbrown table in bucket order, as Rust's
        iterator (and so `{:?}`) visits them."""
        at = offset + shape.count_offset
        items = int.from_bytes(element[at:at + 8], "little")
        control = self._followed(source, offset + shape.pointer_offset, index)
        buckets = self._followed(source, offset + shape.pointer_offset, index, backwards=True)
        if control is None or buckets is None:
            return self._raw(ctype, element, offset)
        if items == 0:
            return MapValue(ctype, (), shape.kind is rust.Kind.SET)
        for found in (control, buckets):
            if found[2] is not ValueStatus.OK:
                return ErrorValue(found[2], found[4], None, ctype)
        follow_index, follow, _, _, _, data = buckets
        size = max(type_size(shape.element), 1)
        read = len(data) // size
        entries = []
        for i, byte in enumerate(control[5][:read]):
            if byte & 0x80 or len(entries) == items:
                continue
            position = read - 1 - i
            pair = self.value(shape.element, data[position * size:(position + 1) * size], 0,
                              follow_index, index * (follow.cap // size) + position, depth + 1)
            elements = getattr(pair, "elements", None)
            if not elements or len(elements) != 2:
                return self._raw(ctype, element, offset)
            entries.append(elements[0] if shape.kind is rust.Kind.SET else tuple(elements))
            if len(entries) == self.max_shown(follow):
                break
        return MapValue(ctype, tuple(entries), shape.kind is rust.Kind.SET,
                        more=items - len(entries))

    def _tree(self, ctype, shape, element, offset, source, index, depth) -> Value:
        """A BTreeMap / BTreeSet in key order: each node's edges and keys
        interleaved, as Rust's iterator walks them, over the levels read."""
        tree = shape.tree
        word = lambda at: int.from_bytes(element[at:at + 8], "little")  # noqa: E731
        length, height = word(offset + shape.count_offset), word(offset + tree.height_offset)
        entries: list = []
        limit = self.max_shown(None)
        if length:
            failed = self._node(tree, source, offset + tree.node_offset, index, height, entries,
                                min(limit, length), depth)
            if failed is not None:
                return failed
        return MapValue(ctype, tuple(entries), tree.value is None, more=length - len(entries))

    def _node(self, tree, source, pointer_offset: int, index: int, height: int, entries: list,
              limit: int, depth: int) -> Value | None:
        """Append the node's entries (and its children's, below it) until
        `limit`; False-y when done or cut, an ErrorValue when a read failed."""
        leaf = self._followed(source, pointer_offset, index)
        if leaf is None:
            return None                          # a level not read: the rest is `more`
        leaf_index, _, status, _, address, body = leaf
        if status is not ValueStatus.OK:
            return ErrorValue(status, address, None, tree.leaf)
        count = min(int.from_bytes(body[tree.len_offset:tree.len_offset + 2], "little"),
                    tree.edges - 1)
        edges = self._followed(source, pointer_offset, index, add=tree.edges_offset) \
            if height else None
        key_size = type_size(tree.key)
        value_size = type_size(tree.value) if tree.value is not None else 0
        for i in range(count + 1):
            if height and edges is not None and edges[2] is ValueStatus.OK:
                failed = self._node(tree, edges[0], 0, index * tree.edges + i, height - 1,
                                    entries, limit, depth + 1)
                if failed is not None:
                    return failed
            elif height:
                return None
            if i == count or len(entries) >= limit:
                return None
            key = self.value(tree.key, body, tree.keys_offset + i * key_size, leaf_index, index,
                             depth + 1)
            if tree.value is None:
                entries.append(key)
            else:
                entries.append((key, self.value(tree.value, body, tree.vals_offset + i * value_size,
                                                leaf_index, index, depth + 1)))
        return None

    def max_shown(self, follow) -> int:
        return self.capture.max_elements if self.capture is not None else 1 << 30

    def _pointee(self, ctype, shape, element, offset, source, index, depth) -> Value:
        if type_size(shape.element) == 0:      # a Ref<()>: nothing behind the pointer to read
            return self.value(shape.element, b"", 0, source, index, depth + 1)
        found = self._followed(source, offset + shape.pointer_offset, index)
        if found is None:
            return self._raw(ctype, element, offset)
        follow_index, _, status, _, address, body = found
        if status is not ValueStatus.OK:
            return ErrorValue(status, address, None, ctype)
        target = shape.element
        if shape.value_offset:                 # RcInner / ArcInner: the value after the counts
            base = strip(target)
            member = next((m for m in base.members if m.offset == shape.value_offset), None)
            if member is not None:
                return self.value(member.type, body, member.offset, follow_index, index,
                                  depth + 1)
        return self.value(target, body, 0, follow_index, index, depth + 1)

    def _raw(self, ctype, element, offset) -> Value:
        """A std value whose data was not read with it (no follow planned
        for it: beyond the element budget): its DWARF layout."""
        size = type_size(ctype)
        return values.decode_raw(ctype, element[offset:offset + size])


def _bytes_only(base: ArrayType) -> bool:
    element = strip(base.element)
    return not isinstance(element, StructType)
