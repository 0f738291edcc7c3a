"""Which DWARF names a trace block can use at each of its sites.

A pattern may resolve to several sites (inlined copies, clones, a line in
several functions), and a variable may be in scope at some of them only:
each site sees the frame gdb would stop in there (dwarf/scopes.py), and
an inlined copy's frame is not its caller's, but a name that frame lacks
is the caller's at the same PC (gdb's `up`; FrameScope.outer).
The names are resolved across all sites of a block first; the per-site
planner then reads a name where it is in scope and renders it
`<OPTIMIZED_OUT>` ("not in scope at this site") where it is not. Only a
name in scope at no site at all is an error.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from gs_cgen.dwarf.model import FrameScope, VisibleVariable
from gs_cgen.lazydataclass import dataclass

NOT_IN_SCOPE = "not in scope at this site"


@dataclass(frozen=True)
class SiteScope:
    """The DWARF variables of one site of a block.

    `visible`: in scope here, the innermost one of each name.
    `elsewhere`: in scope at another site of the block, but not here (the
    variable of the first such site, for its type).
    `site_count`: how many sites the block has, for messages.
    `variables`: every variable in scope here, innermost block first,
    shadowed ones too (what `print $args;` / `print $locals;` list)."""

    visible: Mapping[str, VisibleVariable]
    elsewhere: Mapping[str, VisibleVariable]
    site_count: int = 1
    variables: tuple[VisibleVariable, ...] = ()

    def names(self) -> list[str]:
        """Every name the block may use here, for "did you mean"."""
        return [*self.visible, *self.elsewhere]


def site_frame(module, site) -> FrameScope:
    """The frame gdb would stop in at `site` (the probed function's, for a
    function pattern: dwarf/scopes.py) with its variables; none where DWARF
    describes no scopes at all (hand-written assembly: site.no_variables
    says so)."""
    if site.no_variables:
        return FrameScope(site.function, False, ())
    return module.frame_at(site.address, site.frame_die)


def site_scopes(sites) -> list[SiteScope]:
    """One SiteScope per (module, site) of a block (block_scopes)."""
    return block_scopes([site_frame(module, site) for module, site in sites])


def block_scopes(frames: Sequence[FrameScope]) -> list[SiteScope]:
    """One SiteScope per site, from the frame gdb selects at each: its
    variables (innermost scope first, as ModuleDebugInfo.variables_at
    lists them), then for names it lacks those of the frames it is inlined
    into."""
    visible = [_innermost([*frame.variables, *frame.outer]) for frame in frames]
    union: dict[str, VisibleVariable] = {}
    for names in visible:
        for name, variable in names.items():
            union.setdefault(name, variable)
    return [SiteScope(names, {n: v for n, v in union.items() if n not in names}, len(frames),
                      tuple(frame.variables))
            for names, frame in zip(visible, frames)]


def _innermost(variables: Sequence[VisibleVariable]) -> dict[str, VisibleVariable]:
    found: dict[str, VisibleVariable] = {}
    for variable in variables:
        found.setdefault(variable.name, variable)        # innermost scope wins
    return found
