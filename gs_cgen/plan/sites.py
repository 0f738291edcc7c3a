"""Trace patterns → probe sites (module, address and uprobe file offset)."""
from __future__ import annotations

import dataclasses
from typing import NoReturn

from gs_cgen.errors import DebugInfoError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import BacktraceCapture, ProbePlan, ProbeSite, module_cookie
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script import ast


# dwarf/lines.py: where gs-cgen and gdb's `break FILE:LINE` part ways.
_NON_STATEMENT = "the line has only non-statement rows; gdb's break would stop at the next statement"


@dataclass(frozen=True)
class _Found:
    """One address a pattern names, before it becomes a ProbeSite."""

    module: object
    address: int
    function: str | None
    file: str | None
    line: int | None
    function_note: str | None = None
    no_variables: str | None = None
    frame_die: int | None = None
    entry: int | None = None          # a function's first instruction, before its prologue


def resolve_sites(block: ast.TraceBlock, modules: ModuleSet,
                  first_probe_id: int) -> list[tuple[object, ProbeSite]]:
    """(module, site) for every address the block's pattern names."""
    try:
        found = _resolve(block, modules)
    except DebugInfoError as exc:
        if exc.span is None:
            exc.span = block.pattern_span
        raise
    return [(where.module, _site(block, first_probe_id + i, where))
            for i, where in enumerate(found)]


def _resolve(block: ast.TraceBlock, modules: ModuleSet) -> list[_Found]:
    match block.pattern:
        case ast.FunctionPattern(name=name):
            return _functions(name, modules)
        case ast.LinePattern(file=file, line=line):
            return [_Found(m, s.address, s.function, s.file, s.line, frame_die=s.frame_die,
                           function_note=None if s.statement else _NON_STATEMENT)
                    for m in modules.line_modules(file, line)
                    for s in sorted(m.find_lines(file, line), key=lambda s: s.address)]
        case ast.AddressPattern(address=address, module=suffix):
            module = modules.by_suffix(suffix) if suffix else modules.default
            module.require_debug_info()
            function = module.check_code_address(address)
            where = module.describe_address(address)
            stub = module.plt_stub_name(address)
            # A PLT stub has no DWARF scope: only $-variables and bt apply there.
            return [_Found(module, address, where.function or function, where.file, where.line,
                           no_variables=stub and f"{stub} is a PLT stub (no DWARF describes it)")]
    raise TypeError(block.pattern)


def _functions(name: str, modules: ModuleSet) -> list[_Found]:
    holders = modules.function_modules(name)
    if len(holders) > 1:
        _in_several_modules(name, holders)
    if not holders:
        return _found(*_without_symbol(name, modules))
    module = holders[0]
    ifunc = module.ifunc_named(name)
    defined = [_ifunc_implementation(module, ifunc, modules)] if ifunc is not None else \
        _found(module, module.find_functions(name))
    return _inlined_into_program(name, module, modules) + defined


def _found(module, functions) -> list[_Found]:
    return [_Found(module, f.probe_address, f.name, *_probe_line(module, f),
                   no_variables=f.no_variables, frame_die=f.frame_die, entry=_entry(f))
            for f in sorted(functions, key=lambda f: f.probe_address)]


def _inlined_into_program(name: str, holder, modules: ModuleSet) -> list[_Found]:
    """The copies of `name` that the default module inlined although
    another module defines it: glibc's stdlib.h and _FORTIFY_SOURCE
    wrappers (atoi, memcpy, printf) are extern inline, and gdb's `break
    atoi` stops in the program's own copies as well as in libc's. Without
    them a program that inlined every call would show nothing."""
    default = modules.default
    if holder is default or not default.has_debug_info:
        return []
    return _found(default, default.inlined_sites(name))


def _probe_line(module, function) -> tuple[str | None, int | None]:
    """The source line of the probe address, as gdb's `break FUNC` reports
    it (after an -O0 prologue, the function's first statement; in optimized
    code possibly a line of a function inlined there); the declaration's
    line where the line table has none."""
    file, line = module.probe_line(function.probe_address)
    return (file, line) if line else (function.decl_file, function.decl_line)


def _entry(function) -> int | None:
    """The first instruction of an out-of-line function whose probe goes
    after a prologue (an -O0 frame set-up)."""
    if function.low_pc < function.probe_address < function.high_pc:
        return function.low_pc
    return None


def _in_several_modules(name: str, holders: list) -> NoReturn:
    paths = ", ".join(m.path for m in holders)
    raise DebugInfoError(
        f"function '{name}' is defined in several modules: {paths}",
        hints=(f"name the module with -t, e.g. -t {holders[1].path} -p PID",))


def _without_symbol(name: str, modules: ModuleSet) -> tuple[object, list]:
    """No symbol table has `name`; the default module's DWARF still may (a
    file without .symtab, a function that exists only inlined), else the
    inlined copies in another module (libc's checked_request2size, as gdb's
    `break` finds them). Else the error says where we looked."""
    default = modules.default
    if default.has_debug_info:
        try:
            return default, default.find_functions(name)
        except DebugInfoError:
            pass
    if not modules.restrict_to_default:
        inlined = [(m, sites) for m in modules.others()
                   if m.has_debug_info and (sites := m.inlined_sites(name))]
        if len(inlined) > 1:
            _in_several_modules(name, [m for m, _ in inlined])
        if inlined:
            return inlined[0]
    modules.raise_function_not_found(name)


