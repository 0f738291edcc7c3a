"""What to read behind a value's pointers so that it prints as its
language's debugger shows it (gs_cgen/printers/): the FollowReads of a
DeepCapture.

The type tree is walked from the root object: every Rust string,
sequence or owned pointee found in it (members, enum variants, wrapper
insides, elements of what an earlier follow reads) becomes a follow whose
source is the object or follow that holds its pointer. render/ walks the
same tree in the same order to find each follow's bytes
(`follow_key`). Each follow reads at most `max_elements` elements (bytes
of a string); together they stay within `budget` bytes, later follows
getting fewer elements when earlier ones took the room (the renderer marks
every cut)."""
from __future__ import annotations

from gs_cgen.dwarf.types import ArrayType, StructType, strip, type_size
from gs_cgen.plan.model import FollowRead
from gs_cgen.printers import rust

_MAX_DEPTH = 6              # nested types walked for pointers
_MAX_REPS = 2048            # probe-time repetitions of one follow (verifier budget)
_MAX_TREE_LEVELS = 4        # B-tree levels read: up to 11 + 132 + 1584 + 19008 keys


def follow_key(follow: FollowRead) -> tuple[int | None, int, int, bool]:
    """How the renderer finds a follow: its source, the pointer's offset
    in the source element, what is added to it and its direction (a hash
    table reads its control bytes and its buckets through one pointer, a
    B-tree node its keys and its edges)."""
    return follow.source, follow.pointer_offset, follow.pointer_add, follow.backwards


def plan_follows(ctype, max_elements: int, budget: int) -> tuple[FollowRead, ...]:
    """The follows of `ctype` within `budget` bytes. Nested collections
    share the room evenly: each shows at most the largest element count
    (string length) that lets every level read that many, rather than the
    outer ones taking it all and leaving their strings a few bytes."""
    shown = max_elements
    if _planned(ctype, shown, None).end > budget:
        low, high = 1, max_elements
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if _planned(ctype, middle, None).end <= budget \
                else (low, middle - 1)
        shown = low
    return tuple(_planned(ctype, shown, budget).follows)


def _planned(ctype, max_elements: int, budget: int | None) -> "_Planner":
    """budget None: what every follow at `max_elements` needs (B-trees
    their root only: their deeper levels take what room is left)."""
    planner = _Planner(max_elements, budget)
    planner.walk(ctype, None, 0, 1, 0)
    return planner


