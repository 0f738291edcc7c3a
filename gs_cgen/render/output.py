"""Where rendered events go: plain lines, rich-styled lines, or JSON.

A sink returns how many lines it printed: an event whose conditions all
failed prints nothing and does not count towards --max-events."""
from __future__ import annotations

import sys
from typing import Callable

from gs_cgen.plan.model import ProbePlan
from gs_cgen.render.decode import Event, decode
from gs_cgen.render.lines import render_json, render_lines
from gs_cgen.render.plans import build_renderer

Sink = Callable[[Event, ProbePlan], int]


class EventWriter:
    """Renders events as they are read and writes them out in chunks: one
    write per `flush()` (the tracer flushes once per poll batch), not one
    per line. Plain and JSON go through each probe's precompiled render
    plan (render/plans.py); pretty prints through rich as it goes."""

    def __init__(self, style: str, probes: dict[int, ProbePlan], resolve_frame=None,
                 stream=None) -> None:
        self.stream = stream
        self.chunks: list[str] = []     # rendered, not yet written
        if style == "pretty":
            sink = make_sink(style, resolve_frame)
            self.renderers = {probe_id: self._through_sink(sink, probe)
                              for probe_id, probe in probes.items()}
        else:
            self.renderers = {probe_id: build_renderer(probe, style, resolve_frame)
                              for probe_id, probe in probes.items()}

    @staticmethod
    def _through_sink(sink: Sink, probe: ProbePlan):
        def render(buffer, offset: int, size: int) -> tuple[str, int]:
            return "", sink(decode(bytes(buffer[offset:offset + size]), probe), probe)
        return render

    def write(self, probe_id: int, buffer, offset: int, size: int) -> bool:
        """Render one event (`buffer[offset:offset + size]`); True when it
        printed anything. An unknown probe id prints nothing. (The tracer's
        hot loop does the same with `renderers` and `chunks` directly.)"""
        renderer = self.renderers.get(probe_id)
        if renderer is None:
            return False
        text, count = renderer(buffer, offset, size)
        if count:
            self.chunks.append(text)
        return count > 0

    def flush(self) -> None:
        stream = self.stream or sys.stdout
        chunks = self.chunks[:]
        self.chunks.clear()             # the same list: the tracer appends to it
        binary = getattr(stream, "buffer", None)
        if chunks and binary is not None:
            # Each chunk encoded while small, then one join: joining the
            # text first and having the text layer encode the whole batch
            # copied it twice more (~0.2 µs an event of JSON here).
            stream.flush()                      # what was printed before goes first
            encoding, errors = stream.encoding, stream.errors or "strict"
            binary.write(b"".join([chunk.encode(encoding, errors) for chunk in chunks]))
            binary.flush()
            return
        if chunks:
            stream.write("".join(chunks))
        stream.flush()


def make_sink(style: str, resolve_frame=None) -> Sink:
    """`resolve_frame` names backtrace frames (see runtime/symbolize.py)."""
    if style == "pretty":
        return _pretty_sink(resolve_frame)

    # No flush per event: the tracer flushes after every poll batch.
    def plain(event: Event, probe: ProbePlan) -> int:
        lines = render_lines(event, probe, resolve_frame)
        sys.stdout.write("".join(line + "\n" for line in lines))
        return len(lines)

    def as_json(event: Event, probe: ProbePlan) -> int:
        if not event.executed:
            return 0
        sys.stdout.write(render_json(event, probe, resolve_frame) + "\n")
        return 1

    return {"plain": plain, "json": as_json}[style]


def _pretty_sink(resolve_frame) -> Sink:
    """rich on a terminal: a dim event header, then the printed lines."""
    from rich.console import Console  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415
    console = Console(highlight=False)

    def pretty(event: Event, probe: ProbePlan) -> int:
        lines = render_lines(event, probe, resolve_frame)
        if not lines:
            return 0
        console.print(Text(f"[{probe.site.pattern_text}] pid {event.pid} tid {event.tid}",
                           style="dim cyan"))
        for line in lines:
            style = "bold red" if line.startswith("ExprError:") else None
            console.print(Text("  " + line, style=style))
        return len(lines)
    return pretty
