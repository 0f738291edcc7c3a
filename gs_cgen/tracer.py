"""A live trace, start to end: load, fill maps, attach, collect, render,
and detach on every exit path. The CLI calls `run_trace`."""
from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from typing import Callable

from gs_cgen.pipeline import Compiled
from gs_cgen.render.decode import decode, event_header
from gs_cgen.render.output import make_sink
from gs_cgen.runtime import target as proc
from gs_cgen.runtime.collector import collect
from gs_cgen.runtime.session import TraceSession, require_privileges
from gs_cgen.runtime.symbolize import FrameResolver


@dataclass(frozen=True)
class TraceOptions:
    output: str                  # plain | pretty | json
    max_events: int | None
    duration: float | None
    dry_run: bool
    pid: int | None              # -p: attach filtered to this process
    stop_when_gone: int | None   # end when this PID exits


class _StopFlag:
    def __init__(self) -> None:
        self.raised = False
        self.reason = ""

    def __call__(self, signum, _frame) -> None:
        self.raised, self.reason = True, signal.Signals(signum).name


def run_trace(compiled: Compiled, options: TraceOptions,
              diagnostics: Callable[[str], None]) -> int:
    require_privileges()
    stop = _StopFlag()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    session = TraceSession(compiled.plan, compiled.c_text)
    try:
        session.load()
        if options.dry_run:
            _print_sites(compiled)
            return 0
        _fill_offsets(session, compiled, options.pid)
        if stop.raised:
            return 0
        session.attach(options.pid)
        diagnostics(f"tracing {len(compiled.plan.probes)} probe(s); Ctrl-C to stop")
        return _loop(session, compiled, options, stop, diagnostics)
    finally:
        session.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _fill_offsets(session: TraceSession, compiled: Compiled, pid: int | None) -> None:
    """Load offsets of every module a probe reads globals from, per process."""
    for module in compiled.plan.modules:
        pids = [pid] if pid is not None else proc.processes_mapping(module.path)
        for each in pids:
            try:
                target = proc.open_process(each)
            except Exception:  # noqa: BLE001 — the process may be gone already
                continue
            offsets = proc.module_offsets(target, module.path, module.segments)
            if offsets is not None:
                session.set_module_offsets(each, module.cookie, offsets)


def _loop(session, compiled: Compiled, options: TraceOptions, stop: _StopFlag,
          diagnostics) -> int:
    probes = {p.site.probe_id: p for p in compiled.plan.probes}
    sink = make_sink(options.output, FrameResolver())
    rendered = 0
    deadline = None if options.duration is None else time.monotonic() + options.duration

    def on_event(raw: bytes) -> None:
        nonlocal rendered
        if options.max_events is not None and rendered >= options.max_events:
            return
        probe = probes.get(event_header(raw)["probe_id"])
        if probe is not None:
            sink(decode(raw, probe), probe)
            rendered += 1

    def should_stop() -> bool:
        if options.max_events is not None and rendered >= options.max_events:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return True
        if options.stop_when_gone is not None and not proc.is_alive(options.stop_when_gone):
            diagnostics(f"process {options.stop_when_gone} exited")
            return True
        return stop.raised

    collect(session, on_event, should_stop, lambda n: diagnostics(f"lost {n} events"))
    return 0


def _print_sites(compiled: Compiled) -> None:
    for probe in compiled.plan.probes:
        site = probe.site
        where = f"{site.source_file}:{site.source_line}" if site.source_file else "?"
        print(f"probe {site.probe_id}: {site.pattern_text} -> {site.function or '?'} at {where} "
              f"[{site.module_path} 0x{site.address:x}, file offset 0x{site.file_offset:x}] "
              f"({len(probe.slots)} value(s), {probe.event_size}-byte event) verified")
    sys.stdout.flush()
