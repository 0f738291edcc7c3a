"""The ABI's layouts are cached by a digest of gs_abi.h and of abi.py (the
layout rules): a cached ABI equals the parsed one, an edited header is
parsed again, a damaged entry is ignored, and pycparser is not imported
when the cache answers."""
from __future__ import annotations

import subprocess
import sys

import pytest

from gs_cgen import abi as abi_mod
from gs_cgen.abi import HEADER_PATH, load_abi


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    load_abi.cache_clear()
    yield tmp_path
    load_abi.cache_clear()


def _parsed(path=HEADER_PATH):
    return abi_mod._parse_abi(path, path.read_text())


def _same(a, b) -> bool:
    return a.constants == b.constants and a.map_names == b.map_names and \
        {n: (s.size, s.fields) for n, s in a.structs.items()} == \
        {n: (s.size, s.fields) for n, s in b.structs.items()}


def test_cached_abi_equals_parsed(cache_home):
    first = load_abi()
    assert len(list((cache_home / "gs-cgen" / "abi").iterdir())) == 1
    load_abi.cache_clear()
    assert _same(load_abi(), first) and _same(first, _parsed())
    assert first.structs and first.constants and first.map_names


def test_an_edited_header_is_parsed_again(cache_home, tmp_path):
    load_abi()
    edited = tmp_path / "gs_abi.h"
    text = HEADER_PATH.read_text()
    edited.write_text(text + "\nenum gs_test_only { GS_TEST_ONLY_CONSTANT = 77 };\n")
    abi = load_abi(edited)
    assert abi.constants["GS_TEST_ONLY_CONSTANT"] == 77
    assert len(list((cache_home / "gs-cgen" / "abi").iterdir())) == 2


def test_a_damaged_entry_is_ignored(cache_home):
    load_abi()
    (entry,) = (cache_home / "gs-cgen" / "abi").iterdir()
    entry.write_bytes(entry.read_bytes()[:-7])
    load_abi.cache_clear()
    assert _same(load_abi(), _parsed())


def test_a_cached_abi_does_not_import_pycparser(cache_home):
    load_abi()          # writes the entry
    code = ("import sys; from gs_cgen.abi import abi; abi(); "
            "print('pycparser' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ,
                                          "XDG_CACHE_HOME": str(cache_home)})
    assert out.stdout.strip() == "False"
