"""C for a DeepCapture's pointer chases (plan/follows.py): after the root
object is in the slot, each follow walks the elements of its source with
bounded loops and reads, for each, the bytes its pointer and length
select into a sub-slot of its own (gs_read_dump: status, requested
length, address, data). The sub-slots of a source element that was not
read (its sub-slot failed, or lies past what it read) are left as they
are: render/ never decodes them, as it shows only what was read. A walk
over linked nodes (std::list, std::map) reads node after node in one
bounded loop."""
from __future__ import annotations

from gs_cgen.emit import c
from gs_cgen.emit.writer import CWriter
from gs_cgen.plan.model import TREE_STACK, DeepCapture, FollowRead, ValueSlot, Walk


def emit_follows(w: CWriter, slot: ValueSlot, capture: DeepCapture) -> None:
    base = slot.data_offset + capture.follows_offset
    for index, follow in enumerate(capture.follows):
        w.line(c.comment(f"follow {index}: the data behind a pointer "
                         f"(source {'root' if follow.source is None else follow.source})"))
        if follow.source is None:
            _root_sourced(w, base, slot, follow)
        else:
            _follow_sourced(w, base, capture.follows[follow.source], follow)


def _root_sourced(w: CWriter, base: int, slot: ValueSlot, follow: FollowRead) -> None:
    with w.block():
        if follow.end_offset is not None:
            w.line(f"__u64 gs_a = GS_ADDRESS(ev, {slot.offset});")
        _element(w, base, str(slot.data_offset), "0", follow)


def _follow_sourced(w: CWriter, base: int, source: FollowRead, follow: FollowRead) -> None:
    w.line("#pragma clang loop unroll(disable)")
    if source.walk is Walk.NONE:
        with w.block(f"for (__u32 gs_r = 0; gs_r < {source.reps}; gs_r++)"):
            w.line(f"__u32 gs_sh = {base + source.offset} + gs_r * {source.stride};")
            w.line("if (GS_STATUS(ev, gs_sh) != GS_STATUS_OK)")
            w.line("    continue;")
            _source_elements(w, base, source, follow)
        return
    # A walk's nodes: each walk's reached ones, up to the first sub-slot
    # it did not reach (_walk_end).
    walks = source.reps // source.links
    with w.block(f"for (__u32 gs_q = 0; gs_q < {walks}; gs_q++)"):
        w.line("#pragma clang loop unroll(disable)")
        with w.block(f"for (__u32 gs_j = 0; gs_j < {source.links}; gs_j++)"):
            w.line(f"__u32 gs_r = gs_q * {source.links} + gs_j;")
            w.line(f"__u32 gs_sh = {base + source.offset} + gs_r * {source.stride};")
            w.line("if (GS_STATUS(ev, gs_sh) != GS_STATUS_OK)")
            w.line("    break;")
            _source_elements(w, base, source, follow)


def _source_elements(w: CWriter, base: int, source: FollowRead, follow: FollowRead) -> None:
    """The follow's reads for each element of source sub-slot gs_sh."""
    elements = follow.source_elements
    w.line("__u32 gs_got = GS_LENGTH(ev, gs_sh);")
    w.line(f"if (gs_got > {source.cap}) gs_got = {source.cap};")
    # The elements past what the source read are never decoded: the
    # loop ends there (a `continue` would leave the verifier one
    # narrowed state per element, none of them prunable).
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (__u32 gs_e = 0; gs_e < {elements}; gs_e++)"):
        w.line(f"if ((gs_e + 1) * {follow.element_size} > gs_got)")
        w.line("    break;")
        if follow.end_offset is not None:
            w.line(f"__u64 gs_a = GS_ADDRESS(ev, gs_sh) + gs_e * {follow.element_size};")
        _element(w, base, f"gs_sh + 16 + gs_e * {follow.element_size}",
                 f"(gs_r * {elements} + gs_e)", follow)


def _element(w: CWriter, base: int, element: str, rep: str, follow: FollowRead) -> None:
    """The reads of one source element (`rep` its index among them all)."""
    match follow.walk:
        case Walk.CHAIN:
            _chain(w, base, element, rep, follow)
        case Walk.TREE:
            _tree(w, base, element, rep, follow)
        case _:
            w.line(f"__u32 gs_h = {base + follow.offset} + {rep} * {follow.stride};")
            _read(w, element, follow)


def _walk_node(w: CWriter, follow: FollowRead) -> None:
    """Read node gs_k at gs_p into its sub-slot; a node that cannot be
    read keeps its error status and ends the walk."""
    w.line(f"__u32 gs_h = gs_first + gs_k * {follow.stride};")
    w.line(f"gs_read_dump(ev, gs_h, gs_h + 16, {follow.cap}, gs_p, {follow.fixed});")
    with w.block("if (GS_STATUS(ev, gs_h) != GS_STATUS_OK)"):
        w.line("gs_k += 1;")
        w.line("break;")


def _walk_end(w: CWriter, follow: FollowRead) -> None:
    """The sub-slot after the last one the walk wrote is marked
    unreached (the event's bytes are stale): render/ and the follows
    sourced from the walk stop there."""
    w.line(f"if (gs_k < {follow.links})")
    w.line(f"    GS_STATUS(ev, gs_first + gs_k * {follow.stride}) = GS_STATUS_UNAVAILABLE;")


