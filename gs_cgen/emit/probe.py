"""One probe's BPF function: decide, then build. Pure; golden-file tested.

The per-hit cost of a probe whose conditions are rarely true is what it
does before it knows nothing will be sent (issue #10). So a probe with
`if` steps runs in two phases:

  decide  read only what the conditions need (registers, and the header,
          load offsets or TLS blocks only when a condition reads them),
          evaluate every condition once, and note which lines will be
          rendered and which conditions failed (with their status and
          address): in locals for one condition, in the decision map
          (gs_abi.h struct gs_decision) for several, so that the verifier
          meets one state after each `if` (_decision_place); nothing
          marked: return at once, with no ktime, pid/tid or namespace
          lookup, no per-CPU scratch and no ring reservation;
  build   start the event, fill its header, copy the bitmap and the
          ExprError slots of failed conditions in, and fill the value
          slots of the lines marked, in script order; submit.

A probe without conditions always sends, so it only builds. Conditions
that compare target bytes (strncmp, memcmp, ==) do so in the decision
map's work area; only a probe too large for the decision map starts its
event before deciding (the event's bitmap and work area are its
decision's) and gives it back when nothing is marked (gs_drop).
"""
from __future__ import annotations


from gs_cgen.abi import abi
from gs_cgen.emit import c
from gs_cgen.emit.aggregations import emit_aggregate
from gs_cgen.emit.follows import emit_follows
from gs_cgen.emit.scalar import emit_scalar
from gs_cgen.emit.writer import CWriter, DecisionPlace
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan import ir
from gs_cgen.plan.retprobe import ENTRY_IP_SLOT, record_offsets
from gs_cgen.plan.model import (AggregateStep, BacktraceCapture, aggregate_scalars, aggregate_steps,
                                capture_scalars,
                                 CompositeCapture, DeepCapture, DumpCapture, EntryCapture, IfStep,
                                KnownBytesCapture, MemoryCapture, NoCapture, PrintStep,
                                ProbePlan, ScalarCapture, Step, StringCapture, ValueSlot,
                                VariableArrayCapture)
from gs_cgen.source import SourceSpan


@dataclass(frozen=True)
class _EventFunctions:
    begin: str
    submit: str
    drop: str


_BUILD_DEFAULT = _EventFunctions("gs_begin_event", "gs_submit", "gs_drop")
_RING = _EventFunctions("gs_begin_ring_event", "gs_submit_ring", "gs_drop_ring")
# Status byte, u32 length, u64 address (plan/build.py SLOT_HEADER_SIZE).
SLOT_HEADER_BYTES = 16


def drop_function(probe: ProbePlan) -> str:
    """What gives back an event this probe started without sending it."""
    return _event_functions(probe).drop


@dataclass(frozen=True)
class StatementLines:
    """Lines `first`..`last` (1-based, inclusive) of a C text were
    generated for the script construct at `span`."""
    first: int
    last: int
    span: SourceSpan


@dataclass(frozen=True)
class ProbeCode:
    text: str
    # innermost first; lines counted from the function's first line
    statements: tuple[StatementLines, ...] = ()


def emit_probe(probe: ProbePlan, function: str | None = None, parameters: str = "",
               finish: tuple[str, ...] = (), id_from_cookie: bool = False) -> str:
    """One BPF function for one probe site (emit_probe_code's text)."""
    return emit_probe_code(probe, function, parameters, finish, id_from_cookie).text


def emit_probe_code(probe: ProbePlan, function: str | None = None, parameters: str = "",
                    finish: tuple[str, ...] = (), id_from_cookie: bool = False) -> ProbeCode:
    """One BPF function for one probe site, and which of its lines each
    script statement produced. A return probe's pair
    (emit/retprobe.py) names its functions, gives the return body the
    entry record (`parameters`) and ends the entry probe with a store
    instead of a submit (`finish`). `id_from_cookie`: the function is
    shared by several sites, and each site's id is its attach cookie."""
    w = _prologue(probe, id_from_cookie)
    if not probe.lines and not finish:
        # Aggregations only: the map updates are the whole probe, no event.
        # (A return probe's entry record has no lines, and is built.)
        _decide_only(w, probe)
        w.line("return 0;")
        return _function(probe, w, function, parameters)
    if _conditions(probe) or aggregate_steps(probe.steps):
        _decide_then_build(w, probe)
    else:
        _build(w, probe, started=False)
        _fill_values(w, probe, probe.steps, guarded=False)
    for line in finish or (f"return {_event_functions(probe).submit}(ctx, ev, {probe.event_size});",):
        w.line(line)
    return _function(probe, w, function, parameters)


