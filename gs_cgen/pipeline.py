"""The compile-time stages in order: parse → check → plan → emit. Pure:
reads ELF/DWARF files but never touches BPF or processes."""
from __future__ import annotations

from collections.abc import Mapping

from gs_cgen.emit.program import emit
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import Plan
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script import ast
from gs_cgen.script.check import check
from gs_cgen.script.parser import parse


@dataclass(frozen=True)
class Compiled:
    script: ast.Script
    plan: Plan
    c_text: str
    functions: Mapping[int, str]     # probe id -> the BPF function it runs (emit/program.py)
    statements: tuple = ()           # emit/probe.py StatementLines: C lines -> script spans


def compile_script(script_text: str, modules: ModuleSet, options: PlanOptions) -> Compiled:
    script = parse(script_text)
    check(script)
    plan = build_plan(script, modules, options)
    program = emit(plan)
    return Compiled(script, plan, program.text, program.functions, program.statements)
