"""Parameters and locals in scope at one PC.

Starting from the concrete DW_TAG_subprogram that holds the PC, descend
into every DW_TAG_lexical_block and DW_TAG_inlined_subroutine whose ranges
cover the PC (DWARF 5 sections 3.3.8 and 3.5). Variables of the innermost
scope come first, so the first match by name is the one C would see.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gs_cgen.dwarf.index import DwarfIndex, die_name, inherited_attr, origin_having
from gs_cgen.dwarf.locations import FrameBase, LocationReader, frame_base_from_ops
from gs_cgen.dwarf.model import OptimizedOut, UnsupportedLocation, VariableKind, VisibleVariable
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
    chain = [function_die]
    while True:
        inner = _covering_child_scope(ctx.index, chain[-1], pc)
        if inner is None:
            break
        chain.append(inner)
    frame_base = _frame_base(ctx, function_die, pc)
    out: list[VisibleVariable] = []
    for scope in reversed(chain):
        for child in scope.iter_children():
            variable = _variable(ctx, child, pc, frame_base)
            if variable is not None:
                out.append(variable)
    return out


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


def _variable(ctx: ScopeContext, die, pc: int, frame_base: FrameBase) -> VisibleVariable | None:
    kind = _VARIABLE_KINDS.get(die.tag)
    if kind is None:
        return None
    name = die_name(die)
    if name is None or ("DW_AT_declaration" in die.attributes and "DW_AT_location" not in die.attributes):
        return None                   # unnamed temporaries, `extern` re-declarations
    typed = origin_having(die, "DW_AT_type") or die
    file_attr = inherited_attr(die, "DW_AT_decl_file")
    line_attr = inherited_attr(die, "DW_AT_decl_line")
    return VisibleVariable(
        name=name,
        type=ctx.types.type_of(typed),
        location=ctx.locations.variable_location(die, pc, frame_base),
        kind=kind,
        decl_file=ctx.decl_file(die.cu, file_attr.value) if file_attr is not None else None,
        decl_line=line_attr.value if line_attr is not None else None,
    )


def _frame_base(ctx: ScopeContext, function_die, pc: int) -> FrameBase:
    """A thunk: CFI is only consulted when a variable uses DW_OP_fbreg."""
    result: list = []

    def resolve():
        if not result:
            result.append(_compute_frame_base(ctx, function_die, pc))
        return result[0]
    return resolve


def _compute_frame_base(ctx: ScopeContext, function_die, pc: int):
    attr = function_die.attributes.get("DW_AT_frame_base")
    if attr is None:
        return UnsupportedLocation("DW_OP_fbreg without DW_AT_frame_base")
    expr = ctx.locations.expression_at(attr, function_die, pc)
    if expr is None:
        return OptimizedOut("frame base not available at this PC")
    ops = ctx.locations.parse_ops(expr, function_die.cu)
    return frame_base_from_ops(ops, lambda: ctx.cfa_at(pc))
