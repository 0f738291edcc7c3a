"""C++ standard library layouts (libstdc++), recognized from g++'s DWARF.

A std class is recognized by its name (`std::vector<int, ...>`, the
`__cxx11` inline namespace dropped) and then checked member by member
through its bases, as libstdc++ builds them (`_Vector_base::_M_impl`
holding `_M_start`, `_Rb_tree_impl` holding `_M_header`...). Node types
come from the DWARF too: each container's node allocator names them
(`std::__new_allocator<std::_Rb_tree_node<V>>`'s `_Tp`). A class whose
members do not validate is PLAIN with a note naming it, never guessed
at; libc++ (`std::__1::`) is such a class: its members are its own.

Covered: libstdc++ of gcc 9-14 (the C++11 string and list ABI)."""
from __future__ import annotations

import re

from gs_cgen.dwarf.types import (ArrayType, CType, IntType, PointerType, StructMember, StructType,
                                 strip, type_size)
from gs_cgen.printers.layout import Kind, Layout, Shown

_PLAIN = Layout(Kind.PLAIN)
# libstdc++'s C++11 ABI and versioned namespaces; libc++'s ABI namespace
# (std::__1::vector) too, so that its classes are noted, not taken for users'.
_INLINE_NAMESPACES = re.compile(r"::(?:__cxx11|__\d+)::")
_MAX_DEPTH = 10


def layout(ctype: CType) -> Layout:
    """The layout of a C++ value of type `ctype`."""
    base = strip(ctype)
    if not isinstance(base, StructType) or base.language != "c++" or base.is_declaration:
        return _PLAIN
    recognize = _STD.get(family(base.name or ""))
    if recognize is None:
        return _PLAIN
    found = recognize(base)
    if found is not None:
        return found
    return Layout(Kind.PLAIN, note=f"the layout of {base.name} is not one gs-cgen knows "
                                   "(libstdc++'s)")


def family(name: str) -> str:
    """`std::vector` of `std::vector<int, std::allocator<int> >`; a nested
    class (`std::vector<int>::iterator`) is no family."""
    name = _INLINE_NAMESPACES.sub("::", name)
    head = name.split("<", 1)[0]
    if not head.startswith("std::") or head.count("::") != 1:
        return ""
    rest = name[len(head):]
    if rest and not rest.endswith(">"):
        return ""                 # std::vector<int>::_Vector_impl
    return head


def find(base: StructType, name: str, offset: int = 0, depth: int = 0):
    """(offset, member) of the member `name` of `base` or of one of its
    non-virtual bases, depth first as C++ name lookup finds it."""
    member = base.member(name)
    if member is not None:
        return offset + member.offset, member
    if depth > _MAX_DEPTH:
        return None
    for anonymous in base.members:      # an anonymous union's members are the class's
        inner = strip(anonymous.type)
        if anonymous.name is None and isinstance(inner, StructType):
            found = find(inner, name, offset + anonymous.offset, depth + 1)
            if found is not None:
                return found
    for inherited in base.bases:
        inner = strip(inherited.type)
        if inherited.offset is None or not isinstance(inner, StructType):
            continue
        found = find(inner, name, offset + inherited.offset, depth + 1)
        if found is not None:
            return found
    return None


def _path(base: StructType, *names: str):
    """(offset, member) at the end of a chain of members, each found
    through bases."""
    offset, member, current = 0, None, base
    for name in names:
        if not isinstance(current, StructType):
            return None
        found = find(current, name)
        if found is None:
            return None
        at, member = found
        offset += at
        current = strip(member.type)
    return offset, member


def _pointer(base: StructType, *names: str) -> tuple[int, CType] | None:
    """(offset, target type) of a pointer member at the end of `names`."""
    found = _path(base, *names)
    if found is None or not isinstance(strip(found[1].type), PointerType):
        return None
    return found[0], strip(found[1].type).target


