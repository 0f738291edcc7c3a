"""The availability map (`gs-cgen info -t BIN function NAME --lines`,
CONTRACT.md "Availability map"): for each source line of a function that
has a probe address, which of the function's variables a probe there
reads, and how.

The addresses are the ones `trace FILE:LINE` probes (dwarf/lines.py), and
each address sees the frame a probe there sees (plan/scope.py), so the map
says exactly what `trace FILE:LINE { print $locals; }` would print: a
variable is readable (`✓`) where it is in scope and located, optimized
out or not in scope (`·`) elsewhere, and partly readable (`~`) where some
of its pieces are optimized out or it is readable at some but not all of
the line's addresses. Lines where the probe stops in an inlined call's
frame list that frame: the function's own variables are not in scope
there (as in gdb).
"""
from __future__ import annotations


from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, CallSiteValue, Composite,
                                 ComputedAddress, ComputedValue, ImplicitBytes, ImplicitValue,
                                 InRegister, OptimizedOut, StaticAddress, SyntheticPointer,
                                 ThreadLocal, UnsupportedLocation, VariableKind, VisibleVariable,
                                 describe_variable, register_name)
from gs_cgen.dwarf.types import type_name
from gs_cgen.lazydataclass import dataclass

READABLE, PARTLY, UNAVAILABLE = "readable", "partly", "unavailable"
MARKS = {READABLE: "✓", PARTLY: "~", UNAVAILABLE: "·"}
NOT_IN_SCOPE = "not in scope"


@dataclass(frozen=True)
class Column:
    """One variable of the function (a shadowed name is its own column)."""

    name: str
    kind: str                  # "parameter" | "local"
    type: str
    decl_line: int | None
    scope: str | None          # "block at line 40", None: the function's own scope


@dataclass(frozen=True)
class AtAddressCell:
    address: int
    status: str
    how: str                   # short: "rdi", "[rbp-20]", "const", "entry", ...
    location: str              # describe_variable's full text, or NOT_IN_SCOPE


@dataclass(frozen=True)
class Cell:
    status: str                # READABLE, PARTLY, UNAVAILABLE over the line's addresses
    how: str
    at: tuple[AtAddressCell, ...]

    @property
    def mark(self) -> str:
        return MARKS[self.status]


@dataclass(frozen=True)
class LineRow:
    file: str
    line: int
    addresses: tuple[int, ...]
    cells: tuple[Cell, ...]    # one per Column
    frame: str | None = None   # "inlined NAME": the probe stops in that frame here


@dataclass(frozen=True)
class FunctionMap:
    function: str
    module_path: str
    entry_address: int         # the function probe's address
    columns: tuple[Column, ...]
    rows: tuple[LineRow, ...]
    note: str | None = None    # why there are no rows
    file: str | None = None    # the source file whose lines the rows are
    other_files: tuple[str, ...] = ()   # files of code inlined into it, left out


def function_map(module, site) -> FunctionMap:
    """The map of the function probed at `site` (a ProbeSite of a function
    pattern) in `module`."""
    if site.no_variables:
        return FunctionMap(site.function_text, module.path, site.address, (), (),
                           f"no parameters or locals: {site.no_variables}")
    own = module.frame_at(site.address, site.frame_die)
    if own.inlined:
        return FunctionMap(site.function_text, module.path, site.address, (), (),
                           "an inlined copy: its lines are its caller's (map the caller)")
    ranges, lines = module.function_source_lines(site.address)
    # The function's own file: the lines a user writes `trace FILE:LINE`
    # for; code inlined from other files (headers) is left out, and named.
    own_file = site.source_file
    others = tuple(sorted({file for file, _ in lines if file != own_file}))
    if any(file == own_file for file, _ in lines):
        lines = [(file, line) for file, line in lines if file == own_file]
    else:
        others = ()
    probed = []                                      # (file, line, [(address, frame)])
    for file, line in lines:
        sites = [s for s in module.find_lines(file, line)
                 if s.line == line and any(lo <= s.address < hi for lo, hi in ranges)]
        if sites:
            probed.append((file, line, [(s.address, module.frame_at(s.address, s.frame_die))
                                        for s in sites]))
    function = own.function
    columns, keys = _columns(own.variables, [frame for _, _, found in probed
                                             for _, frame in found
                                             if frame.function == function and not frame.inlined])
    rows = tuple(_row(file, line, found, keys, function) for file, line, found in probed)
    return FunctionMap(site.function_text, module.path, site.address, columns, rows,
                       None if rows else "no line of the function has a probe address",
                       own_file, others)


