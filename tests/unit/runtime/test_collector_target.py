"""Loss accounting and /proc parsing, without BPF."""
from __future__ import annotations

import os

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.abi import abi
from gs_cgen.plan.model import ModuleFile, ModuleRef
from gs_cgen.runtime import collector
from gs_cgen.runtime.collector import EventAccount, EventCounts, LossReports, collect
from gs_cgen.runtime.target import ProcessTarget, module_offsets, parse_maps


def trace_event() -> bytes:
    hdr = abi().structs["gs_event_hdr"]
    return hdr.pack(kind=abi().constants["GS_EVENT_TRACE"], size=hdr.size)


class FakeSession:
    """Probes that produced `sent` events, of which the ring holds `queued`
    for us and refused `failed_sequence[i]` by poll i."""

    def __init__(self, failed_sequence, sent, queued=None):
        self.failed_sequence = list(failed_sequence)
        self.failed = 0
        self.sent = sent
        self.queued = sent if queued is None else queued
        self.polls = 0
        self.detached_at_poll = None

    def open_events(self):
        self.released = 0

    def poll(self, timeout_ms):
        """One queued event per poll, as (buffer, offset, size, end)."""
        self.polls += 1
        batch = []
        if self.queued:
            self.queued -= 1
            raw = trace_event()
            batch.append((raw, 0, len(raw), 1))
        if self.failed_sequence:
            self.failed = self.failed_sequence.pop(0)
        return batch

    def release(self, end):
        self.released += end

    def detach(self):
        self.detached_at_poll = self.polls

    def event_counts(self):
        return EventCounts(self.sent, self.failed)


def reporting():
    periodic, final = [], []
    return periodic, final, LossReports(lambda new, total: periodic.append((new, total)),
                                        final.append)


def test_every_loss_is_in_the_final_total():
    session = FakeSession([0, 3, 7], sent=5)
    periodic, final, losses = reporting()
    account = collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 3, losses)
    assert final == [7] and account.received == 5
    assert account.received + final[0] == account.produced      # nothing unaccounted


def test_events_left_in_the_ring_after_the_drain_count_as_lost(monkeypatch):
    monkeypatch.setattr(collector, "DRAIN_SECONDS", 0.0)
    session = FakeSession([0], sent=10)
    _, final, losses = reporting()
    account = collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 2, losses)
    assert account.received < 10
    assert final == [10 - account.received]


def test_refusals_after_the_caller_stopped_wanting_events_are_no_loss():
    """--max-events: once the poll ends nobody reads the ring, which fills
    and refuses what the probes still write until they are detached;
    those events were never asked for. Refusals before the stop are loss."""
    class StillFiring(FakeSession):
        def detach(self):
            self.failed += 40             # refused by the full ring, after the stop
            super().detach()

    session = StillFiring([2, 2, 2], sent=3)
    _, final, losses = reporting()
    collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 3,
            losses, unread_is_lost=lambda: False)
    assert final == [2]
    session = StillFiring([2, 2, 2], sent=3)
    _, final, losses = reporting()
    collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 3, losses)
    assert final == [42]                  # a trace that wanted every event lost them all


def test_probes_are_detached_before_the_drain():
    session = FakeSession([], sent=4)
    _, final, losses = reporting()
    collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 1, losses)
    assert session.detached_at_poll == 1 and final == []


def test_unread_events_are_not_losses_when_no_more_were_wanted(monkeypatch):
    monkeypatch.setattr(collector, "DRAIN_SECONDS", 0.0)
    session = FakeSession([2], sent=10)
    _, final, losses = reporting()
    collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 1, losses,
            unread_is_lost=lambda: False)
    assert final == [2]


