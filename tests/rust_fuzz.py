"""Every function of a Rust binary, through the planner.

For each function with code in a Rust CU (std's included, from the
binary's own DWARF), at its probe address: the scope walk
(ModuleDebugInfo.variables_at), then `print v;` of each visible variable
through plan_probe -> emit_program -> decode -> plain and JSON rendering
of an event whose every value read fine (tests/locations_fuzz.py
_event_bytes). Any exception is an internal error; the typed outcomes
(values read, unavailable, unsupported) are counted.

Run directly for the numbers: `python -m tests.rust_fuzz PATH...`.
"""
from __future__ import annotations

import collections
import sys
import time
import traceback
from dataclasses import dataclass, field

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.inline import is_rust_cu
from gs_cgen.emit.program import emit_program
from gs_cgen.errors import GsError
from gs_cgen.plan.probe import plan_probe
from gs_cgen.plan.model import NoCapture, Plan, ProbeSite
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.scope import SiteScope
from gs_cgen.render.decode import decode
from gs_cgen.render.lines import render_json, render_lines
from gs_cgen.script.parser import parse
from tests.locations_fuzz import _OPTIONS, _SCRIPT, _event_bytes


@dataclass
class Summary:
    path: str
    functions: int = 0
    variables: int = 0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    internal: list = field(default_factory=list)
    seconds: float = 0.0

    def report(self, top: int = 20) -> str:
        lines = [f"{self.path}: {self.functions} functions, {self.variables} variables, "
                 f"{len(self.internal)} internal errors, {self.seconds:.1f} s"]
        lines += [f"  {count:6d}  {outcome}" for outcome, count in self.outcomes.most_common(top)]
        lines += [f"  INTERNAL {where}: {error}\n      {frame}"
                  for where, error, frame in self.internal[:top]]
        return "\n".join(lines)


def fuzz(path: str, limit: int | None = None) -> Summary:
    start = time.perf_counter()
    module = open_module(path)
    summary = Summary(module.path)
    modules = ModuleSet.of(module)
    (block,) = parse(_SCRIPT).traces
    index = module._dwarf
    for cu_offset in index.cu_offsets():
        if not is_rust_cu(index.cu_at(cu_offset)):
            continue
        for entry in index.functions(cu_offset):
            if limit is not None and summary.functions >= limit:
                break
            summary.functions += 1
            _function(module, modules, block, index, cu_offset, entry, summary)
    summary.seconds = time.perf_counter() - start
    return summary


def _function(module, modules, block, index, cu_offset, entry, summary: Summary) -> None:
    where = f"{entry.name} @0x{entry.ranges[0][0]:x}"
    try:
        site = module._functions.function_site(index.cu_at(cu_offset), entry)
        variables = module.variables_at(site.probe_address, site.frame_die)
    except GsError as exc:
        summary.outcomes[f"no site: {exc.message[:60]}"] += 1
        return
    except Exception as exc:                       # noqa: BLE001 — what we look for
        summary.internal.append(_internal(where, exc))
        return
    for variable in variables:
        summary.variables += 1
        try:
            summary.outcomes[_push(module, modules, block, variable, site.probe_address)] += 1
        except GsError as exc:
            summary.outcomes[f"refused: {exc.message[:60]}"] += 1
        except Exception as exc:                   # noqa: BLE001
            summary.internal.append(_internal(f"{where} {variable.name}", exc))


def _push(module, modules, block, variable, pc: int) -> str:
    site = ProbeSite(0, f"0x{pc:x}", module.path, pc, module.vaddr_to_file_offset(pc),
                     None, None, None)
    probe = plan_probe(block, site, module, modules, SiteScope({"v": variable}, {}), _SCRIPT,
                       _OPTIONS)
    emit_program(Plan((probe,), (), _OPTIONS.pid_namespace, _OPTIONS.transport, None, "fuzz.gs"))
    event = decode(_event_bytes(probe), probe)
    render_lines(event, probe)
    render_json(event, probe)
    capture = probe.slots[0].capture
    if isinstance(capture, NoCapture):
        return "unavailable: " + capture.reason.split(" in [")[0][:60]
    return f"read ({type(capture).__name__})"


def _internal(where: str, exc: Exception) -> tuple[str, str, str]:
    return (where, "".join(traceback.format_exception_only(exc)).strip(),
            traceback.format_tb(exc.__traceback__)[-1].strip())


def main(paths: list[str]) -> int:
    failed = 0
    for path in paths:
        summary = fuzz(path)
        print(summary.report())
        failed += bool(summary.internal)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
