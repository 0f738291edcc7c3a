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
    elements = follow.source_elements
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (__u32 gs_r = 0; gs_r < {source.reps}; gs_r++)"):
        w.line(f"__u32 gs_sh = {base + source.offset} + gs_r * {source.stride};")
        w.line("if (GS_STATUS(ev, gs_sh) != GS_STATUS_OK)")
        w.line("    continue;")
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


def _unreached(w: CWriter, follow: FollowRead) -> None:
    """The sub-slots of the walk at gs_first, none reached yet: render/
    shows the nodes before the first sub-slot not OK."""
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (__u32 gs_k = 0; gs_k < {follow.links}; gs_k++)"):
        w.line(f"GS_STATUS(ev, gs_first + gs_k * {follow.stride}) = GS_STATUS_UNAVAILABLE;")


def _chain(w: CWriter, base: int, element: str, rep: str, follow: FollowRead) -> None:
    """Up to `links` nodes, each from the previous node's next pointer."""
    w.line(f"__u32 gs_first = {base + follow.offset} + {rep} * {follow.links * follow.stride};")
    _unreached(w, follow)
    w.line(f"__u64 gs_p = *(__u64 *)(ev + {element} + {follow.pointer_offset});")
    end = "0" if follow.end_offset is None else f"gs_a + {follow.end_offset}"
    w.line(f"__u64 gs_end = {end};")
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (__u32 gs_k = 0; gs_k < {follow.links}; gs_k++)"):
        w.line("if (gs_p == 0 || gs_p == gs_end)")
        w.line("    break;")
        w.line(f"__u32 gs_h = gs_first + gs_k * {follow.stride};")
        w.line(f"gs_read_dump(ev, gs_h, gs_h + 16, {follow.cap}, gs_p, {follow.fixed});")
        w.line("if (GS_STATUS(ev, gs_h) != GS_STATUS_OK)")
        w.line("    break;")
        w.line(f"gs_p = *(__u64 *)(ev + gs_h + 16 + {follow.next_offset});")


def _tree(w: CWriter, base: int, element: str, rep: str, follow: FollowRead) -> None:
    """A binary tree from its root, in pre-order (each node read when
    first reached, then its left subtree, then its right): a stack of the
    nodes whose right child is still to visit. The node count and the
    stack live in the event's scratch (`gs_w`: u32 count, u32 depth, u16
    node index per level), not in registers: loaded from the event they
    are unknown to the verifier, which so sees one state per step instead
    of one per (count, depth) pair."""
    stride, links = follow.stride, follow.links
    w.line(f"__u32 gs_first = {base + follow.offset} + {rep} * {links * stride};")
    w.line(f"__u32 gs_w = {base + follow.offset + follow.reps * stride};")
    _unreached(w, follow)
    w.line(f"__u64 gs_p = *(__u64 *)(ev + {element} + {follow.pointer_offset});")
    w.line("*(volatile __u32 *)(ev + gs_w) = 0;")
    w.line("*(volatile __u32 *)(ev + gs_w + 4) = 0;")
    w.line("#pragma clang loop unroll(disable)")
    with w.block(f"for (__u32 gs_k = 0; gs_k < {2 * links + 1}; gs_k++)"):
        w.line("__u32 gs_i = *(volatile __u32 *)(ev + gs_w);")
        w.line("__u32 gs_sp = *(volatile __u32 *)(ev + gs_w + 4);")
        with w.block("if (gs_p != 0)"):
            w.line(f"if (gs_i >= {links} || gs_sp >= {TREE_STACK})")
            w.line("    break;")
            w.line(f"__u32 gs_h = gs_first + gs_i * {stride};")
            w.line(f"gs_read_dump(ev, gs_h, gs_h + 16, {follow.cap}, gs_p, {follow.fixed});")
            w.line("if (GS_STATUS(ev, gs_h) != GS_STATUS_OK)")
            w.line("    break;")
            w.line("*(volatile __u16 *)(ev + gs_w + 8 + gs_sp * 2) = gs_i;")
            w.line("*(volatile __u32 *)(ev + gs_w) = gs_i + 1;")
            w.line("*(volatile __u32 *)(ev + gs_w + 4) = gs_sp + 1;")
            w.line(f"gs_p = *(__u64 *)(ev + gs_h + 16 + {follow.next_offset});")
        with w.block("else"):
            w.line(f"if (gs_sp == 0 || gs_sp > {TREE_STACK})")
            w.line("    break;")
            w.line("gs_sp -= 1;")
            w.line("__u32 gs_j = *(volatile __u16 *)(ev + gs_w + 8 + gs_sp * 2);")
            w.line(f"if (gs_j >= {links})")
            w.line("    break;")
            w.line("*(volatile __u32 *)(ev + gs_w + 4) = gs_sp;")
            w.line(f"gs_p = *(__u64 *)(ev + gs_first + gs_j * {stride} + 16 + "
                   f"{follow.right_offset});")


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
