"""The source frames of one machine frame: the function at a PC and the
inlined calls inside it, as gdb's `bt` lists them (gdb/inline-frame.c).

Each DW_TAG_inlined_subroutine covering the PC is a frame of its own,
innermost first, the out-of-line function last. The innermost frame's
line is the line table's at the PC; each outer frame's is where the
inner one was inlined: the inner DIE's DW_AT_call_file / DW_AT_call_line.

In the probed frame gdb may skip inlined frames that begin at the PC
(dwarf/scopes.py `_selected`, skip_inline_frames); the frame it stops in
then takes the line of the call it has not entered yet: the outermost
skipped DIE's call site (gdb/frame.c find_frame_sal,
inline_skipped_symbol)."""
from __future__ import annotations

from dataclasses import dataclass

from gs_cgen.dwarf.index import DwarfIndex, die_name
from gs_cgen.dwarf.scopes import _frames, _scope_chain, _selected


@dataclass(frozen=True)
class SourceFrame:
    function: str | None
    file: str | None
    line: int | None
    inlined: bool
    die_offset: int | None = None      # the function's or the inlined instance's DIE


def source_frames(index: DwarfIndex, function_die, pc: int, pc_line: tuple[str | None, int | None],
                  call_file, frame_die: int | None = None,
                  skip_at_entry: bool = False) -> list[SourceFrame]:
    """Innermost first. `pc_line`: (file, line) of the line table at `pc`;
    `call_file(die)`: the path DW_AT_call_file names. With `skip_at_entry`
    (the probed frame), gdb's choice of the frame it stops in applies."""
    frames = _frames(_scope_chain(index, function_die, pc))
    heads = [scope[0] for scope in frames]                 # outermost first
    selected = _selected(index, frames, pc, frame_die) if skip_at_entry else len(heads) - 1
    if selected < len(heads) - 1:
        skipped = heads[selected + 1]                      # the outermost skipped call
        where = (call_file(skipped), _call_line(skipped))
    else:
        where = pc_line
    found = []
    for k in range(selected, -1, -1):
        head = heads[k]
        found.append(SourceFrame(die_name(head), where[0], where[1], k > 0, head.offset))
        where = (call_file(head), _call_line(head))
    return found


def _call_line(die) -> int | None:
    attr = die.attributes.get("DW_AT_call_line")
    return attr.value if attr is not None else None
