"""Return blocks (`trace FUNC:return { ... }`, CONTRACT.md "Return
probes") → pairs of probes.

Each out-of-line copy of FUNC gets two:

  entry   at the address a `trace FUNC` block would probe (gdb's `break
          FUNC`, where parameters are readable), it fills an entry record
          shaped like an event: header (its timestamp is the entry time),
          the call's key and return address, then one value slot per
          `$entry(expr)`, planned exactly as `print expr;` would be there;
          the record is stored in a bounded LRU hash keyed by (thread, CFA).
  return  a uretprobe at the function's first instruction. The kernel runs
          it when the call returns, with sp = the call's CFA and ip = its
          return address; it looks the record up by (thread, sp), checks
          the return address, sends its event and deletes the record.

Keyed by the frame, recursive and nested calls pair with their own entry;
a return whose entry was not seen (attached mid-call, record evicted) has
no record and sends nothing; a call left by longjmp leaves a record that
the next call in the same frame overwrites and that LRU eviction bounds.
"""
from __future__ import annotations

import dataclasses
from dataclasses import field

from gs_cgen.abi import abi
from gs_cgen.errors import DebugInfoError, PlanError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan import arith, ir
from gs_cgen.dwarf.model import VariableKind
from gs_cgen.dwarf.types import type_size
from gs_cgen.plan.options import PlanOptions
from gs_cgen.plan.probe import SLOT_HEADER_SIZE, ProbeBuilder, align, lay_out
from gs_cgen.plan.expr import ExprPlanner
from gs_cgen.plan.limits import event_limit
from gs_cgen.plan.locations import PT_REGS_FIELD
from gs_cgen.plan.model import (EntryCapture, MemoryCapture, NoCapture, PrintStep, ProbePlan,
                                ProbeSite, ScalarCapture)
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.retval import return_value_place
from gs_cgen.plan.scope import site_scopes
from gs_cgen.plan.sites import place_probe, resolve_sites
from gs_cgen.script import ast

RETURN_ONLY = ("retval", "duration")
# The entry record's first slots: the key and what the return checks.
CFA_SLOT, RETURN_ADDRESS_SLOT, ENTRY_IP_SLOT = 0, 1, 2


def plan_return_block(block: ast.TraceBlock, modules: ModuleSet, text: str,
                      options: PlanOptions, first_probe_id: int,
                      aggregations=None) -> list[ProbePlan]:
    """The return probes (each with its paired entry probe) of one block;
    its aggregations go into the script's `aggregations` table."""
    function = block.pattern.function
    as_function = dataclasses.replace(block, pattern=ast.FunctionPattern(function))
    resolved = resolve_sites(as_function, modules, 0)
    sites = [(module, site) for module, site in resolved
             if not module.function_return(site.frame_die)[0]]
    if not sites:
        raise DebugInfoError(f"'{function}' exists only inlined into its callers: it has no "
                             "return instruction of its own to probe", span=block.pattern_span,
                             hints=(f"trace {function} {{ ... }} probes its inlined copies; "
                                    "a line after the call in a caller sees the result",))
    sites = [(module, dataclasses.replace(site, probe_id=first_probe_id + i))
             for i, (module, site) in enumerate(sites)]
    scopes = site_scopes(sites)
    probes = []
    for (module, site), scope in zip(sites, scopes):
        recorder = EntryRecorder(block, site, module, modules, scope, text, options)
        returning = ReturnBuilder(block, _return_site(site, module), module, modules, scope,
                                  text, options, recorder=recorder)
        if aggregations is not None:
            returning.aggregations = aggregations
        probe = place_probe(returning.build(), module)
        record, capture = recorder.finish(probe.site)
        capture = place_probe(capture, module) if capture is not None else None
        probes.append(dataclasses.replace(probe, entry=place_probe(record, module),
                                          entry_capture=capture))
    inlined = len(resolved) - len(sites)
    if inlined:
        probes[0] = dataclasses.replace(
            probes[0], notes=probes[0].notes + (_inlined_note(function, inlined),))
    return probes


