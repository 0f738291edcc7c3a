"""Rust std layouts, recognized from rustc's DWARF.

rustc describes every type as a DW_TAG_structure_type (enums too, with a
DW_TAG_variant_part), names std types by their path without the crate
(`String`, `Vec<u64, alloc::alloc::Global>`, `&str`, `Option<u32>`) and
gives generic types their DW_TAG_template_type_param (`T`). The shapes
below are checked member by member; one that does not validate is PLAIN
(printed as its DWARF layout) with a note, never guessed at.

Covered: the std layouts of rustc 1.7x-1.9x (RawVec with and without
RawVecInner, NonNull/Unique pointers, RcInner/RcBox, ArcInner).
"""
from __future__ import annotations

import re
from enum import Enum

from gs_cgen.dwarf.types import (ArrayType, CType, IntType, PointerType, StructMember, StructType, strip,
                                 type_size)
from gs_cgen.lazydataclass import dataclass


class Kind(Enum):
    PLAIN = "plain"               # a user struct: `Order { id: 42, ... }`
    TUPLE = "tuple"               # `(1, "a")`
    TUPLE_STRUCT = "tuple struct"  # `Point(1, -1)`
    UNIT = "unit"                 # `Empty`
    ENUM = "enum"                 # variant part
    TEXT = "text"                 # bytes behind a pointer, shown as a string
    SEQUENCE = "sequence"         # elements behind a pointer: `[1, 2]`
    RING = "ring"                 # VecDeque: a ring buffer's slots, `len` from `head`
    MAP = "map"                   # HashMap: a hashbrown table's full buckets
    TREE = "tree"                 # BTreeMap / BTreeSet: nodes walked in key order
    SET = "set"                   # HashSet: the same, keys only
    POINTEE = "pointee"           # one value behind a pointer (Box, Rc, Arc)
    WRAPPER = "wrapper"           # Cell, RefCell, NonZero: the inner value


@dataclass(frozen=True)
class Layout:
    """What a Rust value is. For TEXT and SEQUENCE: the pointer and the
    length (in elements) at byte offsets of the object, `element` the
    element type; for POINTEE: the pointer, `element` the pointee's
    type and `value_offset` where the shown value starts in it (RcInner's
    `value`); for WRAPPER: `inner` the offset and type of the inner value,
    `label` the Debug struct name when it prints one (`RefCell`)."""

    kind: Kind
    pointer_offset: int = 0
    length_offset: int | None = None
    element: CType | None = None
    value_offset: int = 0
    inner: StructMember | None = None
    label: str | None = None
    head_offset: int = 0          # RING: where the first element's slot index is
    count_offset: int = 0         # RING, MAP, SET, TREE: where the element count is
    tree: "TreeLayout | None" = None
    note: str | None = None       # why a std type prints as PLAIN


_TUPLE_FIELD = re.compile(r"__\d+$")
_COMPOSITE = frozenset({Kind.PLAIN, Kind.TUPLE, Kind.TUPLE_STRUCT, Kind.UNIT})
_PLAIN = Layout(Kind.PLAIN)


def layout(ctype: CType) -> Layout:
    """The layout of a Rust value of type `ctype` (a struct; pointers to
    Box<T> are handled by `pointer_layout`)."""
    base = strip(ctype)
    if not isinstance(base, StructType) or base.language != "rust" or base.is_declaration:
        return _PLAIN
    name = base.name or ""
    if base.variant_part is not None:
        return Layout(Kind.ENUM)
    members = base.members
    if _is_fat_pointer(base):
        return _fat_pointer(base, name)
    family = _family(name)
    recognized = _STD.get(family) if _is_std(base) else None
    if recognized is not None:
        found = recognized(base)
        if found is not None:
            return found
        return Layout(Kind.PLAIN, note=f"the layout of {name} is not one gs-cgen knows")
    if not members:
        return Layout(Kind.UNIT)
    if all(m.name and _TUPLE_FIELD.match(m.name) for m in members):
        return Layout(Kind.TUPLE if name.startswith("(") else Kind.TUPLE_STRUCT)
    return _PLAIN


