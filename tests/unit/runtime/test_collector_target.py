"""Loss accounting and /proc parsing, without BPF."""
from __future__ import annotations

import os

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.plan.model import ModuleFile, ModuleRef
from gs_cgen.runtime.collector import LossTracker, collect
from gs_cgen.runtime.target import ProcessTarget, module_offsets, parse_maps


class FakeSession:
    def __init__(self, lost_sequence):
        self.lost_sequence = list(lost_sequence)
        self.lost = 0
        self.polls = 0

    def open_events(self, on_event):
        self.on_event = on_event

    def poll(self, timeout_ms):
        self.polls += 1
        self.on_event(b"x")
        if self.lost_sequence:
            self.lost = self.lost_sequence.pop(0)
        return False

    def lost_events(self):
        return self.lost


def test_losses_are_reported_at_exit_never_silently():
    session, reports, events = FakeSession([0, 3, 7]), [], []
    tracker = collect(session, events.append, lambda: session.polls >= 3, reports.append)
    assert tracker.total == 7 and sum(reports) == 7 and events


def test_loss_tracker_rate_limits_reports():
    tracker = LossTracker(last_report=100.0)
    tracker.kernel_lost = 5
    assert tracker.unreported(100.5) == 0          # not due yet
    assert tracker.unreported(103.0) == 5
    tracker.kernel_lost = 7
    assert tracker.unreported(103.1, force=True) == 2


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

    def set_module_offsets(self, pid, cookie, offsets):
        self.filled.append((pid, cookie, offsets.data))


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
