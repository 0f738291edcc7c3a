"""Where rendered events go: plain lines, rich-styled lines, or JSON.

A sink returns how many lines it printed: an event whose conditions all
failed prints nothing and does not count towards --max-events."""
from __future__ import annotations

import sys
from typing import Callable

from gs_cgen.plan.model import ProbePlan
from gs_cgen.render.decode import Event
from gs_cgen.render.lines import render_json, render_lines

Sink = Callable[[Event, ProbePlan], int]


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