def _key(variable: VisibleVariable) -> tuple:
    return variable.name, variable.decl_file, variable.decl_line, variable.kind


def _columns(entry_variables, frames) -> tuple[tuple[Column, ...], list[tuple]]:
    """Every parameter and local seen at any of the function's addresses:
    parameters in declaration order, then locals by declaration line."""
    seen: dict[tuple, VisibleVariable] = {}
    for variable in entry_variables:
        seen.setdefault(_key(variable), variable)
    for frame in frames:
        for variable in frame.variables:
            seen.setdefault(_key(variable), variable)
    parameters = [k for k, v in seen.items() if v.kind is VariableKind.PARAMETER]
    locals_ = sorted((k for k, v in seen.items() if v.kind is VariableKind.LOCAL),
                     key=lambda k: (k[2] or 0, k[0]))
    keys = parameters + locals_
    columns = tuple(Column(seen[k].name, seen[k].kind.value, type_name(seen[k].type),
                           seen[k].decl_line, seen[k].scope) for k in keys)
    return columns, keys


def _row(file: str, line: int, found, keys, function) -> LineRow:
    other = next((frame for _, frame in found
                  if frame.function != function or frame.inlined), None)
    cells = []
    for key in keys:
        at = []
        for address, frame in found:
            variable = next((v for v in frame.variables if _key(v) == key), None) \
                if frame.function == function and not frame.inlined else None
            at.append(_at(address, variable))
        cells.append(_combine(tuple(at)))
    note = f"inlined {other.function}" if other is not None else None
    return LineRow(file, line, tuple(address for address, _ in found), tuple(cells), note)


def _at(address: int, variable: VisibleVariable | None) -> AtAddressCell:
    if variable is None:
        return AtAddressCell(address, UNAVAILABLE, NOT_IN_SCOPE, NOT_IN_SCOPE)
    status, how = classify(variable.location)
    return AtAddressCell(address, status, how, describe_variable(variable))


def _combine(at: tuple[AtAddressCell, ...]) -> Cell:
    statuses = {cell.status for cell in at}
    hows = list(dict.fromkeys(cell.how for cell in at if cell.status != UNAVAILABLE)) or \
        list(dict.fromkeys(cell.how for cell in at))
    status = statuses.pop() if len(statuses) == 1 else PARTLY
    return Cell(status, "/".join(hows), at)


def classify(location) -> tuple[str, str]:
    """(status, how) of one resolved location (dwarf/model.py)."""
    match location:
        case InRegister(reg, 0):
            return READABLE, register_name(reg)
        case InRegister(reg, off):
            return READABLE, f"{register_name(reg)}{off:+d}"
        case AtRegisterOffset(reg, off):
            return READABLE, f"[{register_name(reg)}{off:+d}]"
        case AtAddress() | StaticAddress():
            return READABLE, "static"
        case ThreadLocal():
            return READABLE, "tls"
        case ImplicitValue() | ImplicitBytes():
            return READABLE, "const"
        case CallSiteValue():
            return READABLE, "entry"
        case ComputedValue(expression=e) | ComputedAddress(expression=e):
            return READABLE, "entry" if _uses_entry(e.tree) else "computed"
        case SyntheticPointer():
            return READABLE, "synthetic"
        case Composite(pieces=pieces):
            gone = [isinstance(p.location, OptimizedOut) for p in pieces]
            if all(gone):
                return UNAVAILABLE, "optimized out"
            return (PARTLY if any(gone) else READABLE), "pieces"
        case OptimizedOut():
            return UNAVAILABLE, "optimized out"
        case UnsupportedLocation():
            return UNAVAILABLE, "unsupported"
    return UNAVAILABLE, type(location).__name__


def _uses_entry(tree) -> bool:
    if not isinstance(tree, tuple):
        return False
    return tree[0] in ("entry", "param") or any(_uses_entry(t) for t in tree[1:])