def _ifunc_implementation(module, ifunc, modules: ModuleSet) -> _Found:
    """A GNU IFUNC is probed where it runs: the implementation its resolver
    chose in the process (the resolver itself runs once, at load)."""
    choice = modules.choose_ifunc(module, ifunc)
    f = module.function_site_at(choice.address, ifunc.name)
    return _Found(module, f.probe_address, f.name, *_probe_line(module, f),
                  f"IFUNC, chosen by {choice.chosen_by}", f.no_variables, f.frame_die, _entry(f))


def _site(block: ast.TraceBlock, probe_id: int, where: _Found) -> ProbeSite:
    module = where.module
    address, note = _probeable(block, where)
    return ProbeSite(probe_id=probe_id, pattern_text=block.pattern_text,
                     module_path=module.path, address=address,
                     file_offset=module.vaddr_to_file_offset(address), placement_note=note,
                     function=where.function, source_file=where.file, source_line=where.line,
                     module_cookie=module_cookie(module.path, module.build_id),
                     function_note=where.function_note, no_variables=where.no_variables,
                     open_path=module.open_path, frame_die=where.frame_die,
                     function_entry=where.entry, span=block.span)


def _probeable(block: ast.TraceBlock, where: _Found) -> tuple[int, str | None]:
    """Where the kernel takes the probe: the address itself, or for a
    function or line, the next instruction in a straight line when the
    kernel refuses this one (uprobe_insn.py: a refused probe on a file not
    yet mapped never fires, silently). An address is probed as written."""
    module, address = where.module, where.address
    refusal = module.uprobe_refusal(address)
    if refusal is None:
        return address, None
    successor = module.probeable_successor(address)
    moved = None if isinstance(block.pattern, ast.AddressPattern) else successor
    if moved is None:
        raise DebugInfoError(
            f"the kernel cannot place a uprobe at 0x{address:x} "
            f"({where.function or 'this address'}): {refusal}",
            span=block.pattern_span,
            candidates=(f"0x{successor[0]:x}",) if successor else ())
    return moved[0], (f"at 0x{moved[0]:x}, after `{moved[1]}` at 0x{address:x}, which the "
                      f"kernel cannot probe ({refusal})")


# ------------------------------------------------------------ placement
# A uprobe on an instruction the kernel emulates (push, nop, jmp, call)
# costs a trap; on one it single-steps (mov, lea, sub, endbr64) a second
# trap on top, about 20 times the cost per hit here (issue #10). gdb's
# `break FUNC` stops after an -O0 prologue, at a spill (`mov %edi,
# -0x14(%rbp)`), single-stepped, while the function's first instruction is
# usually `push %rbp`, emulated. Parameters and locals there are
# frame-based and not yet valid; but a block that reads none of them (only
# globals, thread-locals, $pid, $tid, $timestamp, literals) reads the same
# values at the entry as after the prologue, provided the prologue writes
# nothing but its frame and calls nothing. Such a block is probed at the
# entry; any other stays at gdb's address. (At -O1..-O3 GCC's location
# lists are valid at the entry, and gdb's `break` and gs-cgen's function
# probes are there already: dwarf/sites.py.)


def place_probe(probe: ProbePlan, module) -> ProbePlan:
    """The probe, its site saying how the kernel runs its instruction; at
    the function's entry when that is cheaper and every value it reads is
    the same there. (Only tracing asks: `info` decodes no machine code.)"""
    site = dataclasses.replace(probe.site, handling=module.uprobe_handling(probe.site.address).value)
    probe = dataclasses.replace(probe, site=site)
    entry = site.function_entry
    if entry is None or site.handling != "single-stepped" or not _reads_fixed_places(probe):
        return probe
    if module.uprobe_handling(entry).value != "emulated" or \
            not module.writes_only_stack(entry, site.address):
        return probe
    moved = dataclasses.replace(
        site, address=entry, file_offset=module.vaddr_to_file_offset(entry), handling="emulated",
        placement_note=f"at the function's entry, not after its prologue (0x{site.address:x}, "
                       "single-stepped): the block reads no parameter, local or register, "
                       "and the prologue writes only its frame")
    return dataclasses.replace(probe, site=moved)


def _reads_fixed_places(probe: ProbePlan) -> bool:
    """Nothing the probe reads depends on where in the function it runs:
    no register (parameters, locals, the frame, $pc, $sp), no call-site
    choice, no backtrace."""
    from gs_cgen.plan import ir      # noqa: PLC0415 — `info` imports this module, not the IR
    if any(isinstance(slot.capture, BacktraceCapture) for slot in probe.slots):
        return False
    return not any(isinstance(node, (ir.RegisterValue, ir.CallSiteSelect))
                   for node in probe.scalar_nodes())
