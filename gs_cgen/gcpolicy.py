"""When Python's cyclic garbage collector runs.

A run builds its indexes, plan and program in well under a second and
keeps nearly everything it allocates, so the collections the default
thresholds trigger on the way (~120 for a trace start, ~50-90 for an
`info`) find little and cost 10-25 ms: mypy raises its threshold for the
same reason. Start-up therefore collects rarely; once a trace is attached,
what start-up made is frozen out of the collector's view (`gc.freeze`)
and the default thresholds come back for the session's own garbage.
`start_up` runs when gs_cgen.cli is imported, before click and the rest:
the imports alone triggered ~20 collections. When the command is done,
`finish` freezes what is left, so the collection the interpreter makes
as it shuts down has nothing to scan: over an `info` on libpython's
objects it took ~60 ms, a third of the whole run.

What it buys today (issue #27's 20 ms bar), against Python's default
policy, median of 9 runs, Dec 2026: `info` on a small binary 71 -> 89 ms,
`info function` on libpython 80 -> 99 ms, `trace --dry-run` 134 -> 173 ms.
"""
from __future__ import annotations

import gc

_START_UP_THRESHOLD = 200_000         # allocations between young collections
_defaults = gc.get_threshold()


def start_up() -> None:
    gc.set_threshold(_START_UP_THRESHOLD, *_defaults[1:])


def steady() -> None:
    """The long-running part of a trace begins. No collection first: one
    takes ~80 ms over a trace's ~50k objects and finds a few hundred."""
    gc.freeze()
    gc.set_threshold(*_defaults)


def finish() -> None:
    """The command is over (its output flushed, its probes detached): only
    the interpreter's shutdown follows, which needs no cycle collected."""
    gc.freeze()
