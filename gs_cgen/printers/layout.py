"""What a standard library value is, whatever its language: the shapes
gs_cgen/printers/rust.py and cpp.py recognize from the DWARF, which
plan/follows.py reads behind pointers and render/ decodes."""
from __future__ import annotations

from enum import Enum
from typing import Any

from gs_cgen.dwarf.types import CType, StructMember
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
    WRAPPER = "wrapper"           # Cell, RefCell, NonZero, std::array: the inner value
    # C++ (libstdc++)
    CHAIN = "chain"               # nodes linked by a next pointer: list, unordered_map
    RBTREE = "rbtree"             # std::map / std::set: a red-black tree, in key order
    DEQUE = "deque"               # std::deque: a map of fixed-size buffers
    BITS = "bits"                 # std::vector<bool>: bits in words
    OPTIONAL = "optional"         # std::optional: a value and an engaged flag
    VARIANT = "variant"           # std::variant: alternatives and an index
    HANDLE = "handle"             # unique_ptr / shared_ptr / weak_ptr: `label(0x.. -> v)`
    ELEMENTS = "elements"         # std::pair / std::tuple: `("a", 1)`


class Shown(Enum):
    """How a C++ node container prints its elements."""

    SEQUENCE = "sequence"         # `[1, 2]`
    MAP = "map"                   # elements are pairs: `{"a": 1}`
    SET = "set"                   # `{1, 2}`


@dataclass(frozen=True)
class Layout:
    """What a std value is. For TEXT and SEQUENCE: the pointer and the
    length (in elements; with `end_pointer`, the pointer one past the
    last element) at byte offsets of the object, `element` the element
    type; for POINTEE: the pointer, `element` the pointee's type and
    `value_offset` where the shown value starts in it (RcInner's
    `value`); for WRAPPER: `inner` the offset and type of the inner
    value, `label` the Debug struct name when it prints one (`RefCell`).

    C++ node containers (CHAIN, RBTREE): `pointer_offset` holds the
    first node (the tree's root), `node` is the node type, `next_offset`
    the next (left) pointer and `right_offset` the right pointer in it,
    `value_offset` where the element starts in a node; a CHAIN ends at a
    null pointer or, with `end_offset`, at the object's own address plus
    it (std::list's header). `members`: ELEMENTS' elements, VARIANT's
    alternatives (all at `value_offset`), OPTIONAL's value. `offsets`:
    the kind's other fields (DEQUE, BITS)."""

    kind: Kind
    pointer_offset: int = 0
    length_offset: int | None = None
    element: CType | None = None
    value_offset: int = 0
    inner: StructMember | None = None
    label: str | None = None
    head_offset: int = 0          # RING: where the first element's slot index is
    count_offset: int | None = 0  # RING, MAP, SET, TREE...: where the element count is
    tree: Any = None              # rust.TreeLayout
    note: str | None = None       # why a std type prints as PLAIN
    end_pointer: bool = False     # length_offset holds an end pointer (std::vector)
    node: Any = None              # a C++ container's node StructType
    next_offset: int = 0
    right_offset: int = 0
    end_offset: int | None = None
    shown: Shown = Shown.SEQUENCE
    members: tuple[StructMember, ...] = ()
    offsets: tuple[int, ...] = ()