def _chain(w: CWriter, base: int, element: str, rep: str, follow: FollowRead) -> None:
    """Up to `links` nodes, each from the previous node's next pointer,
    until a null pointer or `gs_end` (std::list's header)."""
    w.line(f"__u32 gs_first = {base + follow.offset} + {rep} * {follow.links * follow.stride};")
    w.line(f"__u64 gs_p = *(__u64 *)(ev + {element} + {follow.pointer_offset});")
    end = "0" if follow.end_offset is None else f"gs_a + {follow.end_offset}"
    w.line(f"__u64 gs_end = {end};")
    w.line("__u32 gs_k = 0;")
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (; gs_k < {follow.links}; gs_k++)"):
        w.line("if (gs_p == 0 || gs_p == gs_end)")
        w.line("    break;")
        _walk_node(w, follow)
        w.line(f"gs_p = *(__u64 *)(ev + gs_h + 16 + {follow.next_offset});")
    _walk_end(w, follow)


def _tree(w: CWriter, base: int, element: str, rep: str, follow: FollowRead) -> None:
    """A binary tree from its root in pre-order, one node per step (its
    left child next, else the right child last pushed): render/ puts the
    nodes in key order. The stack of right children still to visit is in
    the event's scratch (`gs_w`: u32 depth, then u64 node pointers), its
    depth loaded from there: unknown to the verifier, which so sees one
    state per step rather than one per (step, depth) pair; the node index
    is the loop's own counter."""
    stride, links = follow.stride, follow.links
    w.line(f"__u32 gs_first = {base + follow.offset} + {rep} * {links * stride};")
    w.line(f"__u32 gs_w = {base + follow.offset + follow.reps * stride};")
    w.line(f"__u64 gs_p = *(__u64 *)(ev + {element} + {follow.pointer_offset});")
    w.line("*(volatile __u32 *)(ev + gs_w) = 0;")
    w.line("__u32 gs_k = 0;")
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (; gs_k < {links}; gs_k++)"):
        w.line("if (gs_p == 0)")
        w.line("    break;")
        _walk_node(w, follow)
        w.line(f"__u64 gs_left = *(__u64 *)(ev + gs_h + 16 + {follow.next_offset});")
        w.line(f"__u64 gs_right = *(__u64 *)(ev + gs_h + 16 + {follow.right_offset});")
        w.line("__u32 gs_sp = *(volatile __u32 *)(ev + gs_w);")
        with w.block("if (gs_right != 0)"):
            # deeper than a red-black tree of 2^32 nodes: not a tree
            w.line(f"if (gs_sp >= {TREE_STACK}) {{ gs_k += 1; break; }}")
            w.line(f"*(__u64 *)(ev + gs_w + 8 + (gs_sp & {TREE_STACK - 1}) * 8) = gs_right;")
            w.line("gs_sp += 1;")
            w.line("*(volatile __u32 *)(ev + gs_w) = gs_sp;")
        with w.block("if (gs_left != 0)"):
            w.line("gs_p = gs_left;")
            w.line("continue;")
        w.line("if (gs_sp == 0)")
        w.line("    gs_p = 0;")
        with w.block("else"):
            w.line("gs_sp -= 1;")
            w.line(f"gs_p = *(__u64 *)(ev + gs_w + 8 + (gs_sp & {TREE_STACK - 1}) * 8);")
            w.line("*(volatile __u32 *)(ev + gs_w) = gs_sp;")
    _walk_end(w, follow)


def _read(w: CWriter, element: str, follow: FollowRead) -> None:
    """The read of one sub-slot at gs_h, from the source element at `element`."""
    w.line(f"__u64 gs_p = *(__u64 *)(ev + {element} + {follow.pointer_offset}) "
           f"+ {follow.pointer_add};")
    if follow.length_offset is None:
        w.line(f"__s64 gs_n = {follow.fixed};")
    elif follow.length_end:
        # std::vector: the bytes up to its end pointer (none when it is
        # below the start: a vector being built)
        w.line(f"__u64 gs_end = *(__u64 *)(ev + {element} + {follow.length_offset});")
        w.line(f"__s64 gs_n = gs_end >= gs_p ? (__s64)(gs_end - gs_p) + {follow.length_add} : 0;")
        w.line("if (gs_end >= gs_p && gs_end - gs_p > 0x7fffffff) gs_n = 0x7fffffff;")
    else:
        count = f"*(__u64 *)(ev + {element} + {follow.length_offset})"
        w.line(f"__s64 gs_n = (__s64)(({count} + {follow.length_add}) * {follow.scale});")
        # a garbage count must not wrap to a small positive request
        w.line(f"if ({count} > 0x7fffffff) gs_n = 0x7fffffff;")
    if follow.backwards:
        w.line(f"gs_p -= gs_n > {follow.cap} ? {follow.cap} : (gs_n < 0 ? 0 : gs_n);")
    w.line(f"gs_read_dump(ev, gs_h, gs_h + 16, {follow.cap}, gs_p, gs_n);")
