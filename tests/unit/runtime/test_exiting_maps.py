"""A backtrace of a process that is exiting: between releasing its memory
and its root, /proc/PID/maps reads empty while the rest of /proc/PID is
still there. That read must not replace the maps the resolver had (the
events of a command that exits at once would lose every module but the
probe's own: `?? [0x...]`, "no unwind info")."""
from __future__ import annotations

from gs_cgen.errors import TargetError
from gs_cgen.runtime import symbolize
from gs_cgen.runtime.symbolize import FrameResolver
from gs_cgen.runtime.target import Mapping, ProcessTarget

PID = 4242
EXE = Mapping(0x5000, 0x6000, "r-xp", 0x1000, "/usr/bin/demo", 8, 77)
LIVE = ProcessTarget(PID, (EXE,))
EXITING = ProcessTarget(PID, ())          # maps empty, root and namespaces still there


def reads(monkeypatch, *answers):
    """open_process answers these, in order (an exception is raised)."""
    queue = list(answers)

    def fake(pid):
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    monkeypatch.setattr(symbolize, "open_process", fake)


def test_an_exiting_process_keeps_the_maps_remembered(monkeypatch):
    reads(monkeypatch, LIVE, EXITING)
    resolver = FrameResolver()
    resolver.remember(PID)
    monkeypatch.setattr(symbolize, "_MAPS_FRESH", 0.0)
    resolver._fresh_maps(PID)
    assert resolver._mapping(PID, 0x5100) == (LIVE, EXE)


def test_an_uncovered_address_rereads_but_an_empty_read_changes_nothing(monkeypatch):
    reads(monkeypatch, LIVE, EXITING)
    resolver = FrameResolver()
    resolver.remember(PID)
    assert resolver._mapping(PID, 0x9000) is None         # re-read: exiting
    assert resolver._mapping(PID, 0x5100) == (LIVE, EXE)


def test_a_process_first_seen_exiting_has_no_maps(monkeypatch):
    reads(monkeypatch, EXITING, TargetError("no process with PID 4242"))
    resolver = FrameResolver()
    resolver.remember(PID)
    assert resolver._mapping(PID, 0x5100) is None