def _prologue(probe: ProbePlan, id_from_cookie: bool = False) -> CWriter:
    """A probe function's first lines: its id (when shared), status, fault
    address, load slot, registers."""
    w = CWriter(own_module=probe.site.module_cookie,
                probe_id="gs_probe_id" if id_from_cookie else str(probe.site.probe_id))
    if id_from_cookie:
        w.line("__u32 gs_probe_id = (__u32)bpf_get_attach_cookie(ctx);")
    w.line("__u8 gs_st = 0;")
    w.line("__u64 gs_fa = 0;")
    # Every load goes through this one stack slot (scalar.py _load), so the
    # number of loads a probe makes does not grow its 512-byte stack.
    w.line("__u64 gs_ld = 0;")
    # The verifier rejects ctx loads through a pointer clang has offset, so
    # every register is copied to a local once, straight off ctx.
    for register in _registers(probe):
        w.line(f"__u64 {c.register_variable(register)} = ctx->{register};")
    return w


def _function(probe: ProbePlan, w: CWriter, function: str | None = None,
              parameters: str = "") -> ProbeCode:
    name = function or f"int {c.probe_function_name(probe.site.probe_id)}"
    header = f"{name}(struct pt_regs *ctx{parameters})\n{{"
    # w.lines[0] is the function's third line, after its name and "{".
    statements = tuple(StatementLines(first + 3, end + 2, span)
                       for first, end, span in w.spans if end > first)
    return ProbeCode("\n".join([header, w.text(), "}", ""]), statements)


def _decide_only(w: CWriter, probe: ProbePlan) -> None:
    """A probe that sends nothing: what its updates read, then the updates
    (in the decide phase's order, inside their `if`s; an `if` of such a
    probe has a line, its ExprError, so it never gets here)."""
    nodes = _condition_nodes(probe)
    if _header_needed(probe, nodes):
        w.line("struct gs_event_hdr gs_hdr = {};")
        w.line(f"gs_fill_header(&gs_hdr, {w.probe_id}, GS_EVENT_TRACE, 0);")
        w.line("struct gs_event_hdr *hdr = &gs_hdr;")
    _lookups(w, probe, nodes, set())
    for step in probe.steps:
        _decide_step(w, probe, step)


def emit_record_fill(probe: ProbePlan, function: str, records: str) -> str:
    """A return probe's capture probe (emit/retprobe.py): the record its
    entry probe stored in map `records`, found by (tid, the CFA slot 0
    computes), gets the value slots of `probe.steps` filled in place."""
    w = _prologue(probe)
    w.line("struct gs_return_key gs_key = {};")
    w.line("gs_key.tid = (__u32)bpf_get_current_pid_tgid();")
    w.line(f"gs_key.cfa = {emit_scalar(w, probe.slots[0].capture.value, 'gs_no_record')};")
    w.line(f"__u8 *ev = (__u8 *){records}.lookup(&gs_key);")
    w.line("if (!ev)")
    w.line("    return 0;")
    w.line("struct gs_event_hdr *hdr = (struct gs_event_hdr *)ev;")
    _lookups(w, probe, list(probe.scalar_nodes()), set())
    _fill_values(w, probe, probe.steps, guarded=False)
    w.line("return 0;")
    w.label("gs_no_record")
    w.line("return 0;")
    return "\n".join([f"{function}(struct pt_regs *ctx)\n{{", w.text(), "}", ""])


