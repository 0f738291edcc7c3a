"""A live trace, start to end: load, fill maps, attach, collect, render,
and detach on every exit path. The CLI calls `run_trace`."""
from __future__ import annotations

import signal
import sys
import time
from typing import Callable

from gs_cgen import gcpolicy
from gs_cgen.abi import abi
from gs_cgen.lazydataclass import dataclass
from gs_cgen.pipeline import Compiled
from gs_cgen.render.output import EventWriter
from gs_cgen.runtime import target as proc
from gs_cgen.runtime.collector import LossReports, collect
from gs_cgen.runtime.launch import LaunchedCommand
from gs_cgen.runtime.offsets import OffsetKeeper
from gs_cgen.runtime.reports import Reports
from gs_cgen.runtime.session import TraceSession, require_privileges
from gs_cgen.runtime.symbolize import FrameResolver

# How often a trace of -p PID looks whether PID is still there.
ALIVE_CHECK_S = 0.1


@dataclass(frozen=True)
class TraceOptions:
    output: str                  # plain | pretty | json
    max_events: int | None
    duration: float | None
    dry_run: bool
    pid: int | None              # only this process's events (-p, launch)
    stop_when_gone: int | None   # end when this PID exits (-p)
    stats: bool = False          # --stats: per-probe cost on stderr
    interval: float | None = None   # --interval: aggregations/stats every SECONDS
    metrics: tuple[str, int] | None = None   # --metrics HOST:PORT


class _StopFlag:
    def __init__(self) -> None:
        self.raised = False

    def __call__(self, signum, _frame) -> None:
        self.raised = True


def run_trace(compiled: Compiled, options: TraceOptions, diagnostics: Callable[[str], None],
              launched: LaunchedCommand | None = None) -> int:
    """Load, attach, collect until a stop condition; detach on every path."""
    if options.metrics is not None:
        from gs_cgen.render.metrics import check_metric_names  # noqa: PLC0415 - --metrics only
        check_metric_names(compiled.plan.aggregations)
    require_privileges()
    stop = _StopFlag()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    session = TraceSession(compiled.plan, compiled.c_text, compiled.functions,
                           compiled.statements)
    # Probe seconds need the kernel's BPF run-time statistics, as --stats.
    reports = Reports(session, options.output, options.stats, options.interval,
                      run_times=options.stats or options.metrics is not None)
    metrics = None
    try:
        session.load(watch_exec=not options.dry_run)
        if session.read_mode.note:
            diagnostics(session.read_mode.note)
        if options.dry_run:
            diagnostics(session.load_note)
            if sharing := _sharing_note(compiled):
                diagnostics(sharing)
            _print_sites(compiled)
            return 0
        keeper = OffsetKeeper(session, compiled.plan.modules, options.pid, notes=diagnostics)
        keeper.fill_existing()
        if stop.raised:
            return 0
        reports.start()
        if options.metrics is not None:
            metrics = _serve_metrics(session, options.metrics, diagnostics)
        session.open_events()        # before attaching: a first event has somewhere to go
        session.attach(options.pid)
        diagnostics(f"tracing {len(compiled.plan.probes)} probe(s); Ctrl-C to stop")
        gcpolicy.steady()
        resolver = FrameResolver()
        if options.pid is not None:
            resolver.remember(options.pid)
        if launched is not None:
            _start(launched, keeper, resolver)
        status = _loop(session, compiled, options, stop, diagnostics, keeper, launched, resolver,
                       reports)
        if reports.wanted:
            reports.print_all()         # the probes are detached: these are final
        if launched is not None and launched.released and launched.end():
            diagnostics(f"trace ended; command {launched.exit_description()}")
        return status
    finally:
        if metrics is not None:
            metrics.stop()           # no scrape reads the maps once they are closed
        reports.close()
        session.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve_metrics(session, address: tuple[str, int], diagnostics):
    from gs_cgen.runtime.metrics import MetricsServer  # noqa: PLC0415 - --metrics only
    server = MetricsServer(session, *address, notes=diagnostics)
    diagnostics(f"serving metrics at {server.start()}")
    return server


def _start(launched: LaunchedCommand, keeper: OffsetKeeper, resolver: FrameResolver) -> None:
    """Let the held command go. The probes are live through ld.so and the
    libraries' constructors; at the program's entry point every library it
    links is mapped, so their offsets are filled before its own code runs
    (else its first events would read other modules' globals as
    unavailable). Its maps are read there too, so that a command which
    exits before its `bt` events render still has its modules named."""
    if launched.run_to_entry():
        keeper.watch(launched.pid)
        resolver.remember(launched.pid)
    launched.release()


