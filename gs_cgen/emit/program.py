"""Plan → C program text for BCC. Pure functions; golden-file tested."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from string import Template

from gs_cgen.abi import abi
from gs_cgen.emit import c
from gs_cgen.emit.aggregations import emit_aggregation_maps
from gs_cgen.emit.probe import ProbeCode, StatementLines, decides_in_map, emit_probe_code
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import EventTransport, Plan
from gs_cgen.source import SourceSpan

_HERE = Path(__file__).resolve().parent
_ASSERTED_STRUCTS = ("gs_event_hdr", "proc_module_key", "proc_module_offsets_value",
                     "gs_event_counts")
_SUBMIT = {
    EventTransport.RINGBUF: "long err = ${events}.ringbuf_output(ev, size, 0);",
    EventTransport.PERF: "long err = ${events}.perf_submit(ctx, ev, size);",
}
_NOTIFY = {
    EventTransport.RINGBUF: "${events}.ringbuf_output(&note, sizeof(note), 0);",
    EventTransport.PERF: "${events}.perf_submit(${ctx}, &note, sizeof(note));",
}
_EXEC_WATCH = """
/* -t mode: new programs may be the traced one; the tracer reads their maps. */
TRACEPOINT_PROBE(sched, sched_process_exec)
{
    struct gs_event_hdr note = {};
    gs_fill_header(&note, 0, GS_EVENT_EXEC, sizeof(note));
    ${notify}
    return 0;
}
"""
_TLS_SECTION = """
/* Where each module's TLS block is, per process (runtime/tls.py fills it
 * from ld.so's link_map); a miss asks the tracer, as for load offsets. */
BPF_HASH(${tls}, struct proc_module_key, struct proc_module_tls_value, GS_MAX_TRACKED_MODULES);

static __always_inline struct proc_module_tls_value *
gs_module_tls(struct pt_regs *ctx, __u32 key_pid, __u64 cookie)
{
    struct proc_module_key key = {};
    key.pid = key_pid;
    key.module_cookie = cookie;
    struct proc_module_tls_value *tls = ${tls}.lookup(&key);
    if (!tls)
        gs_want_offsets(ctx, key.pid);
    return tls;
}
"""
# Where a probe with several `if`s decides (gs_abi.h struct gs_decision).
# A hit that finds no room (task storage could not be allocated) is
# counted lost: it may have had an event to send.
_DECISION_SECTION = """
#if ${sleepable}
BPF_TASK_STORAGE(${decisions}, struct gs_decision);

static __always_inline volatile struct gs_decision *gs_begin_decision(__u32 probe_id)
{
    struct gs_decision *decision = ${decisions}.task_storage_get(
        bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!decision)
        gs_count_output(probe_id, 1);
    return decision;
}
#else
BPF_PERCPU_ARRAY(${decisions}, struct gs_decision, 1);

static __always_inline volatile struct gs_decision *gs_begin_decision(__u32 probe_id)
{
    __u32 zero = 0;
    return ${decisions}.lookup(&zero);
}
#endif
"""
# A sleepable build makes the ring reservation every probe's way.
_RING_BY_DEFAULT = """
static __always_inline __u8 *gs_begin_event(__u32 probe_id, __u32 size, __u32 reserve)
{
    return gs_begin_ring_event(probe_id, size, reserve);
}

static __always_inline int gs_submit(struct pt_regs *ctx, __u8 *ev, __u32 size)
{
    return gs_submit_ring(ctx, ev, size);
}

