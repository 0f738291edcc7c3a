"""One trace block at one site → its ProbePlan: the steps (prints and
conditions), the values each captures in its slot, the event layout and
the render recipe (plan/build.py plans the whole script). Knows no C
syntax."""
from __future__ import annotations

import dataclasses
from dataclasses import field

from gs_cgen.abi import abi
from gs_cgen.dwarf.types import (ArrayType, FunctionType, PointerType, StructType, VoidType,
                                 strip, type_size)
from gs_cgen.errors import GsError, PlanError, UnsupportedError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan import arith, ir
from gs_cgen.plan.aggregations import AggregationTable, plan_aggregate
from gs_cgen.plan.expr import ExprPlanner
from gs_cgen.plan.limits import EventLimit, event_limit, object_cap
from gs_cgen.plan.locations import SYNTHETIC_POINTER
from gs_cgen.plan.backtrace import backtrace_capture, backtrace_data_size
from gs_cgen.plan.model import (BacktraceCapture, BacktraceLine, Capture, CompositeCapture,
                                CompositePiece, ConditionCapture, DeepCapture, DumpCapture, DumpRef,
                                ExprErrorLine, ExprLine, FormatLine, IfStep, KnownBytesCapture,
                                MemoryCapture, NoCapture, PrintStep, ProbePlan, ProbeSite,
                                RenderLine, ScalarCapture, ScriptString, SlotRef, Step,
                                StringCapture, ValueSlot, VariableArrayCapture, capture_scalars)
from gs_cgen.plan.follows import plan_follows_noted
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.printers import cpp
from gs_cgen.printers.layout import Kind
from gs_cgen.printers.rust import layout_notes, pointer_layout
from gs_cgen.plan.options import PlanOptions
from gs_cgen.plan.scope import SiteScope
from gs_cgen.plan import variables as variable_lists
from gs_cgen.script import ast

# Each slot: status byte, u32 length at +4, u64 address at +8, then data.
SLOT_HEADER_SIZE = 16


def _optimized_out_operands(condition) -> tuple[str, ...]:
    """The operands of a condition that are optimized out at this PC, left
    to right (a `let` contributes its own operands)."""
    found: dict[str, None] = {}
    pending = [condition]
    while pending:
        node = pending.pop()
        if isinstance(node, ir.Fail) and node.status == "GS_STATUS_OPTIMIZED_OUT" and node.operand:
            found.setdefault(node.operand)
        pending.extend(reversed(ir.scalar_children(node)))
    return tuple(found)


def _unavailable_reason(capture) -> str | None:
    """The reason of the first operand of a value that cannot be computed
    at this PC (an unsupported location), for `<error: REASON>`."""
    pending = list(reversed(capture_scalars(capture)))
    while pending:
        node = pending.pop()
        if isinstance(node, ir.Fail) and node.status == "GS_STATUS_UNAVAILABLE":
            return node.reason
        pending.extend(reversed(ir.scalar_children(node)))
    return None


@dataclass
class _SlotSpec:
    capture: Capture
    size: int
    text: str
    span: object


def plan_probe(block: ast.TraceBlock, site: ProbeSite, module, modules: ModuleSet,
               scope: SiteScope, text: str, options: PlanOptions,
               aggregations: AggregationTable | None = None) -> ProbePlan:
    """Plan one trace block at one of its resolved sites."""
    return ProbeBuilder(block, site, module, modules, scope, text, options,
                         aggregations=aggregations or AggregationTable()).build()


