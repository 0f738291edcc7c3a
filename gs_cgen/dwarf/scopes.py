"""Parameters and locals in scope at one PC, as gdb 13 shows them when it
stops at a breakpoint there.

Blocks (gdb/dwarf2/read.c read_func_scope, read_lexical_block_scope): the
DW_TAG_subprogram holding the PC, then each DW_TAG_lexical_block and
DW_TAG_inlined_subroutine whose addresses (DW_AT_low_pc/high_pc or
DW_AT_ranges, DWARF 5 section 2.17) cover it. A lexical block with no
address attributes only groups declarations: its children belong to the
enclosing block. A lexical block whose addresses are all invalid (empty,
or 0 where the linker discarded the code) is dropped with its children,
and so is an inlined subroutine without valid addresses or name.

A block's variables are its DW_TAG_formal_parameter and DW_TAG_variable
children, and the children of its DW_AT_abstract_origin that none of its
own children refers to (gdb inherit_abstract_dies; DWARF 5 section
3.3.8.2): a concrete instance leaves out what the compiler dropped, and
gdb lists those as <optimized out>.

Frames: each DW_TAG_inlined_subroutine starts a frame of its own (gdb's
`bt` shows it as one). A name resolves in the selected frame first,
innermost block first; gdb's lookup_local_symbol stops at an inlined
function's block, so in a frame inlined into `bump`, `print before` (a
local of bump) is "No symbol in current context" until `up` selects bump's
frame, at the same PC. gs-cgen then looks in the frames the selected one is
inlined into, innermost out (FrameScope.outer), and reads `before` as gdb
prints it after `up` (an entry value, `<optimized out>`): GhostScope's
scripts name the caller's variables there. `$args` / `$locals` stay the
selected frame's (`info args` / `info locals`).

The frame gdb selects when it stops at a breakpoint (gdb/inline-frame.c
skip_inline_frames, stopped_by_user_bp_inline_frame): walking out from the
innermost block, an inlined block that begins at the PC is skipped — its
entry (the start of its first range: gdb 13 ignores DW_AT_entry_pc) is the
PC, or the address before the PC is outside it — unless it is the block of
the function the breakpoint names; the walk stops at the first inlined
block that does not begin at the PC, or at the function. So:

  - `trace F`, F's out-of-line copy: F's frame, even when an inlined call
    begins at F's first instruction. Lua's luaH_getint and the inlined
    checkrange both have a `k`; `print k` there is luaH_getint's.
  - `trace F`, an inlined copy of F: that copy's frame (inlined calls that
    begin at the same PC inside it are skipped).
  - `FILE:LINE` and `0xADDR`: the innermost frame at the PC (gdb takes the
    innermost function there as the breakpoint's symbol). A line that is a
    function's first, moved past the prologue, selects that function.

The caller says which: `frame_die`, the DIE offset of the function or
inlined instance the probe is for, or None for the innermost.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from gs_cgen.dwarf.index import DwarfIndex, die_name, inherited_attr, origin_having
from gs_cgen.dwarf.location.reader import LocationReader, frame_base_from_ops, frame_base_label
from gs_cgen.dwarf.model import (ArrayBound, FrameScope, LocationForm, OptimizedOut,
                                 UnsupportedLocation, VariableKind, VisibleVariable)
from gs_cgen.dwarf.typebuild import TypeBuilder
from gs_cgen.lazydataclass import dataclass

_LEXICAL = "DW_TAG_lexical_block"
_INLINED = "DW_TAG_inlined_subroutine"
_CALL_SITES = ("DW_TAG_call_site", "DW_TAG_GNU_call_site")
_VARIABLE_KINDS = {
    "DW_TAG_formal_parameter": VariableKind.PARAMETER,
    "DW_TAG_variable": VariableKind.LOCAL,
}


@dataclass
class ScopeContext:
    """What resolving variables needs from the module."""

    index: DwarfIndex
    types: TypeBuilder
    locations: LocationReader
    cfa_at: Callable[[int], "tuple[int, int] | object"]     # pc -> (reg, off) | VariableLocation
    decl_file: Callable[[object, int], str | None]          # (cu, DWARF file index) -> path
    line_at: Callable[[object, int], int | None] = lambda cu, address: None  # (cu, pc) -> line


def frame_scope(ctx: ScopeContext, function_die, pc: int, frame_die: int | None = None,
                exact: bool = False) -> FrameScope:
    """The frame gdb selects at `pc` for a probe on `frame_die` (None: the
    innermost), and its variables; see the module docstring. With `exact`,
    the frame whose DIE is `frame_die` itself (a backtrace's frame)."""
    frames = _frames(_scope_chain(ctx.index, function_die, pc))
    k = _selected(ctx.index, frames, pc, frame_die)
    if exact:
        k = next((i for i, f in enumerate(frames) if f[0].offset == frame_die), k)
    frame_base = _FrameBase(ctx, function_die, pc)
    head = frames[k][0]
    outer = [v for frame in reversed(frames[:k])
             for v in _frame_variables(ctx, frame, pc, frame_base)]
    return FrameScope(function=die_name(head), inlined=k > 0,
                      variables=tuple(_frame_variables(ctx, frames[k], pc, frame_base)),
                      inlined_into=tuple(die_name(f[0]) or "?" for f in reversed(frames[:k])),
                      hidden=tuple(die_name(f[0]) or "?" for f in reversed(frames[k + 1:])),
                      outer=tuple(outer))


def _frame_variables(ctx: ScopeContext, frame: list, pc: int,
                     frame_base: "_FrameBase") -> list[VisibleVariable]:
    """The variables of one frame's blocks at `pc`, innermost block first."""
    variables = []
    for scope in reversed(frame):
        dies = block_variables(ctx.index, scope)
        label = _scope_label(ctx, scope, frame[0], dies)
        for die in dies:
            variable = _variable(ctx, die, pc, frame_base, label)
            if variable is not None:
                variables.append(variable)
    return variables


def variable_at(ctx: ScopeContext, function_die, die, pc: int) -> VisibleVariable | None:
    """One parameter or local DIE of `function_die`, located at `pc` as
    frame_scope locates it (None for DIEs that are not variables)."""
    return _variable(ctx, die, pc, _FrameBase(ctx, function_die, pc), None)


def locate_die(ctx: ScopeContext, function_die, die, pc: int):
    """The location at `pc` of any DIE with DW_AT_location or
    DW_AT_const_value (the artificial object an implicit pointer names)."""
    return ctx.locations.locate(die, pc, *_locate_args(_FrameBase(ctx, function_die, pc)))[0]


def _locate_args(frame_base: "_FrameBase") -> tuple:
    return frame_base, frame_base.cfa, frame_base.entry_pc


# ------------------------------------------------------------- the tree

def _scope_chain(index: DwarfIndex, function_die, pc: int) -> list:
    """The function DIE, then each nested scope DIE covering `pc`."""
    chain = [function_die]
    while True:
        inner = _covering_child_scope(index, chain[-1], pc)
        if inner is None:
            return chain
        chain.append(inner)


def _covering_child_scope(index: DwarfIndex, die, pc: int):
    for child in die.iter_children():
        if child.tag not in (_LEXICAL, _INLINED):
            continue
        bounds = index.pc_bounds(child)
        if bounds is None:
            if child.tag == _LEXICAL:          # declarations only: look inside
                found = _covering_child_scope(index, child, pc)
                if found is not None:
                    return found
            continue
        if any(lo <= pc < hi for lo, hi in bounds) and \
                (child.tag == _LEXICAL or die_name(child) is not None):
            return child                       # gdb ignores unnamed functions
    return None


def _frames(chain: list) -> list[list]:
    """`chain` cut before each DW_TAG_inlined_subroutine, outermost first."""
    frames: list[list] = []
    for scope in chain:
        if not frames or scope.tag == _INLINED:
            frames.append([])
        frames[-1].append(scope)
    return frames


def _selected(index: DwarfIndex, frames: list[list], pc: int, frame_die: int | None) -> int:
    """Which of `frames` gdb stops in (skip_inline_frames)."""
    if frame_die is None:
        return len(frames) - 1
    for k in range(len(frames) - 1, 0, -1):
        head = frames[k][0]
        if head.offset == frame_die or not _begins_at(index, head, pc):
            return k
    return 0


def _begins_at(index: DwarfIndex, block, pc: int) -> bool:
    """gdb: BLOCK_ENTRY_PC (block) == pc || block_starting_point_at (pc, block)."""
    ranges = index.die_ranges(block)
    return ranges[0][0] == pc or not any(lo <= pc - 1 < hi for lo, hi in ranges)


def block_variables(index: DwarfIndex, scope) -> list:
    """The variable DIEs gdb puts in `scope`'s block: its own, those of
    address-less lexical blocks in it, then those its abstract origin has
    and none of its children stands for."""
    found: list = []
    origin = _reference(scope, "DW_AT_abstract_origin")
    referenced: set[int] | None = set() if origin is not None else None
    _own_variables(index, scope, found, referenced)
    if origin is not None:
        for child in index.die_at(origin).iter_children():
            if child.offset not in referenced:
                _abstract_variables(child, found)
    return found


def _own_variables(index: DwarfIndex, scope, found: list, referenced: set[int] | None) -> None:
    """`referenced` collects the abstract DIEs the children stand for (None:
    not wanted, the scope has no abstract origin)."""
    for child in scope.iter_children():
        if child.tag in _CALL_SITES:
            continue
        if referenced is not None:
            origin = _final_origin(child)
            if origin is not None:
                referenced.add(origin)
        if child.tag in _VARIABLE_KINDS:
            found.append(child)
        elif child.tag == _LEXICAL and index.pc_bounds(child) is None:
            # Only direct children count as standing for abstract ones.
            _own_variables(index, child, found, None)


def _abstract_variables(die, found: list) -> None:
    # An abstract lexical block has no addresses: its variables are the
    # enclosing block's (gdb processes it as if unwrapped).
    if die.tag in _VARIABLE_KINDS:
        found.append(die)
    elif die.tag == _LEXICAL and "DW_AT_ranges" not in die.attributes \
            and "DW_AT_low_pc" not in die.attributes:
        for child in die.iter_children():
            _abstract_variables(child, found)


def _final_origin(die) -> int | None:
    """The last DIE of a DW_AT_abstract_origin chain (GCC PR 40573 made
    chains longer than one)."""
    offset = None
    for _ in range(4):
        if "DW_AT_abstract_origin" not in die.attributes:
            return offset
        die = die.get_DIE_from_attribute("DW_AT_abstract_origin")
        offset = die.offset
    return offset


def _reference(die, name: str) -> int | None:
    """The absolute .debug_info offset a reference attribute points at."""
    attr = die.attributes.get(name)
    if attr is None:
        return None
    return attr.value if attr.form == "DW_FORM_ref_addr" else attr.value + die.cu.cu_offset


def _scope_label(ctx: ScopeContext, scope, head, variables: list) -> str | None:
    """How `gs-cgen info` names the block a variable is declared in. A
    lexical block is named by the first line its declarations are on (in
    optimized code its first instruction may belong to any line), else by
    the line of its entry."""
    if scope is head:
        return f"inlined {die_name(scope)}" if scope.tag == _INLINED else None
    lines = [attr.value for attr in (inherited_attr(v, "DW_AT_decl_line") for v in variables)
             if attr is not None]
    if not lines:
        ranges = ctx.index.die_ranges(scope)
        lines = [line for line in [ctx.line_at(scope.cu, ranges[0][0]) if ranges else None] if line]
    return f"block at line {min(lines)}" if lines else "block"


# ------------------------------------------------------------ variables

def _variable(ctx: ScopeContext, die, pc: int, frame_base: "_FrameBase",
              scope: str | None) -> VisibleVariable | None:
    kind = _VARIABLE_KINDS.get(die.tag)
    if kind is None:
        return None
    name = die_name(die)
    if name is None or ("DW_AT_declaration" in die.attributes and "DW_AT_location" not in die.attributes):
        return None                   # unnamed temporaries, `extern` re-declarations
    typed = origin_having(die, "DW_AT_type") or die
    # An abstract origin may be in another CU, with its own file table.
    file_owner = origin_having(die, "DW_AT_decl_file")
    line_attr = inherited_attr(die, "DW_AT_decl_line")
    # gdb's dwarf2_attr follows the origin for these too; a constant wins.
    located = origin_having(die, "DW_AT_const_value") or origin_having(die, "DW_AT_location") or die
    location, origin = ctx.locations.locate(located, pc, *_locate_args(frame_base))
    if origin.form is LocationForm.FRAME_OFFSET:
        origin = dataclasses.replace(origin, frame_base=frame_base.label)
    return VisibleVariable(
        name=name,
        type=ctx.types.type_of(typed),
        location=location,
        kind=kind,
        decl_file=ctx.decl_file(file_owner.cu, file_owner.attributes["DW_AT_decl_file"].value)
        if file_owner is not None else None,
        decl_line=line_attr.value if line_attr is not None else None,
        origin=origin,
        scope=scope,
    )


def array_bound(ctx: ScopeContext, function_die, subrange_die, pc: int) -> ArrayBound | None:
    """Where the bound of a VLA dimension is at `pc` in `function_die`'s
    frame; None for a bound in a form this does not read."""
    attrs = subrange_die.attributes
    name = "DW_AT_count" if "DW_AT_count" in attrs else "DW_AT_upper_bound"
    attr = attrs.get(name)
    if attr is None:
        return None
    if attr.form.startswith("DW_FORM_ref") and attr.form != "DW_FORM_ref_addr":
        located, computed = ctx.index.die_at(attr.value + subrange_die.cu.cu_offset), False
    elif attr.form == "DW_FORM_exprloc":
        located, computed = _BoundExpression(subrange_die, attr), True
    else:
        return None
    frame_base = _FrameBase(ctx, function_die, pc)
    location, _ = ctx.locations.locate(located, pc, *_locate_args(frame_base))
    lower = attrs.get("DW_AT_lower_bound")
    lowest = lower.value if lower is not None and isinstance(lower.value, int) else 0
    return ArrayBound(location, lowest, name == "DW_AT_count", computed)


class _BoundExpression:
    """A subrange's bound expression, located as a variable's DW_AT_location
    is (LocationReader reads `attributes` and `cu`)."""

    def __init__(self, subrange_die, attr) -> None:
        self.attributes = {"DW_AT_location": attr}
        self.cu, self.offset, self.tag = subrange_die.cu, subrange_die.offset, subrange_die.tag


class _FrameBase:
    """DW_AT_frame_base at one PC, resolved on first call: CFI is only
    consulted when a variable uses DW_OP_fbreg. `label` then names what it
    is relative to ("CFA", "rbp") for `gs-cgen info`."""

    def __init__(self, ctx: ScopeContext, function_die, pc: int) -> None:
        self._ctx, self._die, self._pc = ctx, function_die, pc
        self._value = None
        self.label: str | None = None

    def cfa(self):
        return self._ctx.cfa_at(self._pc)

    @property
    def entry_pc(self) -> int | None:
        """The function's entry: where gdb applies empty location-list
        entries (dwarf/location/reader.py _select_entry)."""
        attr = self._die.attributes.get("DW_AT_entry_pc")
        if attr is not None and attr.form == "DW_FORM_addr":
            return attr.value
        ranges = self._ctx.index.die_ranges(self._die)
        return ranges[0][0] if ranges else None

    def __call__(self):
        if self._value is None:
            self._value = self._compute()
        return self._value

    def _compute(self):
        ctx, die, pc = self._ctx, self._die, self._pc
        attr = die.attributes.get("DW_AT_frame_base")
        if attr is None:
            return UnsupportedLocation("DW_OP_fbreg without DW_AT_frame_base")
        expr = ctx.locations.expression_at(attr, die, pc)
        if expr is None:
            return OptimizedOut("frame base not available at this PC")
        if isinstance(expr, UnsupportedLocation):
            return expr
        ops = ctx.locations.parse_ops(expr, die.cu)
        if isinstance(ops, UnsupportedLocation):
            return ops
        self.label = frame_base_label(ops)
        return frame_base_from_ops(ops, lambda: ctx.cfa_at(pc))


# ------------------------------------------------------------- blocks

# Children that give a lexical block a symbol of its own besides variables
# (gdb/dwarf2/read.c new_symbol; process_die for imported declarations).
_SYMBOL_TAGS = frozenset({
    "DW_TAG_label", "DW_TAG_typedef", "DW_TAG_structure_type", "DW_TAG_union_type",
    "DW_TAG_class_type", "DW_TAG_enumeration_type", "DW_TAG_subprogram",
})
_USING_TAGS = frozenset({"DW_TAG_imported_declaration", "DW_TAG_imported_module"})


def gdb_block_at(index: DwarfIndex, function_die, pc: int) -> int:
    """The DIE offset of gdb's innermost block at `pc` in `function_die`
    (gdb's block_for_pc). gdb makes a block of the function, of every
    inlined call, and of a lexical block only when something is declared
    in it (read_lexical_block_scope: "if local symbols ... finish_block");
    the addresses of a lexical block that declares nothing belong to the
    enclosing block."""
    for scope in reversed(_scope_chain(index, function_die, pc)):
        if scope.tag != _LEXICAL or _declares_something(index, scope):
            return scope.offset
    return function_die.offset


def _declares_something(index: DwarfIndex, scope) -> bool:
    if block_variables(index, scope):
        return True
    return any(_makes_symbol(child) for child in scope.iter_children())


def _makes_symbol(child) -> bool:
    if child.tag in _USING_TAGS:               # a C++ using directive
        return True
    # Unnamed types make no symbol; an unnamed enum's enumerators do.
    return child.tag in _SYMBOL_TAGS and (die_name(child) is not None or (
        child.tag == "DW_TAG_enumeration_type" and child.has_children))