class _Planner:
    def __init__(self, max_elements: int, budget: int | None) -> None:
        self.sizing = budget is None
        self.max_elements, self.left = max_elements, (1 << 40) if budget is None else budget
        self.follows: list[FollowRead] = []
        self.strides: list[int] = []       # each follow's element size, as a source
        self.end = 0

    def walk(self, ctype, source: int | None, offset: int, reps: int, depth: int) -> None:
        """`reps`: how many elements of `source` hold this type at `offset`."""
        if depth > _MAX_DEPTH:
            return
        boxed = rust.pointer_layout(ctype)
        if boxed is not None:
            self._pointee(boxed, source, offset, reps, depth)
            return
        base = strip(ctype)
        if isinstance(base, ArrayType) and base.count:
            size = type_size(base.element)
            for i in range(min(base.count, self.max_elements) if size else 0):
                self.walk(base.element, source, offset + i * size, reps, depth + 1)
            return
        if not isinstance(base, StructType) or base.language != "rust":
            return
        shape = rust.layout(base)
        match shape.kind:
            case rust.Kind.TEXT | rust.Kind.SEQUENCE | rust.Kind.RING:
                self._sequence(shape, source, offset, reps, depth)
            case rust.Kind.POINTEE:
                self._pointee(shape, source, offset, reps, depth)
            case rust.Kind.MAP | rust.Kind.SET:
                self._table(shape, source, offset, reps, depth)
            case rust.Kind.TREE:
                self._tree(shape.tree, source, offset, reps, depth)
            case rust.Kind.WRAPPER:
                self.walk(shape.inner.type, source, offset + shape.inner.offset, reps, depth + 1)
            case rust.Kind.ENUM:
                for variant in base.variant_part.variants:
                    self.walk(variant.member.type, source, offset + variant.member.offset, reps,
                              depth + 1)
            case _:
                for member in base.members:
                    self.walk(member.type, source, offset + member.offset, reps, depth + 1)

    def _sequence(self, shape: rust.Layout, source, offset: int, reps: int, depth: int) -> None:
        if shape.kind is not rust.Kind.TEXT and type_size(shape.element) == 0:
            return                 # a Vec<()>: no bytes to read, its length says it all
        size = max(type_size(shape.element), 1) if shape.element is not None else 1
        count = self._elements(size, reps)
        if shape.kind is not rust.Kind.TEXT:      # each element may be a source of its own
            count = min(count, _MAX_REPS // reps)
        if count == 0:
            return
        index = self._add(source, offset + shape.pointer_offset, shape.value_offset,
                          offset + shape.length_offset, size, 0, count * size, reps)
        if shape.kind is not rust.Kind.TEXT:
            # Each element may hold pointers of its own: follows sourced
            # from this one, repeated for each of its elements.
            self.walk(shape.element, index, 0, reps * count, depth + 1)

    def _table(self, shape: rust.Layout, source, offset: int, reps: int, depth: int) -> None:
        """A hashbrown table: its control bytes, then the buckets below
        them, both for the lowest bucket indices that fit (a multiple of 8
        buckets, so the buckets' bytes stay whole at any cap)."""
        size = max(type_size(shape.element), 1)
        # At least one group of 8 buckets, whatever --max-elements says.
        buckets = min(self._elements(size + 1, reps, max(2 * self.max_elements, 8)),
                      _MAX_REPS // max(reps, 1))
        buckets -= buckets % 8
        if buckets == 0:
            return
        pointer, mask = offset + shape.pointer_offset, offset + shape.length_offset
        self._add(source, pointer, 0, mask, 1, 0, buckets, reps, length_add=1)
        index = self._add(source, pointer, 0, mask, size, 0, buckets * size, reps,
                          length_add=1, backwards=True)
        self.walk(shape.element, index, 0, reps * buckets, depth + 1)

    def _tree(self, tree: rust.TreeLayout, source, offset: int, reps: int, depth: int) -> None:
        """A B-tree, level by level while the budget lasts: each node's
        LeafNode part (keys, values, len), and its edges when it has
        children (at the root: `height` > 0; below, the edges are read
        for every node and used only where the height says so)."""
        leaf_size, edge_bytes = tree.leaf.size, 8 * tree.edges
        if self.left < reps * (leaf_size + edge_bytes + 32):
            return
        node = offset + tree.node_offset
        leaf = self._add(source, node, 0, None, 1, leaf_size, leaf_size, reps)
        self.walk(tree.leaf, leaf, 0, reps, depth + 1)
        edges = self._add(source, node, tree.edges_offset, offset + tree.height_offset,
                          edge_bytes, 0, edge_bytes, reps, stride=8)
        level_reps = reps
        for level in range(1, 1 if self.sizing else _MAX_TREE_LEVELS):
            level_reps *= tree.edges
            last = level == _MAX_TREE_LEVELS - 1
            need = level_reps * (leaf_size + 16 + (0 if last else edge_bytes + 16))
            if level_reps > _MAX_REPS or self.left < need:
                break
            leaf = self._add(edges, 0, 0, None, 1, leaf_size, leaf_size, 0)
            self.walk(tree.leaf, leaf, 0, level_reps, depth + 1)
            if not last:
                edges = self._add(edges, 0, tree.edges_offset, None, 1, edge_bytes, edge_bytes,
                                  0, stride=8)

    def _pointee(self, shape: rust.Layout, source, offset: int, reps: int, depth: int) -> None:
        size = type_size(shape.element)
        if size <= 0 or size > self.left // max(reps, 1):
            return
        index = self._add(source, offset + shape.pointer_offset, 0, None, 1, size, size, reps)
        self.walk(shape.element, index, 0, reps, depth + 1)

    def _elements(self, size: int, reps: int, most: int | None = None) -> int:
        """Elements each rep may read: `most` (max_elements), fewer when
        the budget or the verifier's repetition bound says so."""
        if reps > _MAX_REPS:
            return 0
        # Each rep's sub-slot is a 16-byte header and its elements, 8-aligned.
        room = (self.left - reps * 24) // (reps * size) if reps and size else 0
        return max(0, min(self.max_elements if most is None else most, room))

    def _add(self, source, pointer_offset: int, add: int, length_offset, scale: int,
             fixed: int, data: int, reps: int, length_add: int = 0,
             backwards: bool = False, stride: int | None = None) -> int:
        cap = (data + 7) & ~7
        source_elements, element_size = 1, 0
        if source is not None:
            parent = self.follows[source]
            element_size = self.strides[source]
            source_elements = parent.cap // element_size if element_size else 1
        follow = FollowRead(source, source_elements, element_size, pointer_offset, add,
                            length_offset, scale, fixed, cap, self.end,
                            reps if source is None else self.follows[source].reps * source_elements,
                            length_add, backwards)
        self.follows.append(follow)
        self.strides.append(stride or (scale if length_offset is not None else fixed))
        self.end += follow.reps * follow.stride
        self.left -= follow.reps * follow.stride
        return len(self.follows) - 1
