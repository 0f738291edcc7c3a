"""AST + DWARF facts → Plan: every trace block planned at every site its
pattern resolves to (plan/probe.py plans one; plan/retprobe.py a return
probe's pair), and the modules the probes need. Knows no C syntax."""
from __future__ import annotations

from gs_cgen.plan import ir
from gs_cgen.plan.aggregations import AggregationTable
from gs_cgen.plan.model import ModuleRef, Plan, ProbePlan, module_cookie
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.options import PlanOptions
from gs_cgen.plan.probe import plan_probe
from gs_cgen.plan.retprobe import plan_return_block, refuse_return_specials
from gs_cgen.plan.scope import site_scopes
from gs_cgen.plan.sites import place_probe, resolve_sites
from gs_cgen.script import ast

__all__ = ["PlanOptions", "build_plan"]


def build_plan(script: ast.Script, modules: ModuleSet, options: PlanOptions) -> Plan:
    """Plan every trace block at every site its pattern resolves to. The
    DWARF names of a block are resolved across all its sites first
    (plan/scope.py), then each site is planned."""
    probes: list[ProbePlan] = []
    aggregations = AggregationTable()
    for block in script.traces:
        if isinstance(block.pattern, ast.ReturnPattern):
            probes.extend(plan_return_block(block, modules, script.text, options, len(probes),
                                            aggregations))
            continue
        refuse_return_specials(block)
        sites = resolve_sites(block, modules, first_probe_id=len(probes))
        scopes = site_scopes(sites)
        for (module, site), scope in zip(sites, scopes):
            probe = plan_probe(block, site, module, modules, scope, script.text, options,
                               aggregations)
            probes.append(place_probe(probe, module))
    tls_cookies = _cookies(probes, ir.ThreadLocalBase)
    return Plan(tuple(probes), _referenced_modules(probes, modules, tls_cookies),
                options.pid_namespace, options.transport, options.input_pid, options.script_name,
                options.watch_exec,
                options.thread_pointer.fsbase_offset if tls_cookies else None,
                aggregations.all(), options.shared_programs)


def _cookies(probes: list[ProbePlan], kind: type) -> set[int]:
    plans = [plan for probe in probes for plan in (probe, probe.entry, probe.entry_capture)
             if plan is not None]
    return {node.cookie for plan in plans for node in plan.scalar_nodes()
            if isinstance(node, kind)}


def _referenced_modules(probes: list[ProbePlan], modules: ModuleSet,
                        tls_cookies: set[int]) -> tuple[ModuleRef, ...]:
    """Modules whose globals the probes read, or that hold a probe: the
    runtime fills load offsets for exactly these, and TLS offsets for
    those in `tls_cookies`."""
    cookies = _cookies(probes, ir.ModuleAddress) | tls_cookies
    refs = {}
    for module in modules.opened():
        cookie = module_cookie(module.path, module.build_id)
        holds_probe = any(p.site.module_path == module.path for p in probes)
        if cookie in cookies or holds_probe:
            tls = cookie in tls_cookies
            refs[module.path] = ModuleRef(modules.file(module.path), cookie, tuple(module.segments),
                                          module.tls_segment if tls else None,
                                          module.dynamic_vaddr if tls else None)
    return tuple(refs.values())