def _inlined_note(function: str, count: int) -> str:
    """Calls through an inlined copy never reach a return probe: say so,
    as a program that inlined every call (glibc's atoi at -O2) would
    otherwise show nothing at all."""
    copies, them = ("copy returns into its caller", "it") if count == 1 else \
        ("copies return into their callers", "them")
    return (f"note: '{function}:return' probes the out-of-line {function} only; its {count} "
            f"inlined {copies} (`trace {function} {{ ... }}` sees {them} on entry)")


def _return_site(entry_site: ProbeSite, module) -> ProbeSite:
    """A uretprobe goes on the function's first instruction: the kernel
    swaps the return address at [sp] when it runs there."""
    start = entry_site.function_entry if entry_site.function_entry is not None \
        else entry_site.address
    return dataclasses.replace(entry_site, address=start,
                               file_offset=module.vaddr_to_file_offset(start),
                               function_entry=None, at_return=True, placement_note=None)


def refuse_return_specials(block: ast.TraceBlock) -> None:
    """`$retval`, `$duration` and `$entry(...)` outside a return block."""
    for node in _expressions(block.body):
        name = _return_special_name(node)
        if name:
            raise PlanError(f"{name} is only available in a return block "
                            f"(trace FUNC:return {{ ... }}); '{block.pattern_text}' "
                            "is probed where it is entered", node.span,
                            hints=(f"trace {block.pattern_text}:return {{ print {name}; }}"
                                   if isinstance(block.pattern, ast.FunctionPattern) else
                                   "return probes take a function name",))


def _return_special_name(node) -> str | None:
    if isinstance(node, ast.SpecialVar) and node.ident in RETURN_ONLY:
        return f"${node.ident}"
    if isinstance(node, ast.EntryValue):
        return "$entry(...)"
    return None


def _expressions(root):
    """Every AST node under `root` (statements, expressions, tuples)."""
    pending = [root]
    while pending:
        node = pending.pop()
        if isinstance(node, tuple):
            pending.extend(node)
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            yield node
            pending.extend(getattr(node, f.name) for f in dataclasses.fields(node))


# ------------------------------------------------------------- the entry

@dataclass(frozen=True)
class RecordedValue:
    """One `$entry(expr)` slot of the entry record."""

    slot: int
    capture: object
    size: int
    status_offset: int
    data_offset: int