def _word(base: StructType, *names: str) -> int | None:
    """The offset of an 8-byte integer member at the end of `names`."""
    found = _path(base, *names)
    if found is None:
        return None
    inner = strip(found[1].type)
    return found[0] if isinstance(inner, IntType) and inner.size == 8 else None


def _string(base: StructType) -> Layout | None:
    """basic_string<char>: `_M_dataplus._M_p` points at the text (the
    local buffer inside the object, or the heap), `_M_string_length`."""
    pointer = _pointer(base, "_M_dataplus", "_M_p")
    length = _word(base, "_M_string_length")
    if pointer is None or length is None or type_size(pointer[1]) != 1:
        return None
    return Layout(Kind.TEXT, pointer[0], length, pointer[1])


def _string_view(base: StructType) -> Layout | None:
    pointer, length = _pointer(base, "_M_str"), _word(base, "_M_len")
    if pointer is None or length is None or type_size(pointer[1]) != 1:
        return None
    return Layout(Kind.TEXT, pointer[0], length, pointer[1])


def _vector(base: StructType) -> Layout | None:
    """vector<T>: `_M_impl._M_start` .. `_M_finish`; vector<bool>: bits."""
    element = base.parameter("_Tp")
    if element is not None and _is_bool(element):
        return _bit_vector(base)
    start, finish = _pointer(base, "_M_impl", "_M_start"), _pointer(base, "_M_impl", "_M_finish")
    if start is None or finish is None or element is None or type_size(element) <= 0:
        return None
    return Layout(Kind.SEQUENCE, start[0], finish[0], element, end_pointer=True)


def _bit_vector(base: StructType) -> Layout | None:
    """_Bvector_impl: `_M_start` and `_M_finish` are _Bit_iterators
    { _M_p: word pointer, _M_offset: bit in the word }."""
    fields = []
    for end in ("_M_start", "_M_finish"):
        pointer = _pointer(base, "_M_impl", end, "_M_p")
        bit = _path(base, "_M_impl", end, "_M_offset")
        if pointer is None or bit is None or type_size(pointer[1]) != 8:
            return None
        fields += [pointer[0], bit[0]]
    return Layout(Kind.BITS, fields[0], fields[2], offsets=tuple(fields))


def _is_bool(ctype: CType) -> bool:
    return getattr(strip(ctype), "name", None) == "bool" and type_size(ctype) == 1


def _array(base: StructType) -> Layout | None:
    elems = base.member("_M_elems")
    if elems is None or not isinstance(strip(elems.type), ArrayType):
        return Layout(Kind.UNIT, label="[]") if not base.members else None
    return Layout(Kind.WRAPPER, inner=elems)


def _span(base: StructType) -> Layout | None:
    pointer = _pointer(base, "_M_ptr")
    if pointer is None:
        return None
    extent = _word(base, "_M_extent", "_M_extent_value")
    if extent is None:                         # a static extent: the second argument
        match = re.search(r",\s*(\d+)>$", base.name or "")
        if match is None or int(match[1]) >= 1 << 63:
            return None
        return Layout(Kind.SEQUENCE, pointer[0], None, pointer[1], offsets=(int(match[1]),))
    return Layout(Kind.SEQUENCE, pointer[0], extent, pointer[1])


def _deque(base: StructType) -> Layout | None:
    """_Deque_impl_data: `_M_start` and `_M_finish` iterators { _M_cur,
    _M_first, _M_last, _M_node (into the map of buffer pointers) }; each
    buffer holds 512 / sizeof(T) elements (at least 1)."""
    element = base.parameter("_Tp")
    size = type_size(element) if element is not None else 0
    fields = []
    for end in ("_M_start", "_M_finish"):
        for name in ("_M_cur", "_M_first", "_M_node"):
            pointer = _pointer(base, "_M_impl", end, name)
            if pointer is None:
                return None
            fields.append(pointer[0])
    if size <= 0:
        return None
    per_buffer = 512 // size if size < 512 else 1
    return Layout(Kind.DEQUE, fields[2], fields[5], element, offsets=(*fields, per_buffer))