def layout_notes(ctype: CType, depth: int = 0) -> list[str]:
    """Why std types inside `ctype` (members, variants, elements) print
    in their DWARF form: a layout that did not validate."""
    base = strip(ctype)
    if isinstance(base, ArrayType):
        return layout_notes(base.element, depth + 1) if depth < 6 else []
    if not isinstance(base, StructType) or base.language != "rust" or depth > 6:
        return []
    shape = layout(base)
    if shape.note is not None:
        return [shape.note]
    inside = [m.type for m in base.members] if shape.kind in _COMPOSITE else \
        [shape.element, shape.inner.type if shape.inner else None]
    if base.variant_part is not None:
        inside += [v.member.type for v in base.variant_part.variants]
    return [note for t in inside if t is not None for note in layout_notes(t, depth + 1)]


def pointer_layout(ctype: CType) -> Layout | None:
    """Box<T> is a plain pointer in rustc's DWARF named `Box<T, Global>`:
    `{:?}` shows the value it owns."""
    base = strip(ctype)
    if isinstance(base, PointerType) and _family(base.name or "") == "Box":
        return Layout(Kind.POINTEE, 0, element=base.target)
    return None


def display_name(base: StructType) -> str:
    """`Order`, `Option`, `Point`: a struct's name as `{:?}` prints it
    (no generic arguments, no path)."""
    name = base.name or ""
    return name.split("<", 1)[0].rsplit("::", 1)[-1]


# The crates whose types the std printers read (hashbrown is std's hash table).
_STD_CRATES = frozenset({"alloc", "core", "std", "hashbrown"})


def _is_std(base: StructType) -> bool:
    """A standard library type, not a user's `String` or `Vec<T>`."""
    return base.scope.split("::", 1)[0] in _STD_CRATES


def _family(name: str) -> str:
    """`Box` of `alloc::boxed::Box<values::Point, alloc::alloc::Global>`;
    a tuple, reference or array type is no family."""
    if name.startswith(("(", "&", "[", "*")):
        return name
    return name.split("<", 1)[0].rsplit("::", 1)[-1]


def _is_fat_pointer(base: StructType) -> bool:
    names = [m.name for m in base.members]
    return names == ["data_ptr", "length"] and isinstance(strip(base.members[0].type), PointerType)


def _fat_pointer(base: StructType, name: str) -> Layout:
    """&str, &[T], Box<str>, Box<[T]>, &Path, &OsStr: data_ptr + length."""
    data, length = base.members
    element = strip(data.type).target
    # &Path's data_ptr points at Path { inner: OsStr { .. [u8] } }: bytes.
    text = _names_text(name) and (_is_byte(element) or type_size(element) in (0, 1))
    if text and not _is_byte(element):
        element = IntType("u8", 1, False)
    return Layout(Kind.TEXT if text else Kind.SEQUENCE, data.offset, length.offset, element)


def _names_text(name: str) -> bool:
    return any(word in name for word in ("str", "Path", "OsStr"))


def _is_byte(ctype: CType) -> bool:
    base = strip(ctype)
    return isinstance(base, IntType) and base.size == 1 and not base.signed


def _vec(base: StructType) -> Layout | None:
    """Vec<T>: `buf` (RawVec, whose first pointer inside is the data) and
    `len`; T from the template parameter (RawVecInner's pointer is u8*)."""
    buf, length = base.member("buf"), base.member("len")
    element = base.parameter("T")
    if buf is None or length is None or element is None:
        return None
    pointer = _first_pointer(buf.type, buf.offset)
    if pointer is None:
        return None
    return Layout(Kind.SEQUENCE, pointer, length.offset, element)


def _byte_string(base: StructType) -> Layout | None:
    """String { vec }, OsString { inner: Buf { inner: Vec<u8> } },
    PathBuf { inner: OsString }: the Vec<u8> inside, as text."""
    found = _inner_vec(base, 0)
    if found is None:
        return None
    vec, offset = found
    inner = _vec(vec)
    if inner is None or not _is_byte(inner.element):
        return None
    return Layout(Kind.TEXT, offset + inner.pointer_offset, offset + inner.length_offset,
                  inner.element)


