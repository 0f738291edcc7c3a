"""The build-id index cache: warm, cold and disabled give the same answers,
and a damaged cache is ignored."""
from __future__ import annotations

import os
import subprocess

import pytest
from elftools.dwarf.dwarfinfo import DWARFInfo

from gs_cgen import indexcache as cache_mod
from gs_cgen.indexcache import IndexCache, open_index_cache
from gs_cgen.dwarf.index import DwarfIndex
from gs_cgen.dwarf.module import ModuleDebugInfo

from .conftest import SOURCES


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    monkeypatch.setattr(cache_mod, "MIN_DEBUG_INFO", 0)      # the fixtures are small
    return tmp_path


def _answers(module: ModuleDebugInfo):
    """Everything the cache feeds, plus the public lookups built on it."""
    index = module._dwarf
    cus = index.cu_offsets()
    sites = module.find_functions("move_point")
    return {
        "lines": [index.line_table(off) for off in cus],
        "functions": [index.functions(off) for off in cus],
        "files": index.files_by_path(),
        "file_maps": [index.file_map(off) for off in cus],
        "sites": sites,
        "line_sites": module.find_lines("dwarf_basic.c", sites[0].decl_line + 2),
        "variables": [(v.name, v.location) for v in module.variables_at(sites[0].probe_address)],
        "aranges": index.address_ranges(),
        "cu_for_address": [getattr(index.cu_for_address(a), "cu_offset", None)
                           for lo, length, _ in index.address_ranges()
                           for a in (lo - 1, lo, lo + length - 1, lo + length)],
    }


def _cache_files(home) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


@pytest.mark.parametrize("variant", ["O0", "O2", "O0-dwarf4"])
def test_cold_warm_and_disabled_agree(binaries, cache_home, monkeypatch, variant):
    cold = _answers(ModuleDebugInfo(binaries[variant]))
    build_id = ModuleDebugInfo(binaries[variant]).build_id
    files = _cache_files(cache_home)
    assert files and all(f.startswith(f"gs-cgen/{build_id}/v{cache_mod.FORMAT}-") for f in files)

    def no_decoding(*args):
        raise AssertionError("decoded although the cache is warm")
    with monkeypatch.context() as m:
        m.setattr(DwarfIndex, "_decode_lines", no_decoding)
        m.setattr(DwarfIndex, "_read_functions", no_decoding)
        m.setattr(DwarfIndex, "_file_map", no_decoding)
        m.setattr(DWARFInfo, "get_aranges", no_decoding)
        assert _answers(ModuleDebugInfo(binaries[variant])) == cold

    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    for f in files:
        os.unlink(cache_home / f)
    assert _answers(ModuleDebugInfo(binaries[variant])) == cold
    assert _cache_files(cache_home) == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong shape", "other format"])
def test_damaged_cache_is_recomputed(binaries, cache_home, monkeypatch, damage):
    path = binaries["O2"]
    expected = _answers(ModuleDebugInfo(path))
    store = open_index_cache(ModuleDebugInfo(path).build_id, 0)
    for name in os.listdir(store.directory):
        full = os.path.join(store.directory, name)
        key = name.removeprefix(f"v{cache_mod.FORMAT}-").removesuffix(".marshal")
        if damage == "garbage":
            open(full, "wb").write(b"\x00not marshal")
        elif damage == "truncated":
            data = open(full, "rb").read()
            open(full, "wb").write(data[:len(data) // 2])
        elif damage == "wrong shape":
            store.store(key, [("x",), {"a": None}])
        else:
            monkeypatch.setattr(cache_mod, "FORMAT", cache_mod.FORMAT + 1)
            store.store(key, [])            # written as the next format...
            os.replace(store._path(key), full)
            monkeypatch.setattr(cache_mod, "FORMAT", cache_mod.FORMAT - 1)
    assert _answers(ModuleDebugInfo(path)) == expected


def test_no_cache_without_build_id(tmp_path, cache_home):
    binary = tmp_path / "no_build_id"
    subprocess.run(["gcc", "-g", "-O0", "-Wl,--build-id=none", "-o", str(binary), *map(str, SOURCES)],
                   check=True)
    module = ModuleDebugInfo(str(binary))
    assert module.build_id is None
    assert module.find_functions("move_point")
    assert not (cache_home / "gs-cgen").exists()


def test_store_is_atomic_and_best_effort(tmp_path):
    store = IndexCache(str(tmp_path / "abc"))
    assert store.load("x") is None
    store.store("x", {1: "a", 2: (3, None)})
    assert store.load("x") == {1: "a", 2: (3, None)}
    assert os.listdir(tmp_path / "abc") == [f"v{cache_mod.FORMAT}-x.marshal"]   # no temp files left
    (tmp_path / "file").write_text("")
    IndexCache(str(tmp_path / "file" / "sub")).store("x", 1)   # cannot mkdir: silently no cache


def test_store_removes_the_entry_in_earlier_formats(tmp_path):
    directory = tmp_path / "abc"
    directory.mkdir()
    older = [directory / f"v{v}-x.marshal" for v in range(1, cache_mod.FORMAT)]
    for path in older + [directory / "v1-other.marshal"]:
        path.write_bytes(b"stale")
    IndexCache(str(directory)).store("x", [1])
    assert sorted(os.listdir(directory)) == sorted([f"v{cache_mod.FORMAT}-x.marshal", "v1-other.marshal"])


def test_open_index_cache_rules(monkeypatch, tmp_path):
    big = cache_mod.MIN_DEBUG_INFO
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    assert open_index_cache("0123abcd", big).directory == str(tmp_path / "gs-cgen" / "0123abcd")
    assert open_index_cache("0123abcd", big - 1) is None
    assert open_index_cache(None, big) is None
    assert open_index_cache("../../etc", big) is None
    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    assert open_index_cache("0123abcd", big) is None
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("GS_CGEN_NO_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert open_index_cache("0123abcd", big).directory == str(tmp_path / ".cache" / "gs-cgen" / "0123abcd")