def node_type(base: StructType, family_name: str) -> StructType | None:
    """The node type a container allocates: the `_Tp` of the
    `std::__new_allocator<NODE>` among its bases and members' bases."""
    stack, seen = [base], 0
    while stack and seen < 200:
        current = stack.pop()
        seen += 1
        if (current.name or "").startswith(("std::__new_allocator<", "__gnu_cxx::new_allocator<")):
            node = strip(current.parameter("_Tp")) if current.parameter("_Tp") else None
            if isinstance(node, StructType) and family_name in (node.name or "") and \
                    not node.is_declaration:
                return node
            continue
        for inner in [b.type for b in current.bases] + [m.type for m in current.members]:
            inner = strip(inner)
            if isinstance(inner, StructType):
                stack.append(inner)
    return None


def _storage(node: StructType) -> int | None:
    found = find(node, "_M_storage")
    return found[0] if found is not None else None


def _list(base: StructType) -> Layout | None:
    """list<T>: the header `_M_impl._M_node` { _M_next, _M_prev, _M_size }
    links _List_node<T> { _List_node_base, _M_storage }; the walk ends
    back at the header."""
    header = _path(base, "_M_impl", "_M_node")
    first = _pointer(base, "_M_impl", "_M_node", "_M_next")
    size = _word(base, "_M_impl", "_M_node", "_M_size")
    node = node_type(base, "_List_node<")
    element = base.parameter("_Tp")
    if header is None or first is None or size is None or node is None or element is None:
        return None
    value, nxt = _storage(node), find(node, "_M_next")
    if value is None or nxt is None:
        return None
    return Layout(Kind.CHAIN, first[0], element=element, node=node, next_offset=nxt[0],
                  value_offset=value, end_offset=header[0], count_offset=size)


def _forward_list(base: StructType) -> Layout | None:
    first = _pointer(base, "_M_impl", "_M_head", "_M_next")
    node = node_type(base, "_Fwd_list_node<")
    element = base.parameter("_Tp")
    if first is None or node is None or element is None:
        return None
    value, nxt = _storage(node), find(node, "_M_next")
    if value is None or nxt is None:
        return None
    return Layout(Kind.CHAIN, first[0], element=element, node=node, next_offset=nxt[0],
                  value_offset=value, count_offset=None)


def _tree(shown: Shown):
    """map / set: `_M_t._M_impl` holds `_M_header` (an _Rb_tree_node_base
    whose `_M_parent` is the root) and `_M_node_count`; _Rb_tree_node<V>
    { _Rb_tree_node_base, _M_storage } with `_M_left` / `_M_right`."""
    def recognize(base: StructType) -> Layout | None:
        root = _pointer(base, "_M_t", "_M_impl", "_M_header", "_M_parent")
        count = _word(base, "_M_t", "_M_impl", "_M_node_count")
        node = node_type(base, "_Rb_tree_node<")
        if root is None or count is None or node is None:
            return None
        value, left, right = _storage(node), find(node, "_M_left"), find(node, "_M_right")
        element = _storage_type(node)
        if value is None or left is None or right is None or element is None or \
                not _shown_validates(element, shown):
            return None
        return Layout(Kind.RBTREE, root[0], element=element, node=node, next_offset=left[0],
                      right_offset=right[0], value_offset=value, count_offset=count,
                      shown=shown)
    return recognize


