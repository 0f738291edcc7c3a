"""TraceSession.load and the compiled-program cache, with the kernel and
BCC faked: which entry a hit uses, what the read mode says, and that
anything wrong with an entry means compiling (no root)."""
from __future__ import annotations

import pytest

from gs_cgen.emit.c import probe_function_name
from gs_cgen.runtime import progcache, progload
from gs_cgen.runtime import session as session_module
from gs_cgen.runtime.bpfmaps import BpfMap
from gs_cgen.runtime.sleepable import ReadMode
from tests.unit.emit.test_golden import generate_plan

REFUSED = "the verifier rejected the sleepable probe for 'add': helper call might sleep"


class _Compiled(Exception):
    """Raised where the fake session would start BCC."""


@pytest.fixture
def session(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    monkeypatch.delenv(progcache.SWITCH_VARIABLE, raising=False)
    monkeypatch.setattr(session_module, "links_refusal", lambda: "")
    monkeypatch.setattr(session_module, "kernel_support", lambda: ReadMode(True))

    def no_bcc():
        raise _Compiled()
    monkeypatch.setattr(session_module, "_import_bcc", no_bcc)
    return session_module.TraceSession(generate_plan("basic"), "/* C */")


def _program(session) -> progcache.CachedProgram:
    names = [probe_function_name(p.site.probe_id) for p in session.plan.probes]
    return progcache.CachedProgram(
        maps=(progcache.MapSpec("gs_events", 27, 0, 0, 1 << 22, 0),),
        programs=tuple(progcache.ProgramSpec(name, 2, 0, 48, b"\x95" + b"\0" * 7, ())
                       for name in names))


def _fake_loader(monkeypatch, fail: bool = False, attached: list | None = None) -> list:
    loaded = []

    def load_cached(entry):
        if fail:
            raise progload.CachedLoadFailed("the verifier refused cached gs_probe_0: R0 !read_ok")
        program = progload.LoadedProgram(
            maps={m.name: BpfMap(100, m.map_type, m.key_size, m.value_size, m.max_entries,
                                 m.name) for m in entry.maps},
            programs={p.name: 200 + i for i, p in enumerate(entry.programs)})
        program.attach_tracepoints = lambda: attached.append(entry) if attached is not None else None
        program.close = lambda: None
        loaded.append(entry)
        return program
    monkeypatch.setattr(progload, "load_cached", load_cached)
    return loaded


def test_a_sleepable_hit_loads_without_bcc(session, monkeypatch):
    loaded = _fake_loader(monkeypatch)
    progcache.write_cached(session._cache_key(True), _program(session))
    session.load()
    assert loaded == [_program(session)]
    assert session.loaded_from == "cache" and session.read_mode == ReadMode(True)
    assert sorted(f.fd for f in session.functions.values()) == \
        [200 + i for i in range(len(session.plan.probes))]
    assert session.map("gs_events").max_entries == 1 << 22
    assert "compiled-program cache (not compiled)" in session.load_note


@pytest.mark.parametrize("watch_exec", [True, False])
def test_the_exec_watcher_is_attached_unless_a_dry_run_asks_not(session, monkeypatch, watch_exec):
    attached = []
    _fake_loader(monkeypatch, attached=attached)
    progcache.write_cached(session._cache_key(True), _program(session))
    session.load(watch_exec=watch_exec)
    assert session.loaded_from == "cache"
    assert attached == ([_program(session)] if watch_exec else [])


def test_a_refused_sleepable_build_goes_to_the_non_sleepable_entry(session, monkeypatch):
    loaded = _fake_loader(monkeypatch)
    progcache.write_cached(session._cache_key(True), progcache.CachedProgram(refused=REFUSED))
    progcache.write_cached(session._cache_key(False), _program(session))
    session.load()
    assert loaded == [_program(session)]
    assert session.read_mode == ReadMode(False, REFUSED)     # the note the compile path says


def test_the_keys_of_the_two_builds_differ(session):
    assert session._cache_key(True) != session._cache_key(False)


@pytest.mark.parametrize("case", ["missing", "refused by the verifier", "switched off",
                                  "only the refusal"])
def test_anything_else_compiles(session, monkeypatch, case):
    _fake_loader(monkeypatch, fail=case == "refused by the verifier")
    if case != "missing":
        progcache.write_cached(session._cache_key(True), _program(session)
                               if case != "only the refusal" else
                               progcache.CachedProgram(refused=REFUSED))
    if case == "switched off":
        monkeypatch.setenv(progcache.SWITCH_VARIABLE, "off")
    with pytest.raises(_Compiled):
        session.load()
    assert session.cached is None and not session.functions


def test_the_perf_transport_never_reads_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    session = session_module.TraceSession(generate_plan("perf_pidns"), "")
    monkeypatch.setattr(progcache, "read_cached", lambda key: pytest.fail("read the cache"))
    assert session._load_cached(watch_exec=True) is False
