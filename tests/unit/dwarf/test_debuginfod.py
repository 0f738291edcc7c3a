"""Debug files from debuginfod (gs_cgen/dwarf/debuginfod.py, called by
debugfile.py), without a network: the client library is replaced by a fake
with the same C calling conventions (a strdup'd path to free, an fd to
close, a negative errno), or the fetch itself by one that returns a file.
tests/live/test_debuginfod_live.py runs the real client against a real
server."""
from __future__ import annotations

import ctypes
import errno
import io
import os
import shutil
import subprocess
import sys

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import debugfile, debuginfod
from gs_cgen.dwarf.module import ModuleDebugInfo
from gs_cgen.errors import DebugInfoError

from .conftest import SOURCES

URL = "http://127.0.0.1:1"


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """(unstripped, stripped, its debug file, another build's debug file)."""
    if shutil.which("objcopy") is None or shutil.which("gcc") is None:
        require("needs gcc and binutils")
    out = tmp_path_factory.mktemp("debuginfod")
    full, other = out / "prog", out / "other"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(full), *map(str, SOURCES)], check=True)
    subprocess.run(["gcc", "-g", "-O2", "-o", str(other), *map(str, SOURCES)], check=True)
    for binary in (full, other):
        subprocess.run(["objcopy", "--only-keep-debug", str(binary), f"{binary}.debug"], check=True)
    subprocess.run(["strip", "-o", str(out / "stripped"), str(full)], check=True)
    return full, out / "stripped", out / "prog.debug", out / "other.debug"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setattr(debugfile, "DEBUG_ROOTS", (str(tmp_path / "no-root"),))
    monkeypatch.delenv("GS_CGEN_DEBUG_ROOTS", raising=False)
    monkeypatch.setenv("DEBUGINFOD_URLS", URL)
    debuginfod.forget_unreachable()
    yield
    debuginfod.forget_unreachable()


def _fetch_returning(monkeypatch, path, calls=None):
    def fetch(build_id, module):
        if calls is not None:
            calls.append((build_id, module))
        return str(path)
    monkeypatch.setattr(debuginfod, "fetch_debuginfo", fetch)


def _answers(module: ModuleDebugInfo):
    sites = module.find_functions("scale")
    return (sites, [[(v.name, v.location) for v in module.variables_at(s.probe_address)]
                    for s in sites], module.function_names())


def test_fetched_debug_file_answers_as_the_unstripped_binary(split, monkeypatch):
    full, stripped, debug, _ = split
    calls = []
    _fetch_returning(monkeypatch, debug, calls)
    module = ModuleDebugInfo(str(stripped))
    assert module.has_debug_info and module.debug_path == str(debug)
    assert calls == [(module.build_id, str(stripped))]
    assert _answers(module) == _answers(ModuleDebugInfo(str(full)))


def test_debuginfod_is_not_asked_without_urls_or_with_local_dwarf(split, monkeypatch, tmp_path):
    full, stripped, debug, _ = split
    calls = []
    _fetch_returning(monkeypatch, debug, calls)
    assert ModuleDebugInfo(str(full)).has_debug_info               # DWARF in the file
    build_id = ModuleDebugInfo(str(full)).build_id
    by_id = tmp_path / "root" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    by_id.parent.mkdir(parents=True)
    shutil.copy(debug, by_id)
    monkeypatch.setenv("GS_CGEN_DEBUG_ROOTS", str(tmp_path / "root"))
    assert ModuleDebugInfo(str(stripped)).debug_path == str(by_id)  # a local debug file
    monkeypatch.delenv("GS_CGEN_DEBUG_ROOTS")
    for unset in ("", "  "):
        monkeypatch.setenv("DEBUGINFOD_URLS", unset)
        assert not ModuleDebugInfo(str(stripped)).has_debug_info
    assert calls == []


