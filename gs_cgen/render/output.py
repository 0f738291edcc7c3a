"""Where rendered events go: plain lines, rich-styled lines, or JSON."""
from __future__ import annotations

import sys
from typing import Callable

from gs_cgen.plan.model import ProbePlan
from gs_cgen.render.decode import Event
from gs_cgen.render.lines import render_json, render_lines

Sink = Callable[[Event, ProbePlan], None]


def make_sink(style: str) -> Sink:
    if style == "pretty":
        return _pretty_sink()
    return {"plain": _plain, "json": _json}[style]


def _plain(event: Event, probe: ProbePlan) -> None:
    for line in render_lines(event, probe):
        sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _json(event: Event, probe: ProbePlan) -> None:
    sys.stdout.write(render_json(event, probe) + "\n")
    sys.stdout.flush()


def _pretty_sink() -> Sink:
    """rich on a terminal: a dim event header, then the printed lines."""
    from rich.console import Console  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415
    console = Console(highlight=False)

    def pretty(event: Event, probe: ProbePlan) -> None:
        header = Text(f"[{probe.site.pattern_text}] pid {event.pid} tid {event.tid}",
                      style="dim cyan")
        console.print(header)
        for line in render_lines(event, probe):
            console.print(Text("  " + line))
    return pretty
