"""runtime/progcache.py: the cache key, map-fd references in instructions
and their patching, entries on disk (no root, no kernel)."""
from __future__ import annotations

import dataclasses
import os
import struct

import pytest

from gs_cgen.runtime import progcache
from gs_cgen.runtime.progcache import (CachedProgram, KeyInputs, MapSpec, ProgramSpec,
                                       Uncacheable, cache_key, map_references, patch_map_fds)

_BASE = KeyInputs(c_text="int x;", cflags=("-I/a", "-DGS_SLEEPABLE=1"), sleepable=True,
                  links=True, bcc_version="0.26.0", kernel="6.18.0 #1 x86_64",
                  gs_version="abc", headers_digest="def")


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, src << 4 | dst, off, imm)


def _ld_map_fd(dst: int, fd: int) -> bytes:
    return _insn(0x18, dst=dst, src=1, imm=fd) + _insn(0)


_PROGRAM = b"".join([
    _insn(0xb7, dst=1, imm=5),          # mov r1, 5
    _ld_map_fd(1, 7),                   # r1 = map fd 7   (instructions 1-2)
    _insn(0x18, dst=2, imm=123), _insn(0, imm=0),   # r2 = 123 (a plain 64-bit constant)
    _ld_map_fd(3, 9),                   # r3 = map fd 9   (instructions 5-6)
    _ld_map_fd(4, 7),                   # r4 = map fd 7   (instructions 7-8)
    _insn(0x95),                        # exit
])


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(KeyInputs)])
def test_every_input_changes_the_key(field):
    value = getattr(_BASE, field)
    changed = (not value) if isinstance(value, bool) else \
        (value + ("-x",)) if isinstance(value, tuple) else value + "!"
    assert cache_key(dataclasses.replace(_BASE, **{field: changed})) != cache_key(_BASE)


def test_the_key_is_stable_and_parts_do_not_run_together():
    assert cache_key(_BASE) == cache_key(dataclasses.replace(_BASE))
    assert len(cache_key(_BASE)) == 64
    moved = dataclasses.replace(_BASE, cflags=("-I/a-DGS_SLEEPABLE=1",))
    assert cache_key(moved) != cache_key(_BASE)


def test_map_references_name_each_fd_load_and_skip_constants():
    assert map_references(_PROGRAM, {7: 0, 9: 1}) == ((1, 0), (5, 1), (7, 0))


def test_an_fd_that_is_no_map_of_the_program_is_uncacheable():
    with pytest.raises(Uncacheable, match="fd 9"):
        map_references(_PROGRAM, {7: 0})


@pytest.mark.parametrize("kind", [2, 3, 4, 5, 6])
def test_other_pseudo_loads_are_uncacheable(kind):
    # map values, BTF ids, functions, map indexes: a cached copy could not restore them
    program = _insn(0x18, dst=1, src=kind, imm=3) + _insn(0) + _insn(0x95)
    with pytest.raises(Uncacheable, match=f"kind {kind}"):
        map_references(program, {3: 0})


def test_a_truncated_program_is_uncacheable():
    with pytest.raises(Uncacheable):
        map_references(_PROGRAM[:-3], {7: 0, 9: 1})


def test_patching_writes_this_runs_fds_and_nothing_else():
    refs = map_references(_PROGRAM, {7: 0, 9: 1})
    patched = patch_map_fds(_PROGRAM, refs, [40, 41])
    assert len(patched) == len(_PROGRAM)
    imms = [struct.unpack_from("<i", patched, i * 8 + 4)[0] for i in range(len(patched) // 8)]
    assert imms == [5, 40, 0, 123, 0, 41, 0, 40, 0, 0]
    # every other byte is untouched
    for i in range(len(patched) // 8):
        assert patched[i * 8:i * 8 + 4] == _PROGRAM[i * 8:i * 8 + 4]
    assert map_references(patched, {40: 0, 41: 1}) == refs


def test_patching_refuses_a_reference_that_is_no_map_load():
    with pytest.raises(ValueError, match="instruction 0"):
        patch_map_fds(_PROGRAM, ((0, 0),), [40])


def _entry() -> CachedProgram:
    return CachedProgram(
        maps=(MapSpec("proc_module_offsets", 1, 16, 32, 1024, 0),
              MapSpec("gs_events", 27, 0, 0, 1 << 23, 0)),
        programs=(ProgramSpec("gs_probe_0", 2, 16, 48, _PROGRAM,
                              map_references(_PROGRAM, {7: 0, 9: 1})),))


def test_entries_round_trip_through_the_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    key = cache_key(_BASE)
    assert progcache.read_cached(key) is None
    progcache.write_cached(key, _entry())
    assert progcache.read_cached(key) == _entry()
    refused = CachedProgram(refused="the verifier rejected the sleepable probe")
    progcache.write_cached(key, refused)
    assert progcache.read_cached(key) == refused


def test_a_corrupt_entry_reads_as_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    key = cache_key(_BASE)
    progcache.write_cached(key, _entry())
    path = progcache.entry_path(key)
    data = bytearray(open(path, "rb").read())
    data[-20] ^= 0xFF
    open(path, "wb").write(bytes(data))
    assert progcache.read_cached(key) is None


@pytest.mark.parametrize("plain", [
    None, (), ((), ()),
    ((("m", 1, 4, 4, 1, 0),), (("f", 2, 0, -1, b"\0" * 12, ()),), ""),    # not whole insns
    ((("m", 1, 4, 4, 1, 0),), (("f", 2, 0, -1, b"\0" * 16, ((0, 1),)),), ""),  # no map 1
    ((("m", 1, 4, 4, 1, 0),), (("f", 2, 0, -1, b"\0" * 16, ((2, 0),)),), ""),  # past the end
    ((("m", 1, 4, 4, 1, 0),), (("f", 2, 0, -1, "text", ()),), ""),
])
def test_a_malformed_entry_is_absent(plain):
    assert progcache.from_plain(plain) is None


def test_the_switch_and_no_cache_turn_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    assert progcache.enabled({})
    assert not progcache.enabled({"GS_CGEN_PROGRAM_CACHE": "off"})
    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    assert not progcache.enabled({})


def test_an_entry_others_could_write_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    key = cache_key(_BASE)
    progcache.write_cached(key, _entry())
    path = progcache.entry_path(key)
    os.chmod(path, 0o666)
    assert progcache.read_cached(key) is None
    os.chmod(path, 0o600)
    os.chmod(os.path.dirname(path), 0o777)
    assert progcache.read_cached(key) is None
    os.chmod(os.path.dirname(path), 0o755)
    assert progcache.read_cached(key) == _entry()


def test_the_least_recently_used_entries_go_beyond_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(progcache, "MAX_ENTRIES", 3)
    keys = [cache_key(dataclasses.replace(_BASE, c_text=str(i))) for i in range(4)]
    for age, key in enumerate(keys[:3]):
        progcache.write_cached(key, _entry())
        os.utime(progcache.entry_path(key), ns=(age * 10**9, age * 10**9))
    assert progcache.read_cached(keys[0]) == _entry()      # used: now the newest
    progcache.write_cached(keys[3], _entry())
    kept = {key for key in keys if os.path.exists(progcache.entry_path(key))}
    assert kept == {keys[0], keys[2], keys[3]}
