"""`gs-cgen info --output json` for the function, line and address forms:
the facts the text lists, one object per probe site (docs/reference.md "gs-cgen info
--output json")."""
from __future__ import annotations

import os

from gs_cgen.dwarf.model import AtAddress, StaticAddress, describe_variable
from gs_cgen.dwarf.types import type_name
from gs_cgen.plan.availability import classify


def site_json(module, site, frame, scope) -> dict:
    variables = []
    for var in frame.variables:
        status, how = classify(var.location)
        entry = {"name": var.name, "kind": var.kind.value, "type": type_name(var.type),
                 "status": status, "how": how,
                 "location": describe_variable(var, os.path.basename(module.path)),
                 "scope": var.scope, "decl_line": var.decl_line}
        if isinstance(var.location, (AtAddress, StaticAddress)):
            entry["section"] = module.section_of(var.location.address)
        variables.append(entry)
    return {"pattern": site.pattern_text, "function": site.function_text,
            "file": site.source_file, "line": site.source_line,
            "address": site.address, "file_offset": site.file_offset, "module": module.path,
            "no_variables": site.no_variables, "variables": variables,
            "inlined_into": list(frame.inlined_into), "hidden_inlined": list(frame.hidden),
            "elsewhere": list(scope.elsewhere)}
