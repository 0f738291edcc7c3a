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
inline_skipped_symbol).

C++ frames are named by their qualified name without parameters, as
gdb's `bt` prints them (`geo::Widget::area`, `geo::detail::scale<int>`,
`(anonymous namespace)::leaf`): gdb's physname is the demangled
DW_AT_linkage_name, and find_frame_funname drops its parameter list."""
from __future__ import annotations


from gs_cgen.cppnames import parse_cpp_name
from gs_cgen.elf.demangle import demangle
from gs_cgen.dwarf.index import DwarfIndex, die_name, inherited_attr, origin_having
from gs_cgen.dwarf.scopes import _frames, _scope_chain, _selected
from gs_cgen.lazydataclass import dataclass


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
        found.append(SourceFrame(frame_function_name(head), where[0], where[1], k > 0,
                                 head.offset))
        where = (call_file(head), _call_line(head))
    return found


def _call_line(die) -> int | None:
    attr = die.attributes.get("DW_AT_call_line")
    return attr.value if attr is not None else None


# DW_LANG_C_plus_plus, _03, _11, _14 (DWARF 5 section 7.12).
_CPP_LANGUAGES = frozenset({0x0004, 0x0019, 0x001A, 0x0021})


_RUST_LANGUAGE = 0x001C


def is_rust_cu(cu) -> bool:
    language = cu.get_top_DIE().attributes.get("DW_AT_language")
    return language is not None and language.value == _RUST_LANGUAGE


def frame_function_name(die) -> str | None:
    """The name gdb's `bt` gives the function or inlined call `die`."""
    name = die_name(die)
    language = die.cu.get_top_DIE().attributes.get("DW_AT_language")
    if language is not None and language.value == _RUST_LANGUAGE:
        # gdb names Rust functions by their DWARF path (rustc nests them
        # in their modules' namespaces): `main::process`,
        # `orders::{impl#1}::describe`, `main::{closure#0}`.
        declaration = origin_having(die, "DW_AT_name")
        return _scope_prefix(declaration) + name if declaration is not None and name else name
    if language is None or language.value not in _CPP_LANGUAGES:
        return name
    linkage = inherited_attr(die, "DW_AT_linkage_name")
    if linkage is not None:
        text = demangle(linkage.value.decode("utf-8", "replace")) if linkage.value else None
        parsed = parse_cpp_name(text) if text is not None else None
        if parsed is not None:
            return parsed.qualified
    # No linkage name (GCC gives none to a function in an anonymous
    # namespace, nor to main): the enclosing scopes of its declaration,
    # as gdb's dwarf2_compute_name.
    declaration = origin_having(die, "DW_AT_name")
    return _scope_prefix(declaration) + name if declaration is not None and name else name


_SCOPE_TAGS = frozenset({"DW_TAG_namespace", "DW_TAG_class_type", "DW_TAG_structure_type",
                         "DW_TAG_union_type"})


def _scope_prefix(die) -> str:
    scopes = []
    parent = die.get_parent()
    while parent is not None and parent.tag in _SCOPE_TAGS:
        scopes.append(die_name(parent) or "(anonymous namespace)"
                      if parent.tag == "DW_TAG_namespace" else die_name(parent) or "")
        parent = parent.get_parent()
    return "".join(f"{scope}::" for scope in reversed(scopes))
