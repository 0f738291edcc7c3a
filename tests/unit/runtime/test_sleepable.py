"""Sleepable-uprobe mode selection and its one-line note (no root needed;
the kernel's answer is checked live in tests/live/test_paged_memory_live.py)."""
from __future__ import annotations

from gs_cgen.plan.model import EventTransport
from gs_cgen.runtime import sleepable
from gs_cgen.runtime.sleepable import ReadMode, choose_read_mode, detect_support, verifier_reason


def test_the_note_names_the_reason_and_what_it_costs():
    assert ReadMode(True).note is None
    assert ReadMode(False, "GS_CGEN_SLEEPABLE=off").note == (
        "note: sleepable uprobes unavailable (GS_CGEN_SLEEPABLE=off); pages the target has "
        "not touched read as errors")


def test_perf_event_maps_are_never_sleepable():
    mode = choose_read_mode(EventTransport.PERF)
    assert mode == ReadMode(False, "--event-map perf: sleepable programs cannot use perf "
                                   "event arrays")


def test_the_environment_turns_sleepable_uprobes_off():
    for setting in ("off", "0", "no", "false", "OFF"):
        assert detect_support({"GS_CGEN_SLEEPABLE": setting}) == \
            ReadMode(False, f"GS_CGEN_SLEEPABLE={setting}")


def test_probe_program_is_the_documented_seven_instructions():
    """r1 = fp - 8; r2 = 1; r3 = 0; call bpf_copy_from_user (148); r0 = 0; exit."""
    words = [sleepable._PROBE_PROGRAM[i:i + 8].hex() for i in range(0, 56, 8)]
    assert words == ["bfa1000000000000", "07010000f8ffffff", "b702000001000000",
                     "b703000000000000", "8500000094000000", "b700000000000000",
                     "9500000000000000"]


def test_verifier_reason_is_the_line_before_the_statistics():
    log = ("0: R1=ctx() R10=fp0\n; r1 = r10\nhelper call might sleep in a non-sleepable prog\n"
           "processed 5 insns (limit 1000000) max_states_per_insn 0 total_states 0\n")
    assert verifier_reason(log) == "helper call might sleep in a non-sleepable prog"
    assert verifier_reason("") == ""


class _FakeBPF:
    """Just enough of bcc.BPF for TraceSession.load."""

    KPROBE = 2
    built: list["_FakeBPF"] = []

    class Function:
        def __init__(self, bpf, name, fd):
            self.bpf, self.name, self.fd = bpf, name, fd

    def __init__(self, text, cflags):
        self.cflags, self.funcs, self.module, self.cleaned = cflags, {}, 1, False
        _FakeBPF.built.append(self)

    def load_func(self, name, prog_type, attach_type=-1):
        return self.Function(self, name, 7)

    def cleanup(self):
        self.cleaned = True


def _session(monkeypatch, sleepable_fd: int):
    import os
    import types
    from gs_cgen.runtime import session as session_module
    from tests.unit.emit.test_golden import generate_plan
    _FakeBPF.built = []
    fake_libbcc = types.SimpleNamespace(lib=None)
    monkeypatch.setattr(session_module, "_import_bcc",
                        lambda: types.SimpleNamespace(BPF=_FakeBPF, libbcc=fake_libbcc))
    # No real module: no maps to list, nothing to cache.
    monkeypatch.setattr(session_module.progcache, "bcc_tables", lambda lib, module: {})
    monkeypatch.setenv("GS_CGEN_PROGRAM_CACHE", "off")
    monkeypatch.setattr(session_module, "choose_read_mode", lambda transport: ReadMode(True))

    def load_sleepable(module, name, prog_type, attach_type=-1):
        os.write(2, b"helper call is not allowed in probe\nprocessed 9 insns\n")
        return sleepable_fd
    monkeypatch.setattr(session_module, "load_sleepable", load_sleepable)
    plan = generate_plan("basic")
    return session_module.TraceSession(plan, "/* C */")


def test_sleepable_build_is_loaded_with_gs_sleepable_defined(monkeypatch):
    session = _session(monkeypatch, sleepable_fd=9)
    session.load()
    assert session.read_mode == ReadMode(True)
    assert [b.cflags[-1] for b in _FakeBPF.built] == ["-DGS_SLEEPABLE=1"]
    assert {f.fd for f in session.functions.values()} == {9}
    assert all(session.bpf.funcs[f.name] is f for f in session.functions.values())


def test_a_sleepable_build_the_verifier_rejects_falls_back_and_says_why(monkeypatch):
    session = _session(monkeypatch, sleepable_fd=-1)
    session.load()
    first, second = _FakeBPF.built
    assert first.cleaned and first.cflags[-1] == "-DGS_SLEEPABLE=1"
    assert second.cflags[-1] == "-DGS_SLEEPABLE=0" and not second.cleaned
    assert session.read_mode == ReadMode(
        False, "the verifier rejected the sleepable probe for 'handle': "
               "helper call is not allowed in probe")
    assert {f.fd for f in session.functions.values()} == {7}