def test_the_counters_are_read_once_per_report_interval_not_per_batch(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(collector.time, "monotonic", lambda: clock[0])
    session = FakeSession([], sent=0)
    reads = []
    counts = session.event_counts
    session.event_counts = lambda: reads.append(clock[0]) or counts()

    def should_stop():
        clock[0] += 0.25                 # a batch every 0.25 s: 16 in 4 s
        return clock[0] > 104.0
    collect(session, lambda *event: True, should_stop, reporting()[2])
    during = [t for t in reads if t <= 104.0]
    assert len(during) == 2 and during == sorted(during)    # ~every 2 s, then the end
    assert len(reads) > len(during)      # the final account still reads them


def test_periodic_reports_carry_the_running_total():
    account = EventAccount(last_report=100.0)
    account.counts = EventCounts(sent=10, failed=5)
    assert account.due_report(100.5) is None         # not due yet
    assert account.due_report(103.0) == (5, 5)
    account.counts = EventCounts(sent=10, failed=7)
    assert account.due_report(103.1) is None
    assert account.due_report(105.1) == (2, 7)


MAPS = """\
55cc256d7000-55cc256d8000 r--p 00000000 fe:00 2146922   /tmp/lb
55cc256d8000-55cc256d9000 r-xp 00001000 fe:00 2146922   /tmp/lb
55cc256d9000-55cc256da000 r--p 00002000 fe:00 2146922   /tmp/lb
55cc256da000-55cc256db000 r--p 00002000 fe:00 2146922   /tmp/lb
55cc256db000-55cc256dc000 rw-p 00003000 fe:00 2146922   /tmp/lb
7ffd1000-7ffd2000 rw-p 00000000 00:00 0                 [stack]
"""
SEGMENTS = (LoadSegment(0, 1728, 0, 1728, False, False),
            LoadSegment(0x1000, 769, 0x1000, 769, True, False),
            LoadSegment(0x2000, 352, 0x2000, 352, False, False),
            LoadSegment(0x3DD0, 680, 0x2DD0, 656, False, True))


LB = ModuleFile("/tmp/lb", "/tmp/lb", os.makedev(0xFE, 0), 2146922)


def lb_ref(file: ModuleFile = LB, cookie: int = 7) -> ModuleRef:
    return ModuleRef(file, cookie, SEGMENTS)


def test_load_bias_ignores_the_relro_double_mapping():
    target = ProcessTarget(1, tuple(parse_maps(MAPS)))
    offsets = module_offsets(target, lb_ref())
    assert offsets.data == offsets.text == 0x55CC256D7000


def test_unmapped_module_has_no_offsets():
    target = ProcessTarget(1, tuple(parse_maps(MAPS)))
    other = ModuleFile("/usr/lib/other.so", "/usr/lib/other.so", os.makedev(0xFE, 0), 99)
    assert module_offsets(target, lb_ref(other)) is None


def test_offsets_match_the_file_not_its_path():
    """A container maps the host's /tmp/lb as /app/lb: same device and inode."""
    target = ProcessTarget(1, tuple(parse_maps(MAPS.replace("/tmp/lb", "/app/lb"))))
    assert module_offsets(target, lb_ref()).text == 0x55CC256D7000
    same_path_other_file = ModuleFile("/tmp/lb", "/tmp/lb", os.makedev(0xFE, 1), 2146922)
    assert module_offsets(ProcessTarget(1, tuple(parse_maps(MAPS))),
                          lb_ref(same_path_other_file)) is None


class RecordingSession:
    def __init__(self):
        self.filled = []
        self.rearmed = []

    def set_module_offsets(self, pid, cookie, offsets):
        self.filled.append((pid, cookie, offsets.data))

    def rearm_offsets_notice(self, pid):
        self.rearmed.append(pid)


def test_offset_keeper_retries_until_modules_are_mapped(monkeypatch):
    from gs_cgen.runtime import offsets as keeper_mod
    maps = {"now": MAPS.replace("fe:00 2146922", "fe:00 5")}
    monkeypatch.setattr(keeper_mod.proc, "open_process",
                        lambda pid: ProcessTarget(pid, tuple(parse_maps(maps["now"]))))
    session = RecordingSession()
    keeper = keeper_mod.OffsetKeeper(session, (lb_ref(),))
    keeper.watch(42)
    assert session.filled == [] and 42 in keeper.pending      # not mapped yet
    maps["now"] = MAPS
    keeper.retry()
    assert session.filled == [(42, 7, 0x55CC256D7000)] and keeper.pending == {}


def test_offset_keeper_ignores_other_pids_when_filtered():
    from gs_cgen.runtime.offsets import OffsetKeeper
    session = RecordingSession()
    keeper = OffsetKeeper(session, (lb_ref(),), pid_filter=1)
    keeper.watch(2)
    assert session.filled == [] and keeper.pending == {}


def test_offset_keeper_rearms_the_probe_notice_when_it_gives_up(monkeypatch):
    """A library mapped long after the first miss (dlopen) still gets its
    offsets: the give-up re-arms the probe's once-per-process notice, and
    the next notice starts a new round of retries."""
    from gs_cgen.runtime import offsets as keeper_mod
    maps, clock = {"now": MAPS.replace("fe:00 2146922", "fe:00 5")}, {"now": 100.0}
    monkeypatch.setattr(keeper_mod.proc, "open_process",
                        lambda pid: ProcessTarget(pid, tuple(parse_maps(maps["now"]))))
    monkeypatch.setattr(keeper_mod.time, "monotonic", lambda: clock["now"])
    session = RecordingSession()
    keeper = keeper_mod.OffsetKeeper(session, (lb_ref(),))
    keeper.watch(42)                                  # the probe's first miss
    clock["now"] += keeper_mod.RETRY_SECONDS / 2
    keeper.retry()
    assert session.rearmed == [] and 42 in keeper.pending
    clock["now"] += keeper_mod.RETRY_SECONDS
    keeper.retry()
    assert session.rearmed == [42] and keeper.pending == {}   # gave up, notice re-armed
    keeper.retry()
    assert session.rearmed == [42]                    # once per give-up, not per poll
    maps["now"] = MAPS                                # dlopen() maps it
    keeper.watch(42)                                  # the re-armed notice
    assert session.filled == [(42, 7, 0x55CC256D7000)] and keeper.pending == {}


def test_offset_keeper_reads_a_pending_process_maps_at_a_bounded_rate(monkeypatch):
    from gs_cgen.runtime import offsets as keeper_mod
    reads, clock = [], {"now": 100.0}

    def open_process(pid):
        reads.append(clock["now"])
        return ProcessTarget(pid, tuple(parse_maps(MAPS.replace("fe:00 2146922", "fe:00 5"))))
    monkeypatch.setattr(keeper_mod.proc, "open_process", open_process)
    monkeypatch.setattr(keeper_mod.time, "monotonic", lambda: clock["now"])
    keeper = keeper_mod.OffsetKeeper(RecordingSession(), (lb_ref(),))
    keeper.watch(42)
    for _ in range(1000):                             # a flood of poll batches in 0.5 s
        clock["now"] += 0.0005
        keeper.retry()
    assert len(reads) <= 1 + 0.5 / keeper_mod.RETRY_INTERVAL + 1


def test_the_drain_waits_for_events_submitted_after_an_empty_poll():
    """A sleepable probe holding a reservation across a page fault submits
    after the detach: polls come back empty meanwhile, and its event is
    still read, not counted lost (it was, under load: 1752 'lost')."""
    session = FakeSession([], sent=3, queued=0)
    late = iter([0, 0, 0, 3])           # the events appear on the fourth drain poll
    base_poll = session.poll

    def poll(timeout_ms):
        if session.detached_at_poll is not None:
            session.queued += next(late, 0)
        return base_poll(timeout_ms)
    session.poll = poll
    _, final, losses = reporting()
    account = collect(session, lambda probe_id, buffer, offset, size: True, lambda: session.polls >= 1, losses)
    assert account.received == 3 and final == []


def test_a_batch_is_counted_routed_and_released_up_to_where_the_handler_stopped():
    """Notices go to on_notice and are not trace events; the event that says
    stop is read (counted) and released, the rest stay for later."""
    hdr = abi().structs["gs_event_hdr"]
    kinds = abi().constants
    notice = hdr.pack(kind=kinds["GS_EVENT_EXEC"], key_pid=77, size=hdr.size)
    events = [hdr.pack(kind=kinds["GS_EVENT_TRACE"], probe_id=i, size=hdr.size) for i in (4, 5, 6)]
    buffer = b"".join([notice] + events)
    batch = [(buffer, i * hdr.size, hdr.size, 10 * (i + 1)) for i in range(4)]
    seen, notices, released = [], [], []

    class Session:
        def release(self, end):
            released.append(end)

    def on_event(probe_id, buf, offset, size):
        seen.append(probe_id)
        return probe_id != 5
    account = EventAccount()
    handle = collector._batch_handler(Session(), on_event,
                                      lambda kind, pid: notices.append((kind, pid)), account)
    assert handle(batch) is False
    assert seen == [4, 5] and notices == [(kinds["GS_EVENT_EXEC"], 77)]
    assert account.received == 2 and released == [30]
