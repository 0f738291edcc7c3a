"""Drive the event loop: poll the ring, hand raw events on, watch the loss
counters and the stop conditions. Moves bytes only; rendering is elsewhere."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

LOSS_REPORT_INTERVAL_S = 2.0
# At the end, events already in the ring are still rendered, for this long
# at most (a target still flooding the ring must not keep us alive).
DRAIN_SECONDS = 2.0


@dataclass
class LossTracker:
    """Drops counted by the probe's per-CPU counter when an output failed."""

    kernel_lost: int = 0
    reported: int = 0
    last_report: float = field(default_factory=time.monotonic)

    @property
    def total(self) -> int:
        return self.kernel_lost

    def unreported(self, now: float, force: bool = False) -> int:
        """How many new losses to report now (0 when nothing is due)."""
        due = force or now - self.last_report >= LOSS_REPORT_INTERVAL_S
        if not due or self.total == self.reported:
            return 0
        new = self.total - self.reported
        self.reported, self.last_report = self.total, now
        return new


def collect(session, on_event: Callable[[bytes], None], should_stop: Callable[[], bool],
            on_loss: Callable[[int], None], poll_ms: int = 100) -> LossTracker:
    """Poll until `should_stop()`; return the loss tally (already reported)."""
    losses = LossTracker()
    session.open_events(on_event)
    try:
        while not should_stop():
            session.poll(poll_ms)
            losses.kernel_lost = session.lost_events()
            if new := losses.unreported(time.monotonic()):
                on_loss(new)
    finally:
        _drain(session)
        losses.kernel_lost = session.lost_events()
        if new := losses.unreported(time.monotonic(), force=True):
            on_loss(new)
    return losses


def _drain(session) -> None:
    deadline = time.monotonic() + DRAIN_SECONDS
    while session.poll(0) and time.monotonic() < deadline:
        pass
