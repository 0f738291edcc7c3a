"""`gs-cgen info`: probe sites and the variables visible at each, with
types and where they live."""
from __future__ import annotations

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import AtAddress, describe_location
from gs_cgen.dwarf.types import type_name
from gs_cgen.errors import GsError, UnsupportedError


def describe(module_path: str, kind: str, what: str) -> str:
    module = open_module(module_path)
    module.require_debug_info()
    sites = _sites(module, kind, what)
    blocks = [_describe_site(module, *site) for site in sites]
    return "\n\n".join(blocks)


def _sites(module, kind: str, what: str) -> list[tuple[str, int]]:
    if kind == "function":
        return [(f"{f.name} at {f.decl_file}:{f.decl_line}", f.probe_address)
                for f in module.find_functions(what)]
    if kind == "line":
        file, _, line = what.rpartition(":")
        if not file or not line.isdigit():
            raise GsError(f"expected FILE:LINE, got '{what}'")
        return [(f"{s.file}:{s.line} in {s.function or '?'}", s.address)
                for s in module.find_lines(file, int(line))]
    raise UnsupportedError("not supported yet: info address")


def _describe_site(module, title: str, address: int) -> str:
    offset = module.vaddr_to_file_offset(address)
    lines = [f"{title}", f"  probe address 0x{address:x} (file offset 0x{offset:x}) in {module.path}"]
    variables = module.variables_at(address)
    if not variables:
        lines.append("  no parameters or locals")
    for var in variables:
        where = describe_location(var.location)
        if isinstance(var.location, AtAddress):
            where += f" ({module.section_of(var.location.address)})"
        lines.append(f"  {var.kind.value:<9} {type_name(var.type)} {var.name}  @ {where}")
    return "\n".join(lines)