@dataclass
class ProbeBuilder:
    """Plans one trace block at one resolved site."""

    block: ast.TraceBlock
    site: ProbeSite
    module: object
    modules: ModuleSet
    scope: SiteScope
    text: str
    options: PlanOptions
    slots: list[_SlotSpec] = field(default_factory=list)
    lines: list[RenderLine] = field(default_factory=list)
    aggregations: AggregationTable = field(default_factory=AggregationTable)
    notes: list[str] = field(default_factory=list)     # said at compile time (stderr)

    def __post_init__(self) -> None:
        if self.scope.site_count > 1:
            where = f"any of the {self.scope.site_count} sites of {self.block.pattern_text}"
        else:
            where = f"{self.site.function or self.site.pattern_text} ({self.block.pattern_text})"
        self.where = where
        self.exprs = ExprPlanner(self.module, self.modules, self.scope, where,
                                 self.options.input_pid, abi().constants["GS_COMPARE_CAP"],
                                 self.text, self.site.address, self.site.no_variables,
                                 self.options.thread_pointer)

    def build(self) -> ProbePlan:
        steps = self._block(self.block.body)
        probe = lay_out(self.site, self.slots, self.lines, steps,
                        event_limit(self.options.transport))
        return dataclasses.replace(probe, notes=tuple(self.notes)) if self.notes else probe

    # --------------------------------------------------------- statements
    def _block(self, body: tuple[ast.Stmt, ...]) -> tuple[Step, ...]:
        self.exprs.scopes.append({})
        try:
            return tuple(step for stmt in body for step in self._statement(stmt))
        finally:
            self.exprs.scopes.pop()

    def _statement(self, stmt: ast.Stmt) -> list[Step]:
        match stmt:
            case ast.PrintExpr(expr=ast.Name() as expr, text=text) \
                    if isinstance(place := self.exprs.place(expr), ir.StringPlace):
                # `let s = "abc"; print s;`: nothing to read at run time.
                line = (f"{text} = ", ScriptString(place.value))
                return [self._line(lambda bit: FormatLine(line, bit), ())]
            case ast.PrintExpr(expr=ast.SpecialVar(ident=ident) as special) \
                    if variable_lists.is_variable_list(ident):
                return [self._variable_list(special)]
            case ast.PrintExpr(expr=expr, text=text):
                slot = self._value_slot(expr, text, ast.FormatKind.DEFAULT)
                return [self._line(lambda bit: ExprLine(text, slot, bit), (slot,))]
            case ast.PrintFormat():
                return [self._format(stmt)]
            case ast.Let(name=name, value=value):
                self.exprs.scopes[-1][name] = self.exprs.place(value)
                return []
            case ast.If():
                return [self._if(stmt)]
            case ast.Backtrace():
                capture = backtrace_capture(stmt, self.options, self.site,
                                            self.module.target_root)
                slot = self._add_slot(capture, backtrace_data_size(capture), "backtrace",
                                      stmt.span)
                return [self._line(lambda bit: BacktraceLine(slot, bit), (slot,))]
            case ast.Aggregate():
                return [plan_aggregate(stmt, self.exprs, self.aggregations, self.text,
                                       self.where)]
        raise UnsupportedError(f"not supported yet: {type(stmt).__name__}", stmt.span)

    def _line(self, make, slots: tuple[int, ...]) -> PrintStep:
        bit = len(self.lines)
        self.lines.append(make(bit))
        return PrintStep(bit, slots)

    def _if(self, stmt: ast.If) -> IfStep:
        condition = self.exprs.truth(stmt.condition)
        slot = self._add_slot(ConditionCapture(condition), 0, stmt.condition_text,
                              stmt.condition.span)
        bit = len(self.lines)
        self.lines.append(ExprErrorLine(stmt.condition_text, slot, bit,
                                        _optimized_out_operands(condition)))
        then = self._block(stmt.then_body)
        chain = len(stmt.else_body) == 1 and isinstance(stmt.else_body[0], ast.If)
        otherwise = self._block(stmt.else_body)
        return IfStep(slot, bit, then, otherwise, chain)

    # ------------------------------------------------------------- prints
    def _format(self, stmt: ast.PrintFormat) -> PrintStep:
        pieces, slots = [], []
        args = iter(stmt.args)
        for piece in stmt.format.pieces:
            if isinstance(piece, str):
                pieces.append(piece)
            elif piece.dump is ast.DumpLength.NONE:
                arg = next(args)
                literal = self._literal_text(arg)
                if literal is not None:
                    pieces.append(literal)
                    continue
                slot = self._value_slot(arg, arg.span.slice(self.text), piece.kind)
                pieces.append(SlotRef(slot, piece.kind))
                slots.append(slot)
            else:
                slot = self._dump_slot(piece, args)
                pieces.append(DumpRef(slot, piece.kind.value))
                slots.append(slot)
        return self._line(lambda bit: FormatLine(tuple(pieces), bit), tuple(slots))

    def _literal_text(self, arg: ast.Expr) -> str | None:
        place = self.exprs.place(arg) if isinstance(arg, (ast.Name, ast.StringLiteral)) else None
        if isinstance(place, ir.StringPlace):
            return place.value.decode("utf-8", errors="replace")
        return None

    def _value_slot(self, expr: ast.Expr, text: str, kind: ast.FormatKind) -> int:
        if isinstance(expr, ast.Call) and expr.function == "raw":
            return self._raw_slot(expr, text)
        place = _typed_read(self.exprs.place(expr), expr, kind)
        capture, size = self._capture(place, kind, expr)
        return self._add_slot(capture, size, text, expr.span)

    def _raw_slot(self, call: ast.Call, text: str) -> int:
        """`raw(x)`: x's bytes shown as its DWARF layout (gdb's print/r)."""
        (argument,) = call.args
        place = self.exprs.place(argument)
        if isinstance(place, ir.ValuePlace):      # in a register: no string or Box followed
            return self._add_slot(ScalarCapture(place.value, place.ctype, raw=True), 8, text,
                                  call.span)
        if not isinstance(place, ir.MemoryPlace):
            capture, size = self._capture(place, ast.FormatKind.DEFAULT, argument)
            if isinstance(capture, (CompositeCapture, KnownBytesCapture)):
                capture = dataclasses.replace(capture, raw=True)
            return self._add_slot(capture, size, text, call.span)
        size = min(type_size(place.ctype), object_cap(self.options.transport))
        return self._add_slot(MemoryCapture(place.address, place.ctype, size, raw=True), size,
                              text, call.span)

    def _capture(self, place: ir.Place, kind: ast.FormatKind, expr: ast.Expr):
        match place:
            case ir.UnavailablePlace(ctype=t, reason=reason, optimized_out=gone):
                return NoCapture(t, reason, gone), 0
            case ir.StringPlace():
                raise PlanError("print a string literal as a format string", expr.span)
            case ir.SyntheticPointerPlace(ctype=t):
                return NoCapture(t, SYNTHETIC_POINTER, False), 0
            case ir.KnownBytesPlace(data=data, ctype=t):
                return KnownBytesCapture(data, t), 0
            case ir.CompositePlace():
                return _composite_capture(place, object_cap(self.options.transport))
            case ir.ValuePlace(value=v, ctype=t) | ir.BitFieldPlace(value=v, ctype=t):
                if arith.is_string_type(t) and kind is not ast.FormatKind.POINTER:
                    return self._string(v, t)
                if kind is not ast.FormatKind.POINTER and pointer_layout(t) is not None:
                    deep = self._deep(v, t, 8, from_value=True)     # a Box in a register
                    if deep is not None:
                        return deep, deep.size
                return ScalarCapture(v, t), 8
        ctype = place.ctype
        if getattr(strip(ctype), "variable_length", False) and kind is not ast.FormatKind.POINTER:
            return self._variable_array(place, ctype, expr)
        if isinstance(strip(ctype), PointerType) and arith.is_string_type(ctype) \
                and kind is not ast.FormatKind.POINTER:
            pointer, _ = self.exprs.value(place, expr)
            return self._string(pointer, ctype)
        if kind is ast.FormatKind.POINTER and isinstance(strip(ctype), ArrayType):
            return ScalarCapture(place.address, arith.pointer_to(strip(ctype).element)), 8
        size = type_size(ctype)
        cap = self.options.mem_dump_cap if arith.is_string_type(ctype) \
            else object_cap(self.options.transport)
        deep = self._deep(place.address, ctype, min(size, cap))
        if deep is not None:
            return deep, deep.size
        return MemoryCapture(place.address, ctype, min(size, cap)), min(size, cap)

    def _deep(self, address: ir.Scalar, ctype, root_size: int,
              from_value: bool = False) -> DeepCapture | None:
        """A value whose std type keeps its data behind pointers (a Rust
        String, Vec, Box...): those reads too (plan/follows.py)."""
        room = object_cap(self.options.transport) - root_size
        follows, cpp_notes = plan_follows_noted(ctype, self.options.max_elements, room)
        for note in [*layout_notes(ctype), *cpp_notes]:
            said = f"note: {note}: it prints in its DWARF form (raw)"
            if said not in self.notes:
                self.notes.append(said)
        if not follows and not _is_std_struct(ctype):
            return None
        # A std value without pointers to chase (a Vec<()>, a std::array)
        # still carries --max-elements to the renderer.
        root = (root_size + 7) & ~7
        size = root + follows[-1].offset + follows[-1].size if follows else root_size
        return DeepCapture(address, ctype, root_size, follows, size, from_value,
                           self.options.max_elements)

    def _variable_array(self, place: ir.Place, ctype, expr: ast.Expr) -> tuple[Capture, int]:
        """A VLA: its length computed at run time, never `[]` (a plausible
        wrong value) nor its declared bound of none."""
        length = self.exprs.variable_array_bytes(strip(ctype), expr)
        if isinstance(length, ir.Fail):
            return NoCapture(ctype, length.reason, False), 0
        cap = object_cap(self.options.transport)
        return VariableArrayCapture(place.address, length, cap, ctype), cap

    def _string(self, pointer: ir.Scalar, ctype) -> tuple[StringCapture, int]:
        """Up to cap characters; the probe reads cap + 2 bytes so a string of
        exactly cap characters (NUL within) differs from a longer one."""
        cap = self.options.mem_dump_cap
        return StringCapture(pointer, ctype, cap), cap + 2

    def _dump_slot(self, piece: ast.Placeholder, args) -> int:
        if piece.dump is ast.DumpLength.STATIC:
            length = ir.Const(piece.static_length)
        elif piece.dump is ast.DumpLength.STAR:
            length_expr = next(args)
            length, _ = self.exprs.integer(length_expr)
        else:
            name = ast.Name(piece.length_variable, self.block.span)
            length, _ = self.exprs.integer(name)
        arg = next(args)
        place = self.exprs.place(arg)
        address = self._dump_address(place, arg)
        cap = self.options.mem_dump_cap
        return self._add_slot(DumpCapture(address, length, cap, getattr(place, "ctype", None)), cap,
                              arg.span.slice(self.text), arg.span)

    def _dump_address(self, place: ir.Place, arg: ast.Expr) -> ir.Scalar:
        """Where a dump starts: a pointer's target, an array's first element,
        else the object's own storage (GhostScope: `{:x.4}` of an int in
        memory shows its bytes); a value with no storage cannot be dumped."""
        ctype = strip(place.ctype) if getattr(place, "ctype", None) is not None else None
        if isinstance(ctype, (PointerType, ArrayType)) or isinstance(place, ir.UnavailablePlace):
            return self.exprs.string_address(place, arg)
        if isinstance(place, ir.MemoryPlace):
            return place.address
        raise PlanError(f"'{arg.span.slice(self.text)}' has no address to dump from here "
                        "(a register or computed value); '{:x}' prints its value, and "
                        "cast(ADDRESS, \"T *\") names memory to dump", arg.span)

    # ------------------------------------------- $args / $locals (variables.py)
    def _variable_list(self, special: ast.SpecialVar) -> PrintStep:
        """`print $args;` / `print $locals;`: one value per variable, on
        one line; each fails on its own, and together they are bounded to
        what is left of the event."""
        listed = variable_lists.listed_variables(self.scope.variables, special.ident)
        captures = [self._variable_capture(variable, special.span) for variable in listed]
        sizes, bound = variable_lists.bound_sizes(
            [size for _, size in captures], [_reducible(c) for c, _ in captures],
            self._event_room(), SLOT_HEADER_SIZE)
        if bound.cap is not None:
            limit = event_limit(self.options.transport)
            self.notes.append(
                f"note: 'print ${special.ident};' at {self.site.function or self.site.pattern_text}"
                f" needs {bound.wanted} bytes per event, more than is left of the "
                f"{limit.size}-byte limit ({limit.reason}): each value is read up to "
                f"{bound.cap} bytes, the rest prints as '... <truncated>'")
        slots = [self._add_slot(_bounded(capture, size), size, variable.name, special.span)
                 for (capture, _), size, variable in zip(captures, sizes, listed)]
        pieces = variable_lists.line_pieces(special.ident, [v.name for v in listed],
                                            [SlotRef(slot, ast.FormatKind.DEFAULT)
                                             for slot in slots])
        return self._line(lambda bit: FormatLine(pieces, bit), tuple(slots))

    def _variable_capture(self, variable, span) -> tuple[Capture, int]:
        """What one listed variable reads, as `print NAME;` would read it;
        a variable that cannot be planned is its own error value."""
        expr = ast.Name(variable.name, span)
        try:
            place = self.exprs.referent(
                self.exprs.location_place(variable.location, variable.type), expr)
            return self._capture(place, ast.FormatKind.DEFAULT, expr)
        except GsError as exc:
            return NoCapture(variable.type, exc.message, False), 0

    def _event_room(self) -> int:
        """Bytes of the event limit not yet taken by the header, the
        bitmap (with room for 64 more lines) and the slots so far."""
        used = abi().structs["gs_event_hdr"].size + 8 * ((len(self.lines) + 64) // 64 + 1)
        used += sum(SLOT_HEADER_SIZE + align(spec.size, 8) for spec in self.slots)
        return event_limit(self.options.transport).size - used

    def _add_slot(self, capture: Capture, size: int, text: str, span) -> int:
        self.slots.append(_SlotSpec(capture, size, text, span))
        return len(self.slots) - 1


def _reducible(capture: Capture) -> bool:
    """A value that reads fine in fewer bytes (then shows `<truncated>`)."""
    return isinstance(capture, (MemoryCapture, StringCapture, VariableArrayCapture))


def _bounded(capture: Capture, size: int) -> Capture:
    """`capture` reading `size` bytes (bound_sizes chose it)."""
    if isinstance(capture, MemoryCapture) and size < capture.size:
        return dataclasses.replace(capture, size=size)
    if isinstance(capture, VariableArrayCapture) and size < capture.cap:
        return dataclasses.replace(capture, cap=size)
    if isinstance(capture, StringCapture) and size < capture.cap + 2:
        return dataclasses.replace(capture, cap=size - 2)    # the probe reads cap + 2
    return capture


def _composite_capture(place: ir.CompositePlace, cap: int) -> tuple[Capture, int]:
    """The whole of an object in pieces; the parts the compiler left out
    are gaps the renderer shows as `<OPTIMIZED_OUT>` members."""
    if all(part.place is None for part in place.parts):
        return NoCapture(place.ctype, "optimized out", True), 0
    size = min(type_size(place.ctype), cap)
    pieces, gaps = [], []
    for part in place.parts:
        if part.offset >= size:
            break
        length = min(part.size, size - part.offset)
        if part.place is None:
            gaps.append((part.offset, part.offset + length))
        elif isinstance(part.place, ir.MemoryPlace):
            pieces.append(CompositePiece(part.offset, length, address=part.place.address))
        elif isinstance(part.place, ir.ValuePlace) and length <= 8:
            pieces.append(CompositePiece(part.offset, length, value=part.place.value))
        else:
            return NoCapture(place.ctype, "unsupported: a part of this value", False), 0
    covered = sum(p.size for p in place.parts)
    if covered < size:
        gaps.append((covered, size))                  # DWARF described only the start
    return CompositeCapture(tuple(pieces), place.ctype, size, tuple(gaps)), size


def _typed_read(place: ir.Place, expr: ast.Expr, kind: ast.FormatKind) -> ir.Place:
    """GhostScope's pointer arithmetic in print: `print p + 1` shows the
    element at p + 1, read with the pointee type ({:p} keeps the address)."""
    arithmetic = isinstance(expr, ast.Binary) and expr.op in (ast.BinaryOp.ADD,
                                                                ast.BinaryOp.SUB)
    if not arithmetic or kind is ast.FormatKind.POINTER or not isinstance(place, ir.ValuePlace):
        return place
    base = strip(place.ctype)
    if not isinstance(base, PointerType) or isinstance(strip(base.target), (VoidType,
                                                                             FunctionType)):
        return place
    return ir.MemoryPlace(ir.NonNull(place.value), base.target)


def _size_hints(largest: _SlotSpec, limit: EventLimit, needed: int) -> tuple[str, ...]:
    """For a `bt` that does not fit: the --backtrace-stack that would."""
    capture = largest.capture
    if isinstance(capture, BacktraceCapture):
        chunk = abi().constants["GS_BT_CHUNK"]
        room = (limit.size - (needed - capture.stack_bytes)) // chunk * chunk
        fits = f"at most {room} fits here" if room >= chunk else "none fits beside the other values"
        return (f"lower --backtrace-stack (the stack window, now {capture.stack_bytes} bytes; "
                f"{fits})", limit.hint)
    return (limit.hint,)


def lay_out(site: ProbeSite, specs: list[_SlotSpec], lines: list[RenderLine],
            steps: tuple[Step, ...], limit: EventLimit) -> ProbePlan:
    """Header, executed-lines bitmap, then 8-byte-aligned slots."""
    bitmap_offset = abi().structs["gs_event_hdr"].size
    bitmap_words = max(1, (len(lines) + 63) // 64)
    offset = bitmap_offset + 8 * bitmap_words
    slots = []
    for index, spec in enumerate(specs):
        data_offset = offset + SLOT_HEADER_SIZE
        slots.append(ValueSlot(index, offset, data_offset, spec.size, spec.capture,
                               spec.text, spec.span, _unavailable_reason(spec.capture)))
        offset = data_offset + align(spec.size, 8)
    if offset > limit.size:
        largest = max(specs, key=lambda spec: spec.size)
        raise PlanError(f"the values of '{site.pattern_text}' need {offset} bytes per event, "
                        f"more than the {limit.size}-byte limit ({limit.reason}); the largest "
                        f"is '{largest.text}', {largest.size} bytes",
                        span=largest.span, hints=_size_hints(largest, limit, offset))
    return ProbePlan(site, tuple(slots), tuple(lines), steps, bitmap_offset, bitmap_words,
                     offset)


def align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _is_std_struct(ctype) -> bool:
    """A Rust struct, or a C++ std value gs-cgen shows by its layout."""
    base = strip(ctype)
    if not isinstance(base, StructType):
        return False
    return base.language == "rust" or (base.language == "c++" and
                                       cpp.layout(base).kind is not Kind.PLAIN)