def _inner_vec(base: StructType, offset: int, depth: int = 0):
    if _family(base.name or "") == "Vec":
        return base, offset
    if depth > 4 or len(base.members) != 1:
        return None
    member = base.members[0]
    inner = strip(member.type)
    return _inner_vec(inner, offset + member.offset, depth + 1) \
        if isinstance(inner, StructType) else None


def _shared(value_member: str):
    """Rc<T> / Arc<T>: `ptr` (NonNull of RcInner / ArcInner) -> the
    counts, then `value` / `data`."""
    def recognize(base: StructType) -> Layout | None:
        ptr = base.member("ptr")
        if ptr is None:
            return None
        pointer = _first_pointer(ptr.type, ptr.offset)
        target = _pointer_target(ptr.type)
        if pointer is None or target is None:
            return None
        if _is_fat_pointer(target):        # Rc<str>, Rc<[T]>: a fat NonNull
            data, length = target.members
            inner = strip(strip(data.type).target)
            value = inner.member(value_member) if isinstance(inner, StructType) else None
            if value is None:
                return None
            element = _slice_element(value.type)
            kind = Kind.TEXT if element is not None and _is_byte(element) and \
                _names_text(base.name or "") else Kind.SEQUENCE
            return Layout(kind, ptr.offset + data.offset, ptr.offset + length.offset,
                          element, value_offset=value.offset)
        value = target.member(value_member)
        if value is None:
            return None
        return Layout(Kind.POINTEE, pointer, element=target, value_offset=value.offset)
    return recognize


def _slice_element(ctype: CType) -> CType | None:
    """The element of an unsized `str` / `[T]` value type (rustc: a
    struct or array of no length)."""
    base = strip(ctype)
    element = getattr(base, "element", None)
    if element is not None:
        return element
    if isinstance(base, IntType):
        return base
    return IntType("u8", 1, False) if getattr(base, "name", "") == "str" else None


def _nonzero(base: StructType) -> Layout | None:
    """NonZero<T>(NonZeroTInner(T)) — `{:?}` prints the number."""
    offset, member = 0, None
    current = base
    for _ in range(4):
        if not isinstance(current, StructType) or len(current.members) != 1:
            break
        member = current.members[0]
        offset += member.offset
        current = strip(member.type)
    if member is None or isinstance(current, StructType):
        return None
    return Layout(Kind.WRAPPER, inner=StructMember("value", member.type, offset))


def _ring(base: StructType) -> Layout | None:
    """VecDeque<T> { head, len, buf: RawVec }: the buffer's `cap` slots are
    read; the renderer shows `len` of them from `head`, wrapping."""
    head, length, buf = base.member("head"), base.member("len"), base.member("buf")
    element = base.parameter("T")
    if head is None or length is None or buf is None or element is None:
        return None
    pointer = _first_pointer(buf.type, buf.offset)
    capacity = _member_path_offset(buf.type, buf.offset, "cap")
    if pointer is None or capacity is None:
        return None
    return Layout(Kind.RING, pointer, capacity, element, head_offset=head.offset,
                  count_offset=length.offset)


def _member_path_offset(ctype: CType, offset: int, name: str, depth: int = 0) -> int | None:
    """The offset of the integer inside the first member called `name`
    (RawVecInner's `cap: UsizeNoHighBit(usize)` included)."""
    base = strip(ctype)
    if not isinstance(base, StructType) or depth > 6:
        return None
    for member in base.members:
        if member.name == name:
            inner = strip(member.type)
            while isinstance(inner, StructType) and len(inner.members) == 1:
                offset += inner.members[0].offset
                inner = strip(inner.members[0].type)
            return offset + member.offset if isinstance(inner, IntType) else None
        found = _member_path_offset(member.type, offset + member.offset, name, depth + 1)
        if found is not None:
            return found
    return None


