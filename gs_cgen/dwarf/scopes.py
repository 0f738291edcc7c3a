"""Parameters and locals in scope at one PC.

Starting from the concrete DW_TAG_subprogram that holds the PC, descend
into every DW_TAG_lexical_block and DW_TAG_inlined_subroutine whose ranges
cover the PC (DWARF 5 sections 3.3.8 and 3.5). Variables of the innermost
scope come first, so the first match by name is the one C would see.

Each DW_TAG_inlined_subroutine starts a frame of its own (gdb's `bt` shows
it as one; `info scope` and `info locals` stop at it). The innermost
frame's variables are listed as gdb lists them; those of the frames it was
inlined into follow, minus the names an inner frame already has: C would
not see them, and a function inlined into itself (PyDict_SetItem,
__mmap64) would otherwise list every parameter twice.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from gs_cgen.dwarf.index import DwarfIndex, die_name, inherited_attr, origin_having
from gs_cgen.dwarf.locations import LocationReader, frame_base_from_ops, frame_base_label
from gs_cgen.dwarf.model import (LocationForm, OptimizedOut, UnsupportedLocation, VariableKind,
                                 VisibleVariable)
from gs_cgen.dwarf.typebuild import TypeBuilder

_SCOPE_TAGS = ("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine")
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


def visible_variables(ctx: ScopeContext, function_die, pc: int) -> list[VisibleVariable]:
    frame_base = _FrameBase(ctx, function_die, pc)
    out: list[VisibleVariable] = []
    for frame in reversed(_frames(_scope_chain(ctx.index, function_die, pc))):
        hidden = {v.name for v in out}
        for scope in reversed(frame):
            for child in scope.iter_children():
                variable = _variable(ctx, child, pc, frame_base)
                if variable is not None and variable.name not in hidden:
                    out.append(variable)
    return out


def variable_at(ctx: ScopeContext, function_die, die, pc: int) -> VisibleVariable | None:
    """One parameter or local DIE of `function_die`, located at `pc` as
    visible_variables locates it (None for DIEs that are not variables)."""
    return _variable(ctx, die, pc, _FrameBase(ctx, function_die, pc))


def locate_die(ctx: ScopeContext, function_die, die, pc: int):
    """The location at `pc` of any DIE with DW_AT_location or
    DW_AT_const_value (the artificial object an implicit pointer names)."""
    return ctx.locations.locate(die, pc, *_locate_args(_FrameBase(ctx, function_die, pc)))[0]


def _locate_args(frame_base: "_FrameBase") -> tuple:
    return frame_base, frame_base.cfa, frame_base.entry_pc


def _scope_chain(index: DwarfIndex, function_die, pc: int) -> list:
    """The function DIE, then each nested scope DIE covering `pc`."""
    chain = [function_die]
    while True:
        inner = _covering_child_scope(index, chain[-1], pc)
        if inner is None:
            return chain
        chain.append(inner)


def _frames(chain: list) -> list[list]:
    """`chain` cut before each DW_TAG_inlined_subroutine, outermost first."""
    frames: list[list] = []
    for scope in chain:
        if not frames or scope.tag == "DW_TAG_inlined_subroutine":
            frames.append([])
        frames[-1].append(scope)
    return frames


def _covering_child_scope(index: DwarfIndex, die, pc: int):
    for child in die.iter_children():
        if child.tag in _SCOPE_TAGS and any(lo <= pc < hi for lo, hi in index.die_ranges(child)):
            return child
        # A lexical block without ranges only groups declarations.
        if child.tag == "DW_TAG_lexical_block" and not index.die_ranges(child):
            found = _covering_child_scope(index, child, pc)
            if found is not None:
                return found
    return None


def _variable(ctx: ScopeContext, die, pc: int, frame_base: "_FrameBase") -> VisibleVariable | None:
    kind = _VARIABLE_KINDS.get(die.tag)
    if kind is None:
        return None
    name = die_name(die)
    if name is None or ("DW_AT_declaration" in die.attributes and "DW_AT_location" not in die.attributes):
        return None                   # unnamed temporaries, `extern` re-declarations
    typed = origin_having(die, "DW_AT_type") or die
    file_attr = inherited_attr(die, "DW_AT_decl_file")
    line_attr = inherited_attr(die, "DW_AT_decl_line")
    location, origin = ctx.locations.locate(die, pc, *_locate_args(frame_base))
    if origin.form is LocationForm.FRAME_OFFSET:
        origin = dataclasses.replace(origin, frame_base=frame_base.label)
    return VisibleVariable(
        name=name,
        type=ctx.types.type_of(typed),
        location=location,
        kind=kind,
        decl_file=ctx.decl_file(die.cu, file_attr.value) if file_attr is not None else None,
        decl_line=line_attr.value if line_attr is not None else None,
        origin=origin,
    )


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
        entries (dwarf/locations.py _select_entry)."""
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
