"""Drive the event loop: poll the ring, hand raw events on, keep the event
account and the stop conditions. Moves bytes only; rendering is elsewhere.

Loss is never silent and never estimated. The probes count, per probe, the
trace events they wrote to the ring (`sent`) and those the ring refused
(`failed`); the collector counts the trace events it read. At the end the
probes are detached first, so nothing more is produced, then the ring is
drained for a bounded time: whatever is still unread then is lost too. So
read + lost = produced, exactly."""
from __future__ import annotations

import struct
import time
from dataclasses import field
from typing import Callable

from gs_cgen.abi import abi
from gs_cgen.lazydataclass import dataclass

LOSS_REPORT_INTERVAL_S = 2.0
# At the end, events already in the ring are still rendered, for this long
# at most (a reader slower than the ring is full must not keep us alive).
DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class EventCounts:
    """What the probes' counters say (summed over probes and CPUs)."""

    sent: int = 0
    failed: int = 0


@dataclass
class EventAccount:
    """Every trace event the probes produced, and where it went."""

    counts: EventCounts = field(default_factory=EventCounts)
    received: int = 0             # trace events read from the ring
    reported_lost: int = 0        # the total as last reported
    last_report: float = field(default_factory=time.monotonic)

    @property
    def produced(self) -> int:
        return self.counts.sent + self.counts.failed

    @property
    def unread(self) -> int:
        """Written to the ring and not read (only final once detached)."""
        return max(0, self.counts.sent - self.received)

    def lost(self, include_unread: bool) -> int:
        return self.counts.failed + (self.unread if include_unread else 0)

    def due_report(self, now: float) -> tuple[int, int] | None:
        """(new, total) losses to report while tracing, at most every
        LOSS_REPORT_INTERVAL_S; None when there is nothing new or not yet."""
        total = self.lost(include_unread=False)
        if total == self.reported_lost or now - self.last_report < LOSS_REPORT_INTERVAL_S:
            return None
        new, self.reported_lost, self.last_report = total - self.reported_lost, total, now
        return new, total


@dataclass(frozen=True)
class LossReports:
    """Where loss goes: `periodic(new, total)` while tracing, `final(total)`
    once at the end when anything was lost."""

    periodic: Callable[[int, int], None]
    final: Callable[[int], None]


# on_event(probe_id, buffer, offset, size), per trace event, whose bytes are
# buffer[offset:offset + size] (valid during the call only); False: no more.
EventHandler = Callable[[int, object, int, int], bool]
# on_notice(kind, key_pid): a probe's GS_EVENT_OFFSETS_MISS or GS_EVENT_EXEC
NoticeHandler = Callable[[int, int], None]


def collect(session, on_event: EventHandler, should_stop: Callable[[], bool],
            losses: LossReports, unread_is_lost: Callable[[], bool] = lambda: True,
            on_notice: NoticeHandler = lambda kind, key_pid: None,
            poll_ms: int = 100) -> EventAccount:
    """Poll until `should_stop()`; then detach, drain and settle the account.
    `on_event` returns False when it wants no more events (ends the poll).
    `unread_is_lost()` is asked at the end: False when the caller stopped
    wanting events (--max-events), so events left unread are not losses,
    nor are those the ring refused after the stop (it fills once nobody
    reads it): only refusals counted when the poll ended are."""
    account = EventAccount()
    handle = _batch_handler(session, on_event, on_notice, account)
    session.open_events()
    counted_at = time.monotonic()
    at_stop = None
    try:
        while not should_stop():
            handle(session.poll(poll_ms))
            # The counters are a map read: once per report interval, not
            # per batch (a flood makes ~3000 batches a second).
            now = time.monotonic()
            if now - counted_at >= LOSS_REPORT_INTERVAL_S:
                counted_at, account.counts = now, session.event_counts()
                if report := account.due_report(now):
                    losses.periodic(*report)
        at_stop = session.event_counts()
    finally:
        session.detach()
        _drain(session, handle, account)
        account.counts = session.event_counts()
        wanted_more = unread_is_lost()
        total = account.lost(wanted_more) if wanted_more or at_stop is None else at_stop.failed
        if total:
            losses.final(total)
    return account


def event_ids_reader() -> Callable[[object, int], tuple[int, int, int]]:
    """(buffer, offset) -> (probe_id, kind, key_pid) of the event header
    there, in one unpack."""
    hdr = abi().structs["gs_event_hdr"]
    parts, position = ["<"], 0
    for name in ("probe_id", "kind", "key_pid"):
        field = hdr.field(name)
        if field.offset > position:
            parts.append(f"{field.offset - position}x")
        parts.append(field.format)
        position = field.offset + field.size
    return struct.Struct("".join(parts)).unpack_from


def _batch_handler(session, on_event: EventHandler, on_notice: NoticeHandler,
                   account: EventAccount):
    """handle(batch) -> False when `on_event` wanted no more. Counts the
    trace events handed to `on_event` (the one that says stop included),
    and releases what was handled, also when a handler raises."""
    read_ids = event_ids_reader()
    trace_kind = abi().constants["GS_EVENT_TRACE"]

    def handle(batch) -> bool:
        received, end = 0, None
        try:
            for buffer, offset, size, end in batch:
                probe_id, kind, key_pid = read_ids(buffer, offset)
                if kind != trace_kind:
                    on_notice(kind, key_pid)
                    continue
                received += 1
                if on_event(probe_id, buffer, offset, size) is False:
                    return False
            return True
        finally:
            account.received += received
            if end is not None:
                session.release(end)
    return handle


def _drain(session, handle, account: EventAccount) -> None:
    """Read what is left until every event the probes sent is read, for
    DRAIN_SECONDS at most. An empty poll is not the end: a sleepable probe
    may still hold a reservation (waiting for a page fault), and the ring
    cannot be read past it until it is submitted."""
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        if not handle(session.poll(10)):
            return                       # the caller wants no more events
        if account.received >= session.event_counts().sent:
            return