def _decide_then_build(w: CWriter, probe: ProbePlan) -> None:
    functions = _event_functions(probe)
    condition_nodes = _condition_nodes(probe)
    w.decision = _decision_place(probe)
    early_event = w.decision is DecisionPlace.EVENT or \
        (w.decision is DecisionPlace.LOCALS and _uses_work_area(condition_nodes))
    if early_event:
        _start_event(w, probe, functions.begin)
    _start_decision(w, probe)
    header = _header_needed(probe, condition_nodes)
    if header:
        w.line("struct gs_event_hdr gs_hdr = {};")
        if header == "all":       # $timestamp too: one ktime for the condition and the event
            w.line(f"gs_fill_header(&gs_hdr, {w.probe_id}, GS_EVENT_TRACE, "
                   f"{probe.event_size});")
        else:
            w.line("gs_current_ids(&gs_hdr);")
        w.line("struct gs_event_hdr *hdr = &gs_hdr;")
    decided = _lookups(w, probe, condition_nodes, set())
    w.line(c.comment("decide: evaluate the conditions, note the lines to render"))
    for step in probe.steps:
        _decide_step(w, probe, step)
    marked = " | ".join(_lines_word(w, word) for word in range(probe.bitmap_words))
    w.line(f"if (!({marked}))")
    w.line(f"    return {functions.drop + '(ev)' if early_event else '0'};")
    w.line(c.comment("build: this event is sent"))
    _build(w, probe, started=early_event, header=header, decided=decided)
    if w.decision is not DecisionPlace.EVENT:
        _copy_decision(w, probe)
    _fill_values(w, probe, probe.steps, guarded=False)


def decides_in_map(probe: ProbePlan) -> bool:
    """Whether the probe's program needs the decision map (gs_abi.h)."""
    return bool(probe.lines) and _decision_place(probe) is DecisionPlace.MAP


def _decision_place(probe: ProbePlan) -> DecisionPlace:
    """Where the decision is noted: in locals while one condition is
    evaluated, else in map memory. With locals, each path through N `if`s
    holds its own constants, and testing them later makes the verifier keep
    the paths apart: 2^N of them, E2BIG past ~8 `if`s. Map memory is opaque
    to it, so after each `if` the paths meet in one state: linear in the
    script. A condition that compares target bytes does so in the map's
    work area, so that the event is not taken to lend its own. The
    decision map has room for GS_DECISION_WORDS bitmap words and
    GS_DECISION_CONDITIONS conditions; a larger probe notes its decision
    in its event, which it then takes before deciding."""
    conditions = len(_conditions(probe))
    if conditions == 0 or (conditions == 1 and not _uses_work_area(_condition_nodes(probe))):
        return DecisionPlace.LOCALS
    limits = abi().constants
    if probe.bitmap_words > limits["GS_DECISION_WORDS"] or \
            conditions > limits["GS_DECISION_CONDITIONS"]:
        return DecisionPlace.EVENT
    return DecisionPlace.MAP


def _start_decision(w: CWriter, probe: ProbePlan) -> None:
    """Where the decision goes, with no line marked yet."""
    match w.decision:
        case DecisionPlace.MAP:
            # volatile: every mark is a store to the map value, never a
            # register clang carries across an `if` (which would be a
            # constant per path again).
            w.line(f"volatile struct gs_decision *gs_dec = gs_begin_decision({w.probe_id});")
            w.line("if (!gs_dec)")
            w.line("    return 0;")
            for word in range(probe.bitmap_words):
                w.line(f"{_lines_word(w, word)} = 0;")
            if _uses_work_area(_condition_nodes(probe)):
                w.line("__u8 *work = (__u8 *)gs_dec->work;")
                w.declared_work = True
        case DecisionPlace.EVENT:
            w.line(f"__u64 *gs_lines = (__u64 *)(ev + {probe.bitmap_offset});")
            for word in range(probe.bitmap_words):
                w.line(f"{_lines_word(w, word)} = 0;")
        case DecisionPlace.LOCALS:
            for word in range(probe.bitmap_words):
                w.line(f"__u64 {_lines_word(w, word)} = 0;")
            for step in _conditions(probe):
                w.line(f"__u8 {_error_status(w, probe, step)} = 0;")
                w.line(f"__u64 {_error_address(w, probe, step)} = 0;")


