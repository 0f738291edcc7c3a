"""AST + DWARF facts → Plan. Decides, for every value a script prints, what
the probe reads and from where at that exact PC; knows no C syntax."""
from __future__ import annotations

from dataclasses import dataclass

from gs_cgen.abi import abi
from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, ImplicitValue,
                                 InRegister, OptimizedOut, UnsupportedLocation,
                                 VariableLocation, register_name)
from gs_cgen.dwarf.types import BoolType, EnumType, IntType, strip, type_name, type_size
from gs_cgen.errors import DebugInfoError, PlanError, UnsupportedError, nearest
from gs_cgen.plan.model import (ConstantSource, EventTransport, ExprLine, FormatLine,
                                GlobalMemorySource, ModuleRef, PidNamespace, Plan,
                                ProbePlan, ProbeSite, RegisterSource, RenderLine,
                                SlotRef, SpecialKind, SpecialSource, StackMemorySource,
                                UnavailableSource, ValueSlot, ValueSource, module_cookie)
from gs_cgen.plan.sites import resolve_sites
from gs_cgen.script import ast

# DWARF register name → struct pt_regs field (arch/x86/include/asm/ptrace.h).
_PT_REGS_FIELD = {"rax": "ax", "rdx": "dx", "rcx": "cx", "rbx": "bx", "rsi": "si",
                  "rdi": "di", "rbp": "bp", "rsp": "sp", "rip": "ip",
                  **{f"r{n}": f"r{n}" for n in range(8, 16)}}
_SPECIAL_SIZE = 8
# Each slot: status byte, padding, the address a memory read used (so a
# failure can name it), then the data.
_SLOT_HEADER_SIZE = 16


@dataclass(frozen=True)
class PlanOptions:
    script_name: str
    pid_namespace: PidNamespace
    transport: EventTransport = EventTransport.RINGBUF
    input_pid: int | None = None


def build_plan(script: ast.Script, module, options: PlanOptions) -> Plan:
    """`module` is the dwarf ModuleDebugInfo of the module being probed."""
    module.require_debug_info()
    probes: list[ProbePlan] = []
    for block in script.traces:
        for site in resolve_sites(block, module, first_probe_id=len(probes)):
            probes.append(_ProbeBuilder(block, site, module, script.text,
                                        options.input_pid).build())
    cookie = module_cookie(module.path, module.build_id)
    modules = (ModuleRef(module.path, cookie, tuple(module.segments)),)
    return Plan(tuple(probes), modules, options.pid_namespace,
                options.transport, options.input_pid, options.script_name)