def _hashtable(shown: Shown):
    """unordered_map / unordered_set: `_M_h` (_Hashtable) chains all its
    nodes from `_M_before_begin._M_nxt`, in iteration order;
    `_M_element_count`. _Hash_node { _M_nxt, _M_storage[, hash] }."""
    def recognize(base: StructType) -> Layout | None:
        first = _pointer(base, "_M_h", "_M_before_begin", "_M_nxt")
        count = _word(base, "_M_h", "_M_element_count")
        node = node_type(base, "_Hash_node<")
        if first is None or count is None or node is None:
            return None
        value, nxt = _storage(node), find(node, "_M_nxt")
        element = _storage_type(node)
        if value is None or nxt is None or element is None or not _shown_validates(element, shown):
            return None
        return Layout(Kind.CHAIN, first[0], element=element, node=node, next_offset=nxt[0],
                      value_offset=value, count_offset=count, shown=shown)
    return recognize


def _storage_type(node: StructType) -> CType | None:
    """The element a node holds: `_M_storage` is __aligned_membuf<V>
    (or __aligned_buffer<V>), V its `_Tp`."""
    found = find(node, "_M_storage")
    if found is None:
        return None
    storage = strip(found[1].type)
    return storage.parameter("_Tp") if isinstance(storage, StructType) else None


def _shown_validates(element: CType, shown: Shown) -> bool:
    """A map's element is a std::pair { first, second }."""
    if shown is not Shown.MAP:
        return True
    pair = strip(element)
    return isinstance(pair, StructType) and pair.member("first") is not None and \
        pair.member("second") is not None


def _optional(base: StructType) -> Layout | None:
    """optional<T>: `_M_payload` (through _Optional_base) { `_M_payload`:
    union { _M_value }, `_M_engaged` }."""
    outer = _path(base, "_M_payload")
    if outer is None or not isinstance(strip(outer[1].type), StructType):
        return None
    payload = strip(outer[1].type)
    value, engaged = _path(payload, "_M_payload", "_M_value"), _path(payload, "_M_engaged")
    if value is None or engaged is None:
        return None
    member = StructMember("value", value[1].type, outer[0] + value[0])
    return Layout(Kind.OPTIONAL, engaged[0] + outer[0], members=(member,), label="std::optional")


def _variant(base: StructType) -> Layout | None:
    """variant<Ts...>: `_M_u` (_Variadic_union { _M_first:
    _Uninitialized<T> { _M_storage }, _M_rest: the next }) and `_M_index`."""
    union, index = _path(base, "_M_u"), _path(base, "_M_index")
    if union is None or index is None or not isinstance(strip(index[1].type), IntType):
        return None
    alternatives = []
    current = strip(union[1].type)
    while isinstance(current, StructType) and current.member("_M_first") is not None:
        first = strip(current.member("_M_first").type)
        found = find(first, "_M_storage") if isinstance(first, StructType) else None
        if found is None:
            return None
        storage = StructMember("_M_storage", found[1].type, found[0])
        inner = strip(storage.type)
        held = inner.parameter("_Tp") if isinstance(inner, StructType) and \
            (inner.name or "").startswith("__gnu_cxx::__aligned_") else storage.type
        if held is None:
            return None
        alternatives.append(StructMember(str(len(alternatives)), held, union[0] + storage.offset))
        rest = current.member("_M_rest")
        current = strip(rest.type) if rest is not None else None
    if not alternatives:
        return None
    return Layout(Kind.VARIANT, index[0], element=index[1].type, members=tuple(alternatives),
                  label="std::variant")


def _pair(base: StructType) -> Layout | None:
    first, second = base.member("first"), base.member("second")
    if first is None or second is None:
        return None
    return Layout(Kind.ELEMENTS, members=(first, second))


def _tuple(base: StructType) -> Layout | None:
    """tuple<Ts...>: _Tuple_impl<I, ...> bases, each element in a
    _Head_base<I, T> base's `_M_head_impl`, ordered by I."""
    heads: dict[int, StructMember] = {}
    _tuple_heads(base, 0, heads, 0)
    if sorted(heads) != list(range(len(heads))):
        return None
    if not heads and (base.members or base.bases):
        return None                 # not libstdc++'s tuple (libc++'s: `__base_`), not empty
    return Layout(Kind.ELEMENTS, members=tuple(heads[i] for i in sorted(heads)))


def _tuple_heads(base: StructType, offset: int, heads: dict, depth: int) -> None:
    if depth > 40:
        return
    match = re.match(r"std::_Head_base<(\d+)[uUlL]*,", base.name or "")    # clang: `0UL`
    if match is not None:
        head = base.member("_M_head_impl")
        if head is not None:
            heads[int(match[1])] = StructMember(match[1], head.type, offset + head.offset)
        else:                       # an empty element (EBO): no member, no bytes
            heads[int(match[1])] = StructMember(match[1], base, offset)
        return
    for inherited in base.bases:
        inner = strip(inherited.type)
        if isinstance(inner, StructType) and inherited.offset is not None:
            _tuple_heads(inner, offset + inherited.offset, heads, depth + 1)


def _unique_ptr(base: StructType) -> Layout | None:
    """unique_ptr<T>: `_M_t` (__uniq_ptr_impl) -> `_M_t` (tuple<T*, D>),
    whose element 0 is the pointer."""
    inner = _path(base, "_M_t", "_M_t")
    if inner is None or not isinstance(strip(inner[1].type), StructType):
        return None
    elements = _tuple(strip(inner[1].type))
    if elements is None or not elements.members:
        return None
    pointer = elements.members[0]
    if not isinstance(strip(pointer.type), PointerType):
        return None
    return Layout(Kind.HANDLE, inner[0] + pointer.offset, element=strip(pointer.type).target,
                  label="std::unique_ptr", count_offset=None)


def _shared(label: str):
    """shared_ptr / weak_ptr: `_M_ptr` and `_M_refcount._M_pi` ->
    _Sp_counted_base { _M_use_count, _M_weak_count }."""
    def recognize(base: StructType) -> Layout | None:
        pointer = _pointer(base, "_M_ptr")
        counts = _pointer(base, "_M_refcount", "_M_pi")
        counted = strip(counts[1]) if counts is not None else None
        use = find(counted, "_M_use_count") if isinstance(counted, StructType) else None
        if pointer is None or use is None or type_size(use[1].type) != 4:
            return None
        return Layout(Kind.HANDLE, pointer[0], element=pointer[1], label=label,
                      count_offset=counts[0], value_offset=use[0])
    return recognize


_STD = {
    "std::basic_string": _string,
    "std::basic_string_view": _string_view,
    "std::vector": _vector,
    "std::array": _array,
    "std::span": _span,
    "std::deque": _deque,
    "std::list": _list,
    "std::forward_list": _forward_list,
    "std::map": _tree(Shown.MAP),
    "std::multimap": _tree(Shown.MAP),
    "std::set": _tree(Shown.SET),
    "std::multiset": _tree(Shown.SET),
    "std::unordered_map": _hashtable(Shown.MAP),
    "std::unordered_multimap": _hashtable(Shown.MAP),
    "std::unordered_set": _hashtable(Shown.SET),
    "std::unordered_multiset": _hashtable(Shown.SET),
    "std::optional": _optional,
    "std::variant": _variant,
    "std::pair": _pair,
    "std::tuple": _tuple,
    "std::unique_ptr": _unique_ptr,
    "std::shared_ptr": _shared("std::shared_ptr"),
    "std::weak_ptr": _shared("std::weak_ptr"),
}


def std_sequence(ctype: CType) -> Layout | None:
    """The layout `[i]` indexes: a string, vector, span."""
    shape = layout(ctype)
    return shape if shape.kind in (Kind.TEXT, Kind.SEQUENCE) else None


def std_collection(ctype: CType) -> Layout | None:
    """What `len(x)` reads: a string's or collection's length."""
    shape = layout(ctype)
    if shape.kind in (Kind.TEXT, Kind.SEQUENCE, Kind.CHAIN, Kind.RBTREE, Kind.DEQUE, Kind.BITS,
                      Kind.WRAPPER):
        return shape
    return None