def _copy_decision(w: CWriter, probe: ProbePlan) -> None:
    """The event gets the bitmap and each failed condition's ExprError."""
    for word in range(probe.bitmap_words):
        w.line(f"*(__u64 *)(ev + {probe.bitmap_offset + 8 * word}) = "
               f"{_lines_word(w, word)};")
    for step in _conditions(probe):
        slot = probe.slots[step.error_slot]
        with w.block(f"if ({_line_test(w, step.error_bit)})"):
            w.line(f"gs_fail_value(ev, {slot.offset}, {_error_status(w, probe, step)}, "
                   f"{_error_address(w, probe, step)});")


def _build(w: CWriter, probe: ProbePlan, started: bool, header: str = "",
           decided: set[tuple[str, int]] | None = None) -> None:
    """Start the event (unless started), fill its header (from the one
    the decision used, if any), look up what the values still need."""
    if not started:
        _start_event(w, probe, _event_functions(probe).begin)
    if header == "ids":
        w.line(f"gs_stamp_header(&gs_hdr, {w.probe_id}, GS_EVENT_TRACE, "
               f"{probe.event_size});")
    if header:
        w.line("__builtin_memcpy(ev, &gs_hdr, sizeof(gs_hdr));")
    else:
        w.line("struct gs_event_hdr *hdr = (struct gs_event_hdr *)ev;")
        w.line(f"gs_fill_header(hdr, {w.probe_id}, GS_EVENT_TRACE, {probe.event_size});")
    if not _conditions(probe):
        for word in range(probe.bitmap_words):
            w.line(f"*(__u64 *)(ev + {probe.bitmap_offset + 8 * word}) = "
                   f"{c.u64_literal(_always_marked(probe, word))};")
    _lookups(w, probe, list(probe.scalar_nodes()), decided or set())


def _start_event(w: CWriter, probe: ProbePlan, begin: str) -> None:
    """The event's bytes (its header is filled by the caller); the probe's
    work area follows it."""
    w.line(f"__u8 *ev = {begin}({w.probe_id}, {probe.event_size}, {_reserve(probe)});")
    w.line("if (!ev)")
    w.line("    return 0;")
    if _event_has_work_area(probe):
        # The values compare in the event's own work area (the conditions
        # may have compared in the decision's).
        declaration = "" if w.declared_work else "__u8 *"
        w.line(f"{declaration}work = ev + {_align(probe.event_size, 8)};")