def test_fetched_file_of_another_build_is_refused(split, monkeypatch):
    _, stripped, _, other = split
    _fetch_returning(monkeypatch, other)
    module = ModuleDebugInfo(str(stripped))
    assert not module.has_debug_info
    with pytest.raises(DebugInfoError) as err:
        module.find_functions("scale")
    other_id = ModuleDebugInfo(str(other)).build_id
    assert err.value.message == (
        f"the debug file debuginfod gave for '{stripped}' (build-id {module.build_id}) has "
        f"build-id {other_id}: {other}")


def test_fetch_failure_is_raised_only_when_dwarf_is_needed(split, monkeypatch):
    _, stripped, _, _ = split

    def fetch(build_id, module):
        raise debuginfod._fetch_error(module, build_id, "Connection refused", errno.ECONNREFUSED)
    monkeypatch.setattr(debuginfod, "fetch_debuginfo", fetch)
    module = ModuleDebugInfo(str(stripped))          # opening it is no error
    assert not module.has_debug_info
    with pytest.raises(DebugInfoError) as err:
        module.find_functions("scale")
    assert err.value.message == (
        f"'{stripped}' has no DWARF debug info, and fetching it (build-id {module.build_id}) "
        f"from debuginfod failed: Connection refused ({URL})")
    assert err.value.hints[-1] == (
        "separate debug info searched: "
        f"{debugfile.DEBUG_ROOTS[0]}/.build-id/{module.build_id[:2]}/{module.build_id[2:]}.debug, "
        f"debuginfod ({URL})")


class FakeClientLibrary:
    """libdebuginfod's four calls as ctypes makes them: find_debuginfo
    reports progress, then returns an fd and a malloc'd path, or -errno."""

    def __init__(self, result, progress=()):
        self.result, self.progress = result, progress
        self.asked: list[bytes] = []
        self.ended = 0
        self._libc = ctypes.CDLL(None)
        self._libc.strdup.restype = ctypes.c_void_p
        self._libc.strdup.argtypes = [ctypes.c_char_p]

    def debuginfod_begin(self):
        return 1

    def debuginfod_set_progressfn(self, client, callback):
        self.callback = callback

    def debuginfod_find_debuginfo(self, client, build_id, length, path_ref):
        self.asked.append(build_id)
        for done, total in self.progress:
            if self.callback(client, done, total):
                return -errno.ECANCELED
        if isinstance(self.result, int):
            return self.result
        path_ref._obj.value = self._libc.strdup(str(self.result).encode())
        return os.open(self.result, os.O_RDONLY)

    def debuginfod_end(self, client):
        self.ended += 1


def _with_library(monkeypatch, library):
    monkeypatch.setattr(debuginfod, "_load_library", lambda module, build_id: library)


def test_client_returns_the_cached_path(monkeypatch, tmp_path):
    cached = tmp_path / "cache" / "ab12" / "debuginfo"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"\x7fELF")
    library = FakeClientLibrary(cached)
    _with_library(monkeypatch, library)
    assert debuginfod.fetch_debuginfo("ab12", "/bin/prog") == str(cached)
    assert library.asked == [b"ab12"] and library.ended == 1


def test_not_found_names_module_and_build_id_and_servers_are_asked_again(monkeypatch):
    library = FakeClientLibrary(-errno.ENOENT)
    _with_library(monkeypatch, library)
    for module in ("/bin/prog", "/lib/libfoo.so"):
        with pytest.raises(DebugInfoError) as err:
            debuginfod.fetch_debuginfo("ab12", module)
        assert err.value.message == (f"'{module}' has no DWARF debug info, and no debuginfod "
                                     f"server has it: build-id ab12 not found on {URL}")
    assert library.asked == [b"ab12", b"ab12"]


