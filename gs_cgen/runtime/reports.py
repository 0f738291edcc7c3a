"""What the tracer prints besides events: the aggregations (stdout) and
--stats (stderr), every --interval seconds and once at the end."""
from __future__ import annotations

import os
import sys
import time

from gs_cgen.render.aggregations import render_aggregations
from gs_cgen.runtime.aggregations import read_aggregations, read_probe_stats
from gs_cgen.runtime.stats import enable_run_time_stats, stats_table


class Reports:
    """Prints the aggregations (if the script has any) and the --stats
    table; `start()` before the probes are attached (the kernel counts run
    time only from then on), `close()` at the end."""

    def __init__(self, session, style: str, stats: bool, interval: float | None,
                 out=None, err=None, run_times: bool = False) -> None:
        """`run_times`: keep the kernel's BPF run-time statistics on
        (--stats and --metrics report them)."""
        self.session, self.style, self.stats, self.interval = session, style, stats, interval
        self.run_times = run_times or stats
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.stats_fd: int | None = None
        self.next_due = None if interval is None else time.monotonic() + interval

    @property
    def wanted(self) -> bool:
        return self.stats or bool(self.session.plan.aggregations)

    def start(self) -> None:
        if self.run_times:
            self.stats_fd = enable_run_time_stats()

    def tick(self, now: float) -> None:
        """Print when an interval is due."""
        if self.next_due is None or now < self.next_due or not self.wanted:
            return
        while self.next_due <= now:
            self.next_due += self.interval
        self.print_all()

    def print_all(self) -> None:
        aggregations = self.session.plan.aggregations
        if aggregations:
            text = render_aggregations(read_aggregations(self.session, aggregations),
                                       self.style)
            self.out.write(text)
            self.out.flush()
        if self.stats:
            self.err.write("gs-cgen: probe statistics:\n"
                           + stats_table(read_probe_stats(self.session)) + "\n")
            self.err.flush()

    def close(self) -> None:
        if self.stats_fd is not None:
            os.close(self.stats_fd)
            self.stats_fd = None
