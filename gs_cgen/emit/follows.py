"""C for a DeepCapture's pointer chases (plan/follows.py): after the root
object is in the slot, each follow walks the elements of its source with
bounded loops and reads, for each, the bytes its pointer and length
select into a sub-slot of its own (gs_read_dump: status, requested
length, address, data). The sub-slots of a source element that was not
read (its sub-slot failed, or lies past what it read) are left as they
are: render/rust.py never decodes them, as it shows only what was read."""
from __future__ import annotations

from gs_cgen.emit import c
from gs_cgen.emit.writer import CWriter
from gs_cgen.plan.model import DeepCapture, FollowRead, ValueSlot


def emit_follows(w: CWriter, slot: ValueSlot, capture: DeepCapture) -> None:
    base = slot.data_offset + capture.follows_offset
    for index, follow in enumerate(capture.follows):
        w.line(c.comment(f"follow {index}: the data behind a pointer "
                         f"(source {'root' if follow.source is None else follow.source})"))
        if follow.source is None:
            _root_sourced(w, base, slot.data_offset, follow)
        else:
            _follow_sourced(w, base, capture.follows[follow.source], follow)


def _root_sourced(w: CWriter, base: int, root: int, follow: FollowRead) -> None:
    with w.block():
        w.line(f"__u32 gs_h = {base + follow.offset};")
        _read(w, str(root), follow)


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
            w.line(f"__u32 gs_h = {base + follow.offset} + "
                   f"(gs_r * {elements} + gs_e) * {follow.stride};")
            _read(w, f"gs_sh + 16 + gs_e * {follow.element_size}", follow)


def _read(w: CWriter, element: str, follow: FollowRead) -> None:
    """The read of one sub-slot at gs_h, from the source element at `element`."""
    w.line(f"__u64 gs_p = *(__u64 *)(ev + {element} + {follow.pointer_offset}) "
           f"+ {follow.pointer_add};")
    if follow.length_offset is None:
        w.line(f"__s64 gs_n = {follow.fixed};")
    else:
        count = f"*(__u64 *)(ev + {element} + {follow.length_offset})"
        w.line(f"__s64 gs_n = (__s64)(({count} + {follow.length_add}) * {follow.scale});")
        # a garbage count must not wrap to a small positive request
        w.line(f"if ({count} > 0x7fffffff) gs_n = 0x7fffffff;")
    if follow.backwards:
        w.line(f"gs_p -= gs_n > {follow.cap} ? {follow.cap} : (gs_n < 0 ? 0 : gs_n);")
    w.line(f"gs_read_dump(ev, gs_h, gs_h + 16, {follow.cap}, gs_p, gs_n);")