def _lookups(w: CWriter, probe: ProbePlan, nodes, done: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """Module offsets and TLS blocks the nodes need and `done` lacks,
    keyed by the header's key_pid (hdr must be in scope)."""
    done = set(done)
    for cookie in sorted({n.cookie for n in nodes if isinstance(n, ir.ModuleAddress)}):
        if ("offsets", cookie) in done:
            continue
        done.add(("offsets", cookie))
        if cookie == probe.site.module_cookie:
            _own_module_offsets(w, probe, cookie)
            continue
        w.line(f"struct proc_module_offsets_value *{c.offsets_variable(cookie)} = "
               f"gs_module_offsets(ctx, hdr->key_pid, {c.u64_literal(cookie)});")
    for cookie in sorted({n.cookie for n in nodes if isinstance(n, ir.ThreadLocalBase)}):
        if ("tls", cookie) in done:
            continue
        done.add(("tls", cookie))
        w.line(f"struct proc_module_tls_value *{c.tls_variable(cookie)} = "
               f"gs_module_tls(ctx, hdr->key_pid, {c.u64_literal(cookie)});")
    return done


def _own_module_offsets(w: CWriter, probe: ProbePlan, cookie: int) -> None:
    """The probe's own module needs no map lookup (and so no pid): the
    kernel sets regs->ip to the probed instruction before running uprobe
    handlers, and all PT_LOADs of a module share one load bias, which is
    what the tracer would store for it (runtime/target.py). scalar.py adds
    it to the module's link-time addresses. Volatile: kept in a register,
    clang folds it into every address and the verifier's state count
    explodes (the 150-print arith differential probe failed with E2BIG;
    reloaded from the stack, as the map value was, it loads)."""
    if probe.site.at_return:
        # At a return, ip is the caller's: the entry probe recorded its own
        # in the call's record (emit/retprobe.py).
        _, data = record_offsets(probe.entry, ENTRY_IP_SLOT)
        w.line(f"volatile __u64 gs_bias = *(const __u64 *)(gs_rec + {data}) - "
               f"{c.u64_literal(probe.entry.site.address)};")
        return
    w.line(f"volatile __u64 gs_bias = {c.register_variable('ip')} - "
           f"{c.u64_literal(probe.site.address)};")


# ------------------------------------------------------------------ decide

def _decide_step(w: CWriter, probe: ProbePlan, step: Step) -> None:
    match step:
        case PrintStep(bit=bit):
            w.line(f"{_mark(w, bit)};")
        case IfStep():
            _decide_if(w, probe, step)
        case AggregateStep():
            emit_aggregate(w, step)


def _decide_if(w: CWriter, probe: ProbePlan, step: IfStep) -> None:
    """Soft abort: a failed condition records its status and address (its
    ExprError line) and skips its branch; an `else if` chain goes on."""
    slot = probe.slots[step.error_slot]
    cond, failed = f"gs_c{slot.index}", f"gs_cf{slot.index}"
    fail, done = f"gs_fail_{slot.index}", f"gs_done_{slot.index}"
    with w.statement(slot.span), w.block():
        w.line(c.comment(f"if {slot.expr_text}"))
        w.line(f"__u64 {cond} = 0;")
        w.line(f"int {failed} = 0;")
        with w.block():
            value = emit_scalar(w, slot.capture.condition, fail)
            w.line(f"{cond} = {value};")
            w.line(f"goto {done};")
        w.label(fail)
        w.line(f"{failed} = 1;")
        if w.decision is DecisionPlace.EVENT:
            w.line(f"gs_fail_value(ev, {slot.offset}, gs_st, gs_fa);")
        else:
            w.line(f"{_error_status(w, probe, step)} = gs_st;")
            w.line(f"{_error_address(w, probe, step)} = gs_fa;")
        w.line(f"{_mark(w, step.error_bit)};")
        w.label(done)
        with w.block(f"if (!{failed} && {cond})"):
            for inner in step.then:
                _decide_step(w, probe, inner)
        if step.otherwise:
            guard = "1" if step.else_is_chain else f"!{failed}"
            with w.block(f"else if ({guard})"):
                for inner in step.otherwise:
                    _decide_step(w, probe, inner)


# ------------------------------------------------------------------- build

def _fill_values(w: CWriter, probe: ProbePlan, steps, guarded: bool) -> None:
    """Fill the slots of every print, in script order: a print inside an
    `if` (guarded) only when the decide phase marked its line."""
    for step in steps:
        match step:
            case PrintStep(bit=bit, slots=slots) if slots:
                if guarded:
                    with w.block(f"if ({_line_test(w, bit)})"):
                        for index in slots:
                            emit_capture(w, probe.slots[index])
                else:
                    for index in slots:
                        emit_capture(w, probe.slots[index])
            case IfStep(then=then, otherwise=otherwise):
                _fill_values(w, probe, then + otherwise, guarded=True)


def _emit_pieces(w: CWriter, slot: ValueSlot, pieces, fail: str) -> None:
    """Assemble a composite in the slot: memory parts are read in place,
    value parts stored from the probe's computation."""
    for piece in pieces:
        data = f"{slot.data_offset} + {piece.offset}"
        if piece.address is not None:
            address = emit_scalar(w, piece.address, fail)
            w.line(f"if (gs_read_part(ev + {data}, {piece.size}, {address}, &gs_st, &gs_fa))")
            w.line(f"    goto {fail};")
        else:
            w.line(f"GS_STORE(ev, {slot.offset}, {data}, {piece.size}, "
                   f"{emit_scalar(w, piece.value, fail)});")
    w.line(f"GS_STATUS(ev, {slot.offset}) = GS_STATUS_OK;")


def emit_capture(w: CWriter, slot: ValueSlot) -> None:
    """Fill one value slot; failures land on the slot's own label."""
    fail, done = f"gs_fail_{slot.index}", f"gs_done_{slot.index}"
    where = f"ev, {slot.offset}, {slot.data_offset}"
    with w.statement(slot.span), w.block():
        w.line(c.comment(f"value {slot.index}: {slot.expr_text}"))
        capture = slot.capture
        match capture:
            case NoCapture(reason=reason, optimized_out=gone):
                w.line(c.comment(f"nothing to read: {reason}"))
                status = "GS_STATUS_OPTIMIZED_OUT" if gone else "GS_STATUS_UNAVAILABLE"
                w.line(f"GS_STATUS(ev, {slot.offset}) = {status};")
                return
            case ScalarCapture(value=v):
                w.line(f"GS_STORE({where}, 8, {emit_scalar(w, v, fail)});")
            case MemoryCapture(address=a, size=size):
                w.line(f"gs_read_user({where}, {size}, {emit_scalar(w, a, fail)});")
            case DeepCapture(address=a, root_size=size, from_value=True):
                w.line(f"GS_STORE({where}, 8, {emit_scalar(w, a, fail)});")
                emit_follows(w, slot, capture)
            case DeepCapture(address=a, root_size=size):
                w.line(f"gs_read_user({where}, {size}, {emit_scalar(w, a, fail)});")
                w.line(f"if (GS_STATUS(ev, {slot.offset}) == GS_STATUS_OK)")
                with w.block():
                    emit_follows(w, slot, capture)
            case CompositeCapture(pieces=pieces):
                _emit_pieces(w, slot, pieces, fail)
            case KnownBytesCapture():
                w.line(c.comment("known when planned: nothing to read"))
                w.line(f"GS_STATUS(ev, {slot.offset}) = GS_STATUS_OK;")
            case StringCapture(pointer=p, cap=cap):
                w.line(f"gs_read_str({where}, {cap + 2}, {emit_scalar(w, p, fail)});")
            case BacktraceCapture(stack_bytes=window, pending_returns=layout):
                w.line(f"gs_copy_pending_returns({_pending_returns_args(slot.data_offset, layout)});")
                w.line(f"gs_copy_stack(ctx, {where}, {window});")
            case EntryCapture(record_offset=source):
                w.line(c.comment("as the entry probe filled it, from the call's entry record"))
                w.line(f"if (bpf_probe_read_kernel(ev + {slot.offset}, "
                       f"{SLOT_HEADER_BYTES + slot.size}, gs_rec + {source}))")
                w.line(f"    {{ gs_st = GS_STATUS_READ_ERROR; goto {fail}; }}")
            case DumpCapture(address=a, length=n, cap=cap) | \
                    VariableArrayCapture(address=a, length=n, cap=cap):
                length = emit_scalar(w, n, fail)
                w.line(f"gs_read_dump({where}, {cap}, {emit_scalar(w, a, fail)}, "
                       f"(__s64){length});")
        w.line(f"goto {done};")
        w.label(fail)
        w.line(f"gs_fail_value(ev, {slot.offset}, gs_st, gs_fa);")
        w.label(done)


def _pending_returns_args(data_offset: int, layout) -> str:
    """gs_copy_pending_returns' arguments: where its struct goes (after
    the registers) and the kernel's offsets (utask 0: not known)."""
    pending = (f"(struct gs_pending_returns *)(ev + {data_offset} + "
               "sizeof(struct gs_backtrace_regs))")
    if not layout.known:
        return f"{pending}, 0, 0, 0, 0, 0 {c.comment(layout.unknown_reason)}"
    return (f"{pending}, {layout.utask}, {layout.return_instances}, {layout.stack}, "
            f"{layout.orig_ret_vaddr}, {layout.next}")


# ------------------------------------------------------------- plan facts

def _conditions(probe: ProbePlan) -> list[IfStep]:
    """Every `if` of the probe, nested ones too, in script order."""
    found: list[IfStep] = []

    def visit(steps) -> None:
        for step in steps:
            if isinstance(step, IfStep):
                found.append(step)
                visit(step.then + step.otherwise)
    visit(probe.steps)
    return found


def _condition_nodes(probe: ProbePlan) -> list:
    """What the decide phase evaluates: conditions and aggregation updates."""
    updates = [v for step in aggregate_steps(probe.steps) for v in aggregate_scalars(step)]
    return list(ir.walk([*(probe.slots[step.error_slot].capture.condition
                           for step in _conditions(probe)), *updates]))


def _header_needed(probe: ProbePlan, nodes) -> str:
    """What the conditions need of the header: "all" its fields ($pid,
    $timestamp...), only the "ids" (key_pid, for the load offsets of
    another module or a TLS block), or nothing ''."""
    if any(isinstance(n, ir.HeaderField) for n in nodes):
        return "all"
    if any(isinstance(n, ir.ThreadLocalBase) or
           (isinstance(n, ir.ModuleAddress) and n.cookie != probe.site.module_cookie)
           for n in nodes):
        return "ids"
    return ""


def _always_marked(probe: ProbePlan, word: int) -> int:
    bits = 0
    for step in probe.steps:
        if isinstance(step, PrintStep) and step.bit // 64 == word:
            bits |= 1 << (step.bit % 64)
    return bits


def _registers(probe: ProbePlan) -> list[str]:
    registers = {n.register for n in probe.scalar_nodes() if isinstance(n, ir.RegisterValue)}
    if probe.site.module_cookie in {n.cookie for n in probe.scalar_nodes()
                                    if isinstance(n, ir.ModuleAddress)}:
        registers.add("ip")           # _own_module_offsets
    return sorted(registers)


def _uses_work_area(nodes) -> bool:
    """Comparisons read target bytes into a work area."""
    return any(isinstance(node, (ir.BytesEqual, ir.MemoryEqual)) for node in nodes)


def _event_has_work_area(probe: ProbePlan) -> bool:
    """Whether a work area follows the event: for the values' comparisons,
    and for the conditions' when the decision map does not lend its own."""
    if _uses_work_area(_value_nodes(probe)):
        return True
    return _decision_place(probe) is not DecisionPlace.MAP and \
        _uses_work_area(_condition_nodes(probe))


def _value_nodes(probe: ProbePlan) -> list:
    """What the build phase evaluates: the printed values."""
    conditions = {step.error_slot for step in _conditions(probe)}
    return list(ir.walk([v for slot in probe.slots if slot.index not in conditions
                         for v in capture_scalars(slot.capture)]))


def _event_functions(probe: ProbePlan) -> _EventFunctions:
    """An event and work area larger than the per-CPU scratch go into a
    ring reservation in every build (plan/limits.py: only ring-buffer
    plans have such events)."""
    return _RING if _reserve(probe) > abi().constants["GS_SCRATCH_SIZE"] else _BUILD_DEFAULT


def _reserve(probe: ProbePlan) -> int:
    """Bytes the event needs: itself, then its work area when it has one
    (the scratch has room for one after any event it holds)."""
    if not _event_has_work_area(probe):
        return probe.event_size
    return _align(probe.event_size, 8) + abi().constants["GS_WORK_SIZE"]


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _lines_word(w: CWriter, word: int) -> str:
    match w.decision:
        case DecisionPlace.MAP:
            return f"gs_dec->lines[{word}]"
        case DecisionPlace.EVENT:
            return f"gs_lines[{word}]"
    return f"gs_lines{word}"


def _mark(w: CWriter, bit: int) -> str:
    return f"{_lines_word(w, bit // 64)} |= {c.u64_literal(1 << (bit % 64))}"


def _line_test(w: CWriter, bit: int) -> str:
    return f"{_lines_word(w, bit // 64)} & {c.u64_literal(1 << (bit % 64))}"


def _error_status(w: CWriter, probe: ProbePlan, step: IfStep) -> str:
    if w.decision is DecisionPlace.MAP:
        return f"gs_dec->failed_status[{_condition_index(probe, step)}]"
    return f"gs_es{step.error_slot}"


def _error_address(w: CWriter, probe: ProbePlan, step: IfStep) -> str:
    if w.decision is DecisionPlace.MAP:
        return f"gs_dec->failed_address[{_condition_index(probe, step)}]"
    return f"gs_ea{step.error_slot}"


def _condition_index(probe: ProbePlan, step: IfStep) -> int:
    """k of gs_decision's failed_status[k]: the condition's place in
    script order (its error slot is unique to it)."""
    return [other.error_slot for other in _conditions(probe)].index(step.error_slot)
