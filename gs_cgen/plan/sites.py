"""Trace patterns → probe sites (module address and uprobe file offset)."""
from __future__ import annotations

from gs_cgen.errors import DebugInfoError, UnsupportedError
from gs_cgen.plan.model import ProbeSite
from gs_cgen.script import ast


def resolve_sites(block: ast.TraceBlock, module, first_probe_id: int) -> list[ProbeSite]:
    """Every address the block's pattern names in `module`, in address order."""
    try:
        found = _resolve(block, module)
    except DebugInfoError as exc:
        if exc.span is None:
            exc.span = block.pattern_span
        raise
    return [_site(block, module, first_probe_id + i, *where) for i, where in enumerate(found)]


def _resolve(block: ast.TraceBlock, module) -> list[tuple]:
    match block.pattern:
        case ast.FunctionPattern(name=name):
            return [(f.probe_address, f.name, f.decl_file, f.decl_line)
                    for f in sorted(module.find_functions(name), key=lambda f: f.probe_address)]
        case ast.LinePattern(file=file, line=line):
            return [(s.address, s.function, s.file, s.line)
                    for s in sorted(module.find_lines(file, line), key=lambda s: s.address)]
        case ast.AddressPattern():
            raise UnsupportedError("not supported yet: address trace patterns",
                                   block.pattern_span)
    raise TypeError(block.pattern)


def _site(block: ast.TraceBlock, module, probe_id: int, address: int,
          function: str | None, file: str | None, line: int | None) -> ProbeSite:
    return ProbeSite(probe_id=probe_id, pattern_text=block.pattern_text,
                     module_path=module.path, address=address,
                     file_offset=module.vaddr_to_file_offset(address), function=function,
                     source_file=file, source_line=line)