def _hash_table(kind: Kind):
    """HashMap / HashSet: hashbrown's RawTable<T> inside, its RawTableInner
    { ctrl, bucket_mask, items }. Bucket i's T sits at ctrl - (i + 1) *
    size_of::<T>(); control byte i has its top bit clear when it is full.
    T is (K, V) for a map, (K, ()) for a set."""
    def recognize(base: StructType) -> Layout | None:
        found = _find_family(base, "RawTable", 0)
        if found is None:
            return None
        table, offset = found
        element = table.parameter("T")
        inner = table.member("table")
        inner_type = strip(inner.type) if inner is not None else None
        if element is None or not isinstance(inner_type, StructType):
            return None
        members = {m.name: m for m in inner_type.members}
        ctrl, mask, items = (members.get(n) for n in ("ctrl", "bucket_mask", "items"))
        if ctrl is None or mask is None or items is None:
            return None
        pointer = _first_pointer(ctrl.type, offset + inner.offset + ctrl.offset)
        element_base = strip(element)
        if pointer is None or not isinstance(element_base, StructType) or \
                len(element_base.members) != 2:
            return None
        at = offset + inner.offset
        return Layout(kind, pointer, at + mask.offset, element, count_offset=at + items.offset)
    return recognize


@dataclass(frozen=True)
class TreeLayout:
    """A BTreeMap's nodes: the root NodeRef's `node` pointer and `height`
    (offsets in the map), LeafNode { keys, vals, len } (`leaf`), and
    InternalNode's `edges` after its leaf part. `value` is None for a set."""

    node_offset: int
    height_offset: int
    leaf: StructType
    keys_offset: int
    vals_offset: int
    len_offset: int
    key: CType
    value: CType | None
    edges_offset: int
    edges: int


def _btree(kind: Kind, keys_only: bool = False):
    def recognize(base: StructType) -> Layout | None:
        found = _find_family(base, "BTreeMap", 0)
        if found is None:
            return None
        tree, offset = found
        root, length = tree.member("root"), tree.member("length")
        key, value = tree.parameter("K"), tree.parameter("V")
        node_ref = _some_payload(root.type) if root is not None else None
        if node_ref is None or length is None or key is None or value is None:
            return None
        ref, at = node_ref
        node, height = ref.member("node"), ref.member("height")
        leaf = _pointer_target(node.type) if node is not None else None
        if height is None or leaf is None:
            return None
        fields = {m.name: m for m in leaf.members}
        keys, vals, count, parent = (fields.get(n) for n in ("keys", "vals", "len", "parent"))
        internal = _pointer_target(parent.type) if parent is not None else None
        edges = internal.member("edges") if internal is not None else None
        edge_array = strip(edges.type) if edges is not None else None
        if keys is None or vals is None or count is None or not getattr(edge_array, "count", 0):
            return None
        start = offset + root.offset + at
        layout = TreeLayout(start + node.offset, start + height.offset, leaf, keys.offset,
                            vals.offset, count.offset, key,
                            None if keys_only else value, edges.offset, edge_array.count)
        return Layout(kind, start + node.offset, element=leaf, count_offset=offset + length.offset,
                      tree=layout)
    return recognize


def _some_payload(ctype: CType):
    """The payload of an Option's Some (its __0) and its offset."""
    base = strip(ctype)
    part = base.variant_part if isinstance(base, StructType) else None
    if part is None:
        return None
    for variant in part.variants:
        payload = strip(variant.member.type)
        if variant.member.name == "Some" and isinstance(payload, StructType):
            inner = payload.member("__0")
            inner_type = strip(inner.type) if inner is not None else None
            if isinstance(inner_type, StructType):
                return inner_type, variant.member.offset + inner.offset
    return None


def _find_family(base: StructType, family: str, offset: int, depth: int = 0):
    if _family(base.name or "") == family:
        return base, offset
    if depth > 5:
        return None
    for member in base.members:
        inner = strip(member.type)
        if isinstance(inner, StructType):
            found = _find_family(inner, family, offset + member.offset, depth + 1)
            if found is not None:
                return found
    return None