@dataclass
class EntryRecorder(ProbeBuilder):
    """Plans the entry probe: the key slots, then each distinct
    `$entry(expr)` the return block names, in order of first use."""

    recorded: dict[str, RecordedValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        # As the record probe reads them at the function's first
        # instruction, where CFA = sp + 8 and [sp] is the return address.
        sp = ir.RegisterValue(PT_REGS_FIELD["rsp"])
        key = (("CFA", ir.BinaryOp("+", sp, ir.Const(8), False)),
               ("return address", ir.Load(sp, 8, False)),
               ("entry pc", ir.ir_register_ip()))
        for text, value in key:
            self._add_slot(ScalarCapture(value, arith.ULONG), 8, text, self.block.pattern_span)

    def _call_frame_address(self) -> ir.Scalar:
        """The CFA at this site (past the prologue), from the CFI."""
        rule = self.module.call_frame_rule(self.site.address)
        register = PT_REGS_FIELD.get(rule[0]) if isinstance(rule, tuple) else None
        if register is None:
            reason = getattr(rule, "reason", f"CFA is based on {rule[0]}")
            raise PlanError(f"cannot pair the $entry values of '{self.site.function}' with its "
                            f"calls: no frame address at 0x{self.site.address:x} ({reason})",
                            self.block.pattern_span)
        return ir.BinaryOp("+", ir.RegisterValue(register), ir.Const(rule[1] & (2**64 - 1)),
                           False)

    def record(self, expr: ast.EntryValue,
               kind: ast.FormatKind = ast.FormatKind.DEFAULT) -> RecordedValue:
        """The slot holding `expr` at entry, read as `print "{kind}"`
        would (planned once per text and kind): POINTER keeps a string's
        pointer rather than its characters."""
        name = f"{expr.text}{{:{kind.value}}}"
        if name in self.recorded:
            return self.recorded[name]
        for node in _expressions(expr.expr):
            special = _return_special_name(node)
            if special:
                raise PlanError(f"{special} cannot be used inside $entry(...): $entry "
                                "evaluates its expression when the call is entered", node.span)
        index = self._value_slot(expr.expr, expr.text, kind)
        spec = self.slots[index]
        offset = self._slot_offset(index)
        value = RecordedValue(index, spec.capture, spec.size, offset, offset + SLOT_HEADER_SIZE)
        self.recorded[name] = value
        return value

    def _slot_offset(self, index: int) -> int:
        """Where slot `index` will be in the record (as _layout puts it:
        the header, one bitmap word, then 8-byte-aligned slots)."""
        offset = abi().structs["gs_event_hdr"].size + 8
        for spec in self.slots[:index]:
            offset += SLOT_HEADER_SIZE + align(spec.size, 8)
        return offset

    def finish(self, return_site: ProbeSite) -> tuple[ProbePlan, ProbePlan | None]:
        """The record probe, at the function's first instruction with the
        uretprobe (the kernel runs uprobe handlers before it swaps the
        return address, so [sp] is still the caller's), and the capture
        probe at this site when that is further in and there are `$entry`
        values: it fills them into the record the record probe stored. A
        call that returns before reaching it has them unavailable."""
        steps = (PrintStep(0, tuple(range(len(self.slots)))),)
        plan = lay_out(self.site, self.slots, [], steps, event_limit(self.options.transport))
        for value in self.recorded.values():
            assert plan.slots[value.slot].offset == value.status_offset
        start = dataclasses.replace(return_site, at_return=False)
        if self.site.address == start.address or not self.recorded:
            return dataclasses.replace(plan, site=start), None
        unreached = (f"filled at 0x{self.site.address:x} by the capture probe; unavailable "
                     "if the call returns before it")
        record = [slot if slot.index <= ENTRY_IP_SLOT else
                  dataclasses.replace(slot, capture=NoCapture(slot.ctype, unreached, False))
                  for slot in plan.slots]
        # The capture probe: slot 0's value is its key, the $entry slots
        # what it fills; it reads nothing else.
        capture = [ScalarCapture(self._call_frame_address(), arith.ULONG)
                   if slot.index == CFA_SLOT else NoCapture(None, "", False)
                   if slot.index <= ENTRY_IP_SLOT else slot.capture for slot in plan.slots]
        filled = tuple(range(ENTRY_IP_SLOT + 1, len(plan.slots)))
        return (dataclasses.replace(plan, site=start, slots=tuple(record)),
                dataclasses.replace(plan, steps=(PrintStep(0, filled),),
                                    slots=tuple(dataclasses.replace(slot, capture=value)
                                                for slot, value in zip(plan.slots, capture))))


def record_offsets(entry: ProbePlan, slot: int) -> tuple[int, int]:
    """(status offset, data offset) of an entry record slot."""
    return entry.slots[slot].offset, entry.slots[slot].data_offset


def entry_timestamp_offset() -> int:
    header = abi().structs["gs_event_hdr"]
    return next(f.offset for f in header.fields if f.name == "timestamp_ns")


# ------------------------------------------------------------ the return

@dataclass
class ReturnBuilder(ProbeBuilder):
    """Plans the return probe's block: `$retval`, `$duration`, `$entry()`
    and globals; parameters and locals are refused."""

    recorder: EntryRecorder | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        old = self.exprs
        self.exprs = ReturnExprPlanner(old.module, old.modules, old.site_scope, old.where,
                                       old.input_pid, old.compare_cap, old.source_text,
                                       old.probe_address, old.no_variables, old.thread_pointer)
        self.exprs.builder = self

    def _variable_list(self, special: ast.SpecialVar):
        """`print $args;` would read the parameters at the return."""
        wanted = VariableKind.PARAMETER if special.ident == "args" else VariableKind.LOCAL
        names = [v.name for v in self.scope.visible.values() if v.kind is wanted]
        example = ", ".join(f"$entry({name})" for name in names[:3]) or "$entry(name)"
        raise PlanError(f"${special.ident} lists variables of '{self.site.function}', which are "
                        "not readable when it returns", special.span,
                        hints=(f"print their values at entry: {example}",))

    def _value_slot(self, expr: ast.Expr, text: str, kind: ast.FormatKind) -> int:
        if not isinstance(expr, ast.EntryValue):
            return super()._value_slot(expr, text, kind)
        recorded = self.recorder.record(expr)
        if isinstance(recorded.capture, NoCapture):
            return self._add_slot(recorded.capture, 0, text, expr.span)
        return self._add_slot(EntryCapture(recorded.capture, recorded.status_offset),
                              recorded.size, text, expr.span)


class ReturnExprPlanner(ExprPlanner):
    """Expressions at a function's return."""

    builder: ReturnBuilder

    def _place(self, expr: ast.Expr) -> ir.Place:
        match expr:
            case ast.SpecialVar(ident="retval"):
                return self._retval(expr)
            case ast.SpecialVar(ident="duration"):
                started = ir.EntryRecordValue(entry_timestamp_offset())
                now = ir.HeaderField("timestamp_ns")
                return ir.ValuePlace(ir.BinaryOp("-", now, started, False), arith.ULONG)
            case ast.EntryValue():
                return self._entry(expr)
        return super()._place(expr)

    def _retval(self, expr: ast.SpecialVar) -> ir.Place:
        site = self.builder.site
        _, ctype = self.module.function_return(site.frame_die)
        if ctype is None or site.no_variables:
            # Assembly has a subprogram DIE at most, never a return type.
            why = site.no_variables or "it has no DWARF description"
            raise PlanError(f"$retval of '{site.function}' has no type: {why}", expr.span,
                            hints=("$duration and $entry(expr) work in its return block",))
        return return_value_place(ctype, site.function, expr.span)

    def _entry(self, expr: ast.EntryValue) -> ir.Place:
        recorder = self.builder.recorder
        # In an expression (a comparison, an aggregation key) a C string is
        # its pointer at entry; its characters are read at the return.
        ctype = getattr(recorder.exprs.place(expr.expr), "ctype", None)
        pointer = arith.is_string_type(ctype) and arith.is_pointer(ctype)
        recorded = recorder.record(expr, ast.FormatKind.POINTER if pointer
                                   else ast.FormatKind.DEFAULT)
        match recorded.capture:
            case ScalarCapture(ctype=ctype):
                return _recorded_scalar(recorded, ctype)
            case MemoryCapture(ctype=ctype, size=size) \
                    if arith.is_scalar(ctype) and size == type_size(ctype) <= 8:
                return _recorded_scalar(recorded, ctype)
            case NoCapture(ctype=ctype, reason=reason, optimized_out=gone):
                return ir.UnavailablePlace(ctype, reason, gone)
        raise PlanError(f"$entry({expr.text}) is an object read from memory at entry: print it "
                        f"whole (print $entry({expr.text});), or put the part you need inside, "
                        f"e.g. $entry(({expr.text}).member)", expr.span)

    def _name(self, ident: str, expr: ast.Name) -> ir.Place:
        if any(ident in scope for scope in self.scopes):
            return super()._name(ident, expr)
        variable = self.site_scope.visible.get(ident) or self.site_scope.elsewhere.get(ident)
        if variable is not None:
            raise PlanError(f"'{ident}' is a parameter or local of '{self.builder.site.function}'"
                            ", which is not readable when it returns", expr.span,
                            hints=(f"write $entry({ident}) for its value when the call was "
                                   "entered",))
        return super()._name(ident, expr)


def _recorded_scalar(recorded: RecordedValue, ctype) -> ir.Place:
    """A number or pointer the entry probe recorded: the slot's 8 data
    bytes, of which a narrower value (read from memory) fills the low ones."""
    value = ir.EntryRecordValue(recorded.data_offset, recorded.status_offset)
    size = type_size(ctype)
    if size < 8:
        value = ir.Convert(value, size, arith.is_integer(ctype) and arith.signedness(ctype))
    return ir.ValuePlace(value, ctype)