def test_unreachable_servers_are_not_asked_again_in_the_run(monkeypatch):
    library = FakeClientLibrary(-errno.ECONNREFUSED)
    _with_library(monkeypatch, library)
    messages = []
    for module, build_id in (("/bin/prog", "ab12"), ("/lib/libfoo.so", "cd34")):
        with pytest.raises(DebugInfoError) as err:
            debuginfod.fetch_debuginfo(build_id, module)
        messages.append(err.value.message)
    assert messages == [
        f"'/bin/prog' has no DWARF debug info, and fetching it (build-id ab12) from debuginfod "
        f"failed: Connection refused ({URL})",
        f"'/lib/libfoo.so' has no DWARF debug info, and fetching it (build-id cd34) from "
        f"debuginfod failed: Connection refused ({URL})"]
    assert library.asked == [b"ab12"]


def test_timeout_says_which_one(monkeypatch):
    _with_library(monkeypatch, FakeClientLibrary(-errno.ETIME))
    monkeypatch.setenv("DEBUGINFOD_TIMEOUT", "5")
    with pytest.raises(DebugInfoError) as err:
        debuginfod.fetch_debuginfo("ab12", "/bin/prog")
    assert err.value.message == (
        "'/bin/prog' has no DWARF debug info, and fetching it (build-id ab12) from debuginfod "
        f"failed: no answer within DEBUGINFOD_TIMEOUT (5 s) ({URL})")


def test_missing_client_library_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(debuginfod, "LIBRARY", "libno-such-debuginfod.so.1")
    monkeypatch.setattr(debuginfod, "_library", None)
    with pytest.raises(DebugInfoError) as err:
        debuginfod.fetch_debuginfo("ab12", "/bin/prog")
    assert err.value.message.startswith(
        "'/bin/prog' has no DWARF debug info, and DEBUGINFOD_URLS is set, but "
        "libno-such-debuginfod.so.1 cannot be loaded to fetch build-id ab12: ")
    assert err.value.hints == ("install Debian's libdebuginfod1 (elfutils' debuginfod client)",)


class _Stream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


MB = 1 << 20
LINE = "gs-cgen: downloading debug info of '/bin/prog' (build-id ab12) from debuginfod: 2.0 MB"


def test_progress_line_for_a_large_download_only():
    small = debuginfod.DownloadProgress("/bin/prog", "ab12", _Stream(False))
    for done in (0, 1000, MB - 1):
        small.update(done, MB - 1)
    small.update(7, 0)                   # size unknown (before a server answers)
    small.finish()
    assert small.stream.getvalue() == ""
    large = debuginfod.DownloadProgress("/bin/prog", "ab12", _Stream(False))
    for done in (0, MB, 2 * MB):
        large.update(done, 2 * MB)
    large.finish()
    assert large.stream.getvalue() == LINE + "\n"      # one line, not one per update


def test_progress_on_a_terminal_is_rewritten_in_place():
    progress = debuginfod.DownloadProgress("/bin/prog", "ab12", _Stream(True))
    for done in (0, 1, MB, MB + 1, 2 * MB):
        progress.update(done, 2 * MB)
    progress.finish()
    assert progress.stream.getvalue() == \
        f"\r{LINE}, 0%\r{LINE}, 50%\r{LINE}, 100%\n"


def test_interrupt_during_download_cancels_it_and_is_raised_after(monkeypatch):
    library = FakeClientLibrary(-errno.ENOENT, progress=[(0, 2 * MB), (MB, 2 * MB)])
    _with_library(monkeypatch, library)

    def interrupted(self, done, total):
        raise KeyboardInterrupt
    monkeypatch.setattr(debuginfod.DownloadProgress, "update", interrupted)
    with pytest.raises(KeyboardInterrupt):
        debuginfod.fetch_debuginfo("ab12", "/bin/prog")
    assert library.ended == 1


def test_ordinary_path_does_not_import_the_client(split):
    _, stripped, _, _ = split
    code = ("import sys; from gs_cgen.dwarf.module import ModuleDebugInfo; "
            f"ModuleDebugInfo({str(stripped)!r}); "
            "print('gs_cgen.dwarf.debuginfod' in sys.modules, 'ctypes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={"PATH": "/usr/bin:/bin"})
    assert done.stdout.split() == ["False", "False"]