def _wrapper(label: str | None, path: tuple[str, ...]):
    """Cell { value: UnsafeCell { value } }, RefCell { value: UnsafeCell
    { value } }, NonZero(T)."""
    def recognize(base: StructType) -> Layout | None:
        offset, current, member = 0, base, None
        for name in path:
            member = current.member(name) if isinstance(current, StructType) else None
            if member is None:
                return None
            offset += member.offset
            current = strip(member.type)
        return Layout(Kind.WRAPPER, inner=StructMember("value", member.type, offset), label=label)
    return recognize


def _borrow_guard(base: StructType) -> Layout | None:
    """Ref<T> / RefMut<T>: `value` (NonNull<T>) -> the T borrowed, which
    is what `{:?}` shows."""
    value = base.member("value")
    pointer = _first_pointer(value.type, value.offset) if value is not None else None
    target = _nonnull_target(value.type) if value is not None else None
    if pointer is None or target is None:
        return None
    return Layout(Kind.POINTEE, pointer, element=target)


def _nonnull_target(ctype: CType, depth: int = 0) -> CType | None:
    base = strip(ctype)
    if isinstance(base, PointerType):
        return base.target
    if not isinstance(base, StructType) or len(base.members) != 1 or depth > 6:
        return None
    return _nonnull_target(base.members[0].type, depth + 1)


def _first_pointer(ctype: CType, offset: int, depth: int = 0) -> int | None:
    """The offset of the first pointer inside a chain of one-pointer
    wrappers (Unique { pointer: NonNull { pointer: *const T } })."""
    base = strip(ctype)
    if isinstance(base, PointerType):
        return offset
    if not isinstance(base, StructType) or depth > 6:
        return None
    for member in base.members:
        found = _first_pointer(member.type, offset + member.offset, depth + 1)
        if found is not None:
            return found
    return None


def _pointer_target(ctype: CType, depth: int = 0) -> StructType | None:
    base = strip(ctype)
    if isinstance(base, PointerType):
        target = strip(base.target)
        return target if isinstance(target, StructType) else None
    if not isinstance(base, StructType) or depth > 6:
        return None
    if _is_fat_pointer(base):
        return base
    inside = list(base.members)
    if base.variant_part is not None:           # Option<NonNull<T>>: through Some
        inside += [v.member for v in base.variant_part.variants]
    for member in inside:
        found = _pointer_target(member.type, depth + 1)
        if found is not None:
            return found
    return None


_STD = {
    "Vec": _vec,
    "String": _byte_string,
    "OsString": _byte_string,
    "PathBuf": _byte_string,
    "Rc": _shared("value"),
    "Arc": _shared("data"),
    "Cell": _wrapper("Cell", ("value", "value")),
    "RefCell": _wrapper("RefCell", ("value", "value")),
    "Ref": _borrow_guard,
    "RefMut": _borrow_guard,
    "NonZero": _nonzero,
    "VecDeque": _ring,
    "HashMap": _hash_table(Kind.MAP),
    "HashSet": _hash_table(Kind.SET),
    "BTreeMap": _btree(Kind.TREE),
    "BTreeSet": _btree(Kind.TREE, keys_only=True),
}


def element_size(ctype: CType) -> int:
    return type_size(ctype)


def std_sequence(ctype: CType) -> Layout | None:
    """The layout `[i]` indexes: a Vec, slice, array-backed string."""
    base = strip(ctype)
    if not isinstance(base, StructType) or base.language != "rust":
        return None
    shape = layout(base)
    return shape if shape.kind in (Kind.TEXT, Kind.SEQUENCE) else None


def std_collection(ctype: CType) -> int | None:
    """Where `len(x)` reads a Rust string's or collection's length."""
    base = strip(ctype)
    if not isinstance(base, StructType) or base.language != "rust":
        return None
    shape = layout(base)
    if shape.kind in (Kind.TEXT, Kind.SEQUENCE):
        return shape.length_offset
    if shape.kind in (Kind.RING, Kind.MAP, Kind.SET, Kind.TREE):
        return shape.count_offset
    return None