def _loop(session, compiled: Compiled, options: TraceOptions, stop: _StopFlag, diagnostics,
          keeper: OffsetKeeper, launched: LaunchedCommand | None, resolver: FrameResolver,
          reports: Reports | None = None) -> int:
    probes = {p.site.probe_id: p for p in compiled.plan.probes}
    writer = EventWriter(options.output, probes, resolver)
    renderers, emit = writer.renderers, writer.chunks.append
    kinds = abi().constants
    limit = float("inf") if options.max_events is None else options.max_events
    rendered = 0
    deadline = None if options.duration is None else time.monotonic() + options.duration

    def on_event(probe_id: int, buffer, offset: int, size: int) -> bool:
        """False once no more events are wanted (ends the current poll)."""
        nonlocal rendered
        if rendered >= limit:
            return False
        render = renderers.get(probe_id)
        if render is not None:
            text, count = render(buffer, offset, size)
            if count:
                emit(text)
                rendered += 1
        return True

    def on_notice(kind: int, key_pid: int) -> None:
        """A probe found no load offsets for key_pid, or key_pid exec'd."""
        if kind in (kinds["GS_EVENT_OFFSETS_MISS"], kinds["GS_EVENT_EXEC"]):
            keeper.watch(key_pid)

    def should_stop() -> bool:
        writer.flush()           # one write per poll batch, not per event
        keeper.retry()
        if reports is not None:
            reports.tick(time.monotonic())
        if max_events_reached():
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return True
        if launched is not None and launched.process.poll() is not None:
            diagnostics(f"command {launched.exit_description()}")
            return True
        if options.stop_when_gone is not None and gone():
            diagnostics(f"process {options.stop_when_gone} exited")
            return True
        return stop.raised

    last_alive_check = time.monotonic()

    def gone() -> bool:
        # /proc is read at most every ALIVE_CHECK_S, not once per poll batch
        # (thousands a second in a flood: a tenth of the reader's time).
        nonlocal last_alive_check
        now = time.monotonic()
        if now - last_alive_check < ALIVE_CHECK_S:
            return False
        last_alive_check = now
        return not proc.is_alive(options.stop_when_gone)

    def max_events_reached() -> bool:
        return rendered >= limit

    losses = LossReports(
        periodic=lambda new, total: diagnostics(f"lost {new} events ({total} in total)"),
        final=lambda total: diagnostics(f"lost {total} events in total"))
    try:
        collect(session, on_event, should_stop, losses,
                unread_is_lost=lambda: not max_events_reached(), on_notice=on_notice)
    finally:
        writer.flush()           # what the end-of-trace drain rendered
    return 0


def _print_sites(compiled: Compiled) -> None:
    for probe in compiled.plan.probes:
        site = probe.site
        where = f"{site.source_file}:{site.source_line}" if site.source_file else "?"
        handling = f", {site.handling}" if site.handling else ""
        print(f"probe {site.probe_id}: {site.pattern_text} -> {site.function_text} at {where} "
              f"[{site.module_path} 0x{site.address:x}, file offset 0x{site.file_offset:x}"
              f"{handling}] ({_event_text(probe)}) verified")
        if site.placement_note:
            print(f"  placed {site.placement_note}")
        if probe.entry is not None:
            _print_entry_site(probe)
    sys.stdout.flush()


def _sharing_note(compiled: Compiled) -> str | None:
    programs, probes = len(set(compiled.functions.values())), len(compiled.plan.probes)
    if programs == probes:
        return None
    return f"{probes} probes run {programs} BPF programs: sites whose code is the same share one"


def _print_entry_site(probe) -> None:
    """A return probe (a uretprobe) and the entry probe it pairs with."""
    entry = probe.entry.site
    print(f"  at return (uretprobe); entry probe {_site_text(entry)} "
          f"({len(probe.entry.slots) - 3} $entry value(s), {probe.entry.event_size}-byte "
          "entry record) verified")
    if probe.entry_capture is not None:
        print(f"  $entry values read {_site_text(probe.entry_capture.site)} verified")


def _site_text(site) -> str:
    where = f"{site.source_file}:{site.source_line}" if site.source_file else "?"
    handling = f", {site.handling}" if site.handling else ""
    return (f"at {where} [{site.module_path} 0x{site.address:x}, "
            f"file offset 0x{site.file_offset:x}{handling}]")


def _event_text(probe) -> str:
    if not probe.lines:
        return "aggregations only, no event"
    return f"{len(probe.slots)} value(s), {probe.event_size}-byte event"
