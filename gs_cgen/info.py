"""`gs-cgen info`: probe sites and the variables visible at each, with
types, where they live and the block they are declared in. Patterns
resolve exactly as in `trace`, and the names of several sites are resolved
together as `trace` does (plan/scope.py): a site lists what is in scope
only at other sites. The frame a site sees is the one gdb stops in there
(dwarf/scopes.py); the frames around it are named, not listed."""
from __future__ import annotations

import os

from gs_cgen.dwarf.model import AtAddress, FrameScope, StaticAddress, describe_variable
from gs_cgen.dwarf.types import type_name
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.scope import NOT_IN_SCOPE, SiteScope, block_scopes, site_frame
from gs_cgen.plan.sites import resolve_sites
from gs_cgen.errors import GsError
from gs_cgen.script import ast
from gs_cgen.script.plain_pattern import plain_trace_block

_PATTERNS = {"function": ast.FunctionPattern, "line": ast.LinePattern,
             "address": ast.AddressPattern}
_EXAMPLES = {"function": "a function name", "line": "FILE:LINE",
             "address": "0xADDR or MODULE:0xADDR"}


def describe(modules: ModuleSet, kind: str, what: str) -> str:
    """`kind` is function, line or address; `what` its argument."""
    sites = _sites(modules, kind, what)
    frames = [site_frame(module, site) for module, site in sites]
    scopes = block_scopes(frames)
    by_name = kind == "function"
    return "\n\n".join(_describe_site(module, site, by_name, frame, scope)
                       for (module, site), frame, scope in zip(sites, frames, scopes))


def _sites(modules: ModuleSet, kind: str, what: str):
    if kind == "function" and _bare_operator(what):
        what = f"'{what}'"          # gdb's `break ns::C::operator[]`: the argument is the name
    block = plain_trace_block(what) or _parsed_block(what)
    if not isinstance(block.pattern, _PATTERNS[kind]):
        raise GsError(f"'{what}' is not a {kind}: expected {_EXAMPLES[kind]}")
    return resolve_sites(block, modules, first_probe_id=0)


def describe_data(modules: ModuleSet, kind: str, what: str) -> dict:
    """`describe` as data (`--output json`; docs/reference.md "gs-cgen info")."""
    from gs_cgen.render.info_json import site_json  # noqa: PLC0415
    sites = _sites(modules, kind, what)
    frames = [site_frame(module, site) for module, site in sites]
    scopes = block_scopes(frames)
    return {"kind": kind, "pattern": what,
            "sites": [site_json(module, site, frame, scope)
                      for (module, site), frame, scope in zip(sites, frames, scopes)]}


def describe_lines(modules: ModuleSet, what: str, as_json: bool) -> str | dict:
    """`function NAME --lines`: the availability map of each copy
    (plan/availability.py), as text or data."""
    from gs_cgen.plan.availability import function_map  # noqa: PLC0415
    from gs_cgen.render.availability import map_json, map_text  # noqa: PLC0415
    maps = [function_map(module, site) for module, site in _sites(modules, "function", what)]
    if as_json:
        return {"kind": "function", "pattern": what, "maps": [map_json(m) for m in maps]}
    return "\n\n".join(map_text(m) for m in maps)


def _bare_operator(what: str) -> bool:
    """A C++ operator's name as a shell argument (`Box::operator==`),
    which the script's pattern syntax takes only quoted."""
    return "operator" in what and not what.startswith("'") and "'" not in what


def _parsed_block(what: str):
    from gs_cgen.script.parser import parse  # noqa: PLC0415 — lark only for the rare spellings
    (block,) = parse(f"trace {what} {{ }}").traces
    return block


def _describe_site(module, site, by_name: bool, frame: FrameScope, scope: SiteScope) -> str:
    where = f"{site.source_file}:{site.source_line}" if site.source_file else "?"
    # A function typed as an alias, a version or an IFUNC: say what it is.
    aliased = by_name and site.function != site.pattern_text
    named = f"{site.pattern_text} -> {site.function_text}" if aliased else site.function_text
    lines = [f"{named} at {where}",
             f"  probe address 0x{site.address:x} (file offset 0x{site.file_offset:x}) "
             f"in {module.path}"]
    if site.no_variables:
        lines.append(f"  no parameters or locals: {site.no_variables}")
        return "\n".join(lines)
    if not frame.variables:
        lines.append("  no parameters or locals")
    for var in frame.variables:
        location = describe_variable(var, os.path.basename(module.path))
        if isinstance(var.location, (AtAddress, StaticAddress)):
            location += f" ({module.section_of(var.location.address)})"
        declared = f"  ({var.scope})" if var.scope else ""
        lines.append(f"  {var.kind.value:<9} {type_name(var.type)} {var.name}  @ {location}{declared}")
    lines.extend(_frame_notes(frame))
    if scope.elsewhere:
        # What a script naming them prints here (plan/scope.py).
        lines.append(f"  {NOT_IN_SCOPE}, in scope at another site (<OPTIMIZED_OUT> here): "
                     + ", ".join(scope.elsewhere))
    return "\n".join(lines)


def _frame_notes(frame: FrameScope) -> list[str]:
    """The frames gdb would not show here, by name (dwarf/scopes.py)."""
    notes = []
    if frame.inlined_into:
        notes.append(f"  inlined into {' < '.join(frame.inlined_into)}: a name not listed "
                     f"here is {frame.inlined_into[0]}'s at this PC (gdb's 'up')")
    for name in frame.hidden:
        notes.append(f"  inlined {name} begins here too: its variables are in scope at "
                     f"'trace {name}', not here (as with gdb's 'break')")
    return notes