static __always_inline int gs_drop(__u8 *ev)
{
    return gs_drop_ring(ev);
}
"""
_EVENTS_DECL = {
    EventTransport.RINGBUF: "BPF_RINGBUF_OUTPUT(${events}, GS_RINGBUF_PAGES);",
    EventTransport.PERF: "BPF_PERF_OUTPUT(${events});",
}


@dataclass(frozen=True)
class EmittedProgram:
    text: str
    # probe id -> the BPF function that runs at its site (its own, or the
    # one it shares with sites whose code is the same)
    functions: Mapping[int, str]
    # which lines of `text` each script statement produced, innermost
    # first; each probe's functions as a whole are its trace block's
    statements: tuple[StatementLines, ...] = ()


def emit_program(plan: Plan) -> str:
    """The whole C source for one plan."""
    return emit(plan).text


def emit(plan: Plan) -> EmittedProgram:
    """The C source, which function each probe runs, and which lines each
    script statement produced."""
    functions, codes = _probe_functions(plan)
    parts = [_banner(plan, functions), _includes(plan),
             _layout_asserts(_asserted_structs(plan)), _runtime_section(plan)]
    if any(decides_in_map(probe) for probe in plan.probes):
        parts.append(Template(_DECISION_SECTION).substitute(
            sleepable=c.SLEEPABLE_MACRO, decisions=abi().map_names["GS_MAP_DECISIONS"]))
    if plan.aggregations:
        parts.append(emit_aggregation_maps(plan))
    statements = _statement_lines("\n".join(parts).count("\n") + 2, codes)
    parts.extend(code.text for code, _ in codes)
    return EmittedProgram("\n".join(parts), functions, statements)


def _statement_lines(first_line: int, codes) -> tuple[StatementLines, ...]:
    """The codes' statement lines in the program, whose `first_line` the
    first code starts at (parts are joined by "\n"): every statement,
    innermost first, then each code as a whole as its trace block's."""
    inner: list[StatementLines] = []
    whole: list[StatementLines] = []
    for code, span in codes:
        inner.extend(StatementLines(first_line + s.first - 1, first_line + s.last - 1, s.span)
                     for s in code.statements)
        last_line = first_line + code.text.count("\n") - 1
        if span is not None:
            whole.append(StatementLines(first_line, last_line, span))
        first_line = last_line + 2
    return tuple(inner + whole)


def _probe_functions(plan: Plan) -> tuple[dict[int, str],
                                           list[tuple[ProbeCode, SourceSpan | None]]]:
    """One function per probe, except that with plan.shared_programs the
    probes whose code differs only in their id share one, which reads the
    id from its attach cookie: an inlined function's thousands of copies
    (Py_INCREF in libpython: 2604 sites) compile as ~100 functions, not
    one each. A probe alone with its code keeps its id a constant, free
    at every hit. Each code goes with its trace block's span."""
    shared = _shared_code(plan) if plan.shared_programs else {}
    owners: dict[str, int] = {}
    functions, codes = {}, []
    for probe in plan.probes:
        probe_id = probe.site.probe_id
        code = shared.get(probe_id)
        if code is None:
            functions[probe_id] = c.probe_function_name(probe_id)
            codes.append((_emit_probe_functions(probe), probe.site.span))
            continue
        owner = owners.setdefault(code.text, probe_id)
        functions[probe_id] = c.probe_function_name(owner)
        if owner == probe_id:
            text = code.text.replace(_SHARED, f"int {functions[probe_id]}", 1)
            codes.append((ProbeCode(text, code.statements), probe.site.span))
    return functions, codes


# The name a shared probe's code is compared under.
_SHARED = "int gs_probe_shared"


def _shared_code(plan: Plan) -> dict[int, ProbeCode]:
    """probe id -> its code, for the probes whose code another has too."""
    code = {probe.site.probe_id: emit_probe_code(probe, function=_SHARED, id_from_cookie=True)
            for probe in plan.probes if probe.entry is None}
    count = Counter(emitted.text for emitted in code.values())
    return {probe_id: emitted for probe_id, emitted in code.items() if count[emitted.text] > 1}


def _emit_probe_functions(probe) -> ProbeCode:
    if probe.entry is not None:          # FUNC:return: the uretprobe and its entry probe
        from gs_cgen.emit.retprobe import emit_return_probe  # noqa: PLC0415
        return ProbeCode(emit_return_probe(probe))
    return emit_probe_code(probe)


def _banner(plan: Plan, functions: Mapping[int, str]) -> str:
    lines = [f"Generated by gs-cgen from {plan.script_name}. DO NOT EDIT."]
    shared = {name for name, users in Counter(functions.values()).items() if users > 1}
    for probe in plan.probes:
        site = probe.site
        lines.append(f"probe {site.probe_id}: {site.pattern_text} at {site.module_path} "
                     f"0x{site.address:x} (file offset 0x{site.file_offset:x})"
                     f"{_return_note(probe)}"
                     f"{_shared_note(functions[site.probe_id], shared)}")
    return "\n".join(c.comment(line) for line in lines) + "\n"


def _shared_note(function: str, shared: set[str]) -> str:
    return f", runs {function} (shared; its id is the attach cookie)" if function in shared else ""


def _return_note(probe) -> str:
    if probe.entry is None:
        return ""
    entry = probe.entry.site
    return (f", a uretprobe; its entry probe at 0x{entry.address:x} "
            f"(file offset 0x{entry.file_offset:x})")


def _includes(plan: Plan) -> str:
    ns = plan.pid_namespace
    return "\n".join([*_thread_pointer_define(plan),
        "#include <uapi/linux/ptrace.h>",
        "#include <uapi/linux/bpf.h>",
        f"#define GS_USE_NS_PID {1 if ns.use_ns_helper else 0}",
        f"#define GS_PIDNS_DEV {c.u64_literal(ns.dev)}",
        f"#define GS_PIDNS_INO {c.u64_literal(ns.ino)}",
        f"#define GS_TARGET_NS_PID {1 if ns.target_ino else 0}",
        f"#define GS_TARGET_PIDNS_DEV {c.u64_literal(ns.target_dev)}",
        f"#define GS_TARGET_PIDNS_INO {c.u64_literal(ns.target_ino)}",
        f"#ifndef {c.SLEEPABLE_MACRO}",
        f"#define {c.SLEEPABLE_MACRO} 0  {c.comment('the loader defines it 1 for sleepable uprobes')}",
        "#endif",
        '#include "gs_abi.h"',
        '#include "gs_prelude.h"',
        "",
    ])


def _thread_pointer_define(plan: Plan) -> list[str]:
    """Where the kernel keeps the thread pointer, for gs_tls_block
    (gs_prelude.h): only in programs that read thread-local variables."""
    if plan.task_fsbase_offset is None:
        return []
    return [c.comment("task_struct.thread.fsbase, from the running kernel's BTF"),
            f"#define GS_TASK_FSBASE_OFFSET {plan.task_fsbase_offset}"]


def _uses_tls(plan: Plan) -> bool:
    return plan.task_fsbase_offset is not None


def _asserted_structs(plan: Plan) -> tuple[str, ...]:
    return _ASSERTED_STRUCTS + (("proc_module_tls_value",) if _uses_tls(plan) else ())


def _layout_asserts(structs: tuple[str, ...]) -> str:
    """The compiler re-checks every offset Python derived from gs_abi.h."""
    lines = []
    for name in structs:
        layout = abi().structs[name]
        lines.append(f'_Static_assert(sizeof(struct {name}) == {layout.size}, '
                     f'"gs_abi.h layout drift: {name}");')
        for field in layout.fields:
            lines.append(f"_Static_assert(__builtin_offsetof(struct {name}, {field.name}) == "
                         f'{field.offset}, "gs_abi.h layout drift: {name}.{field.name}");')
    return "\n".join(lines) + "\n"


def _runtime_section(plan: Plan) -> str:
    names = abi().map_names
    events = names["GS_MAP_EVENTS"]
    template = Template((_HERE / "runtime.c.in").read_text())
    notify = Template(_NOTIFY[plan.transport])
    exec_watch = ""
    if plan.watch_exec:
        exec_notify = notify.substitute(events=events, ctx="args")
        exec_watch = Template(_EXEC_WATCH).substitute(notify=exec_notify)
    tls_section = Template(_TLS_SECTION).substitute(tls=names["GS_MAP_TLS"]) \
        if _uses_tls(plan) else ""
    return template.substitute(
        events_decl=Template(_EVENTS_DECL[plan.transport]).substitute(events=events),
        tls_section=tls_section,
        event_builder=_event_builder(plan.transport, events, names["GS_MAP_SCRATCH"]),
        notify=notify.substitute(events=events, ctx="ctx"), exec_watch=exec_watch,
        counts=names["GS_MAP_COUNTS"], probe_count=max(1, len(plan.probes)),
        offsets=names["GS_MAP_OFFSETS"], aliases=names["GS_MAP_PID_ALIASES"],
        wanted=names["GS_MAP_OFFSETS_WANTED"])


def _event_builder(transport: EventTransport, events: str, scratch: str) -> str:
    """gs_begin_event / gs_submit / gs_drop. Over the ring buffer, the
    loader picks one of two builds: sleepable (events in reserved ring
    space) or not (per-CPU scratch); in both, an event too large for the
    scratch uses the ring variants (_event_functions). Sleepable programs
    cannot use perf event arrays, so the perf build has only the scratch
    variant."""
    submit = Template(_SUBMIT[transport]).substitute(events=events)
    in_scratch = Template((_HERE / "events_scratch.c.in").read_text()).substitute(
        scratch=scratch, submit=submit)
    if transport is EventTransport.PERF:
        return (f"#if {c.SLEEPABLE_MACRO}\n"
                '#error "sleepable programs cannot use perf event arrays"\n'
                f"#endif\n{in_scratch}")
    reserved = Template((_HERE / "events_reserved.c.in").read_text()).substitute(events=events)
    return f"{reserved}\n#if {c.SLEEPABLE_MACRO}{_RING_BY_DEFAULT}#else\n{in_scratch}#endif"