class _ProbeBuilder:
    """Plans one trace block at one resolved site."""

    def __init__(self, block: ast.TraceBlock, site: ProbeSite, module, text: str,
                 input_pid: int | None) -> None:
        self.block, self.site, self.module, self.text = block, site, module, text
        self.input_pid = input_pid
        self.visible = {}
        for var in module.variables_at(site.address):
            self.visible.setdefault(var.name, var)   # innermost scope wins
        self.slots: list[ValueSlot] = []
        self.next_offset = abi().structs["gs_event_hdr"].size

    def build(self) -> ProbePlan:
        lines = [line for stmt in self.block.body for line in self._statement(stmt)]
        return ProbePlan(self.site, tuple(self.slots), tuple(lines), self.next_offset)

    def _statement(self, stmt: ast.Stmt) -> list[RenderLine]:
        match stmt:
            case ast.PrintExpr(expr=expr, text=text):
                return [ExprLine(text, self._slot(expr, text))]
            case ast.PrintFormat(format=fmt, args=args):
                return [self._format_line(fmt, args)]
            case ast.Let():
                raise UnsupportedError("not supported yet: 'let' script variables", stmt.span)
            case ast.If():
                raise UnsupportedError("not supported yet: 'if' conditions", stmt.span)
            case ast.Backtrace():
                raise UnsupportedError("not supported yet: 'bt' backtraces", stmt.span)
        raise UnsupportedError(f"not supported yet: {type(stmt).__name__}", stmt.span)

    def _format_line(self, fmt: ast.FormatString, args: tuple[ast.Expr, ...]) -> FormatLine:
        pieces: list[str | SlotRef] = []
        arg_iter = iter(args)
        for piece in fmt.pieces:
            if isinstance(piece, str):
                pieces.append(piece)
                continue
            if piece.dump is not ast.DumpLength.NONE:
                raise UnsupportedError("not supported yet: memory-dump format specifiers",
                                       fmt.span)
            arg = next(arg_iter)
            pieces.append(SlotRef(self._slot(arg, arg.span.slice(self.text)), piece.kind))
        return FormatLine(tuple(pieces))

    def _slot(self, expr: ast.Expr, text: str) -> int:
        source, ctype, size = self._value(expr)
        offset = self.next_offset
        data_offset = offset + _SLOT_HEADER_SIZE
        slot = ValueSlot(len(self.slots), offset, data_offset, size, source, ctype,
                         text, expr.span)
        self.slots.append(slot)
        self.next_offset = data_offset + _align(size, 8)
        return slot.index

    def _value(self, expr: ast.Expr):
        match expr:
            case ast.Name(ident=ident):
                return self._variable(ident, expr)
            case ast.SpecialVar(ident=ident):
                return self._special(_special_kind(ident, expr), expr), None, _SPECIAL_SIZE
            case ast.IntLiteral(value=value):
                return ConstantSource(value), None, _SPECIAL_SIZE
        raise UnsupportedError(
            f"not supported yet: {_describe(expr)} (only variables, special variables "
            "and integer literals can be printed in this version)", expr.span)

    def _special(self, kind: SpecialKind, expr: ast.SpecialVar) -> ValueSource:
        if kind is not SpecialKind.INPUT_PID:
            return SpecialSource(kind)
        if self.input_pid is None:
            raise PlanError("$input_pid is only available with -p PID", expr.span)
        return ConstantSource(self.input_pid)

    def _variable(self, name: str, expr: ast.Name):
        var = self.visible.get(name)
        if var is not None:
            if isinstance(var.location, AtAddress):    # a function-level static
                return self._typed(var.type, self._static(var.location.address), name, expr)
            return self._typed(var.type, _location_source(var.location), name, expr)
        glob = self.module.find_global(name)
        if glob is not None:
            return self._typed(glob.type, self._static(glob.address), name, expr)
        pool = list(self.visible) + self.module.global_names()
        where = self.site.function or self.site.pattern_text
        raise PlanError(f"no variable '{name}' at {where} ({self.block.pattern_text})",
                        expr.span, candidates=nearest(name, pool))

    def _static(self, address: int) -> GlobalMemorySource:
        cookie = module_cookie(self.module.path, self.module.build_id)
        return GlobalMemorySource(cookie, self.module.section_of(address), address)

    def _typed(self, ctype, source: ValueSource, name: str, expr: ast.Expr):
        if not isinstance(strip(ctype), (IntType, BoolType, EnumType)):
            raise UnsupportedError(
                f"not supported yet: printing '{name}' of type '{type_name(ctype)}' "
                "(this version prints integer, bool and enum values)", expr.span)
        return source, ctype, type_size(ctype)


def _location_source(location: VariableLocation) -> ValueSource:
    match location:
        case InRegister(reg, offset):
            field = _PT_REGS_FIELD.get(register_name(reg))
            if field is None:
                return UnavailableSource(
                    f"value lives in {register_name(reg)}, which a uprobe cannot read",
                    optimized_out=False)
            return RegisterSource(field, offset)
        case AtRegisterOffset(reg, offset):
            field = _PT_REGS_FIELD.get(register_name(reg))
            if field is None:
                return UnavailableSource(f"frame base in {register_name(reg)}", False)
            return StackMemorySource(field, offset)
        case AtAddress():
            raise AssertionError("static locations are planned as globals")
        case ImplicitValue(value):
            return ConstantSource(value)
        case OptimizedOut(reason):
            return UnavailableSource(reason, optimized_out=True)
        case UnsupportedLocation(reason):
            return UnavailableSource(f"unsupported location: {reason}", optimized_out=False)
    raise TypeError(location)


def _special_kind(ident: str, expr: ast.SpecialVar) -> SpecialKind:
    try:
        return SpecialKind(ident)
    except ValueError:
        valid = ", ".join(f"${k.value}" for k in SpecialKind)
        raise PlanError(f"unknown special variable '${ident}' (valid: {valid})",
                        expr.span) from None


def _describe(expr: ast.Expr) -> str:
    return {ast.Member: "member access", ast.Index: "indexing", ast.Unary: "unary operators",
            ast.Binary: "binary operators", ast.Cast: "cast()", ast.Call: "builtin calls",
            ast.StringLiteral: "string literals", ast.BoolLiteral: "boolean literals"
            }.get(type(expr), type(expr).__name__)


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment
