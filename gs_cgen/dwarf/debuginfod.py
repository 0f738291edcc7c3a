"""Debug files from debuginfod servers, fetched by build-id as gdb and perf
fetch them: through elfutils' client library, libdebuginfod.so.1 (Debian's
libdebuginfod1), loaded with ctypes. The library does what those tools
share: it reads DEBUGINFOD_URLS (servers, space-separated), keeps files in
its cache (DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client,
else ~/.cache/debuginfod_client: <build-id>/debuginfo), answers from the
cache without the network, remembers a "no such build-id" for a while, and
bounds each connection and stall by DEBUGINFOD_TIMEOUT (default 90 s).

This module is imported only when DEBUGINFOD_URLS is set and a module has
no DWARF on disk (debugfile.py): ctypes costs start-up time otherwise.

A server that did not answer is remembered for the rest of the run: every
other module without DWARF would wait for it again.
"""
from __future__ import annotations

import ctypes
import errno
import os
import sys

from gs_cgen.errors import DebugInfoError

LIBRARY = "libdebuginfod.so.1"
# Downloads from this size on show a progress line on stderr.
PROGRESS_MIN_BYTES = 1 << 20

_ProgressFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_long, ctypes.c_long)
_library: ctypes.CDLL | None = None
# Why the servers could not be reached, once they could not: (reason, errno).
_unreachable: tuple[str, int] | None = None


def urls() -> str:
    """DEBUGINFOD_URLS as given ('' when unset or blank)."""
    return " ".join(os.environ.get("DEBUGINFOD_URLS", "").split())


def fetch_debuginfo(build_id: str, module: str) -> str:
    """The path of the debug file of build-id `build_id` (lowercase hex) in
    the client's cache, downloaded first when not there. `module` names
    the file in messages. DebugInfoError when no server has it or none
    answered."""
    global _unreachable
    if _unreachable is not None:
        raise _fetch_error(module, build_id, *_unreachable)
    library = _load_library(module, build_id)
    progress = DownloadProgress(module, build_id)
    callback = _ProgressFn(progress.callback)      # kept alive for the call
    client = library.debuginfod_begin()
    if not client:
        raise _fetch_error(module, build_id, "the client library could not start", 0)
    path = ctypes.c_void_p()
    try:
        library.debuginfod_set_progressfn(client, callback)
        fd = library.debuginfod_find_debuginfo(client, build_id.encode(), 0, ctypes.byref(path))
    finally:
        library.debuginfod_end(client)
        progress.finish()
    if progress.error is not None:
        if fd >= 0:
            os.close(fd)
        _free(path)
        raise progress.error
    if fd < 0:
        code = -fd
        if code != errno.ENOENT:
            _unreachable = (_reason(code), code)
        raise _fetch_error(module, build_id, _reason(code), code)
    os.close(fd)
    found = os.fsdecode(ctypes.string_at(path.value))
    _free(path)
    return found


def forget_unreachable() -> None:
    """Try the servers again (tests)."""
    global _unreachable
    _unreachable = None


def _reason(code: int) -> str:
    if code == errno.ETIME:        # the client's word for DEBUGINFOD_TIMEOUT passing
        timeout = os.environ.get("DEBUGINFOD_TIMEOUT", "").strip() or "90"
        return f"no answer within DEBUGINFOD_TIMEOUT ({timeout} s)"
    return os.strerror(code)


def _fetch_error(module: str, build_id: str, reason: str, code: int) -> DebugInfoError:
    servers = urls()
    if code == errno.ENOENT:
        return DebugInfoError(
            f"'{module}' has no DWARF debug info, and no debuginfod server has it: "
            f"build-id {build_id} not found on {servers}",
            hints=("install its -dbgsym package, or add a server that has it to "
                   "DEBUGINFOD_URLS",))
    return DebugInfoError(
        f"'{module}' has no DWARF debug info, and fetching it (build-id {build_id}) "
        f"from debuginfod failed: {reason} ({servers})",
        hints=("is the server up? DEBUGINFOD_TIMEOUT (seconds, default 90) bounds each "
               "connection; unset DEBUGINFOD_URLS to trace without it",))


def _load_library(module: str, build_id: str) -> ctypes.CDLL:
    global _library
    if _library is None:
        try:
            library = ctypes.CDLL(LIBRARY)
        except OSError as exc:
            raise DebugInfoError(
                f"'{module}' has no DWARF debug info, and DEBUGINFOD_URLS is set, but "
                f"{LIBRARY} cannot be loaded to fetch build-id {build_id}: {exc}",
                hints=("install Debian's libdebuginfod1 (elfutils' debuginfod client)",)) \
                from exc
        library.debuginfod_begin.restype = ctypes.c_void_p
        library.debuginfod_begin.argtypes = []
        library.debuginfod_end.restype = None
        library.debuginfod_end.argtypes = [ctypes.c_void_p]
        library.debuginfod_set_progressfn.restype = None
        library.debuginfod_set_progressfn.argtypes = [ctypes.c_void_p, _ProgressFn]
        library.debuginfod_find_debuginfo.restype = ctypes.c_int
        library.debuginfod_find_debuginfo.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
        _library = library
    return _library


def _free(pointer: ctypes.c_void_p) -> None:
    # The client strdup()s the path; it is ours to free.
    if pointer.value:
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        free(pointer)


class DownloadProgress:
    """The client's progress callback: (bytes so far, total bytes; 0 or
    less when unknown). One line on stderr for a download of
    PROGRESS_MIN_BYTES or more, rewritten in place on a terminal; nothing
    for a small one, a cached file, or one of unknown size."""

    def __init__(self, module: str, build_id: str, stream=None) -> None:
        self.module, self.build_id = module, build_id
        self.stream = stream if stream is not None else sys.stderr
        self.shown_percent: int | None = None
        self.error: BaseException | None = None

    def callback(self, _client, done: int, total: int) -> int:
        # An exception cannot cross the C library: Ctrl-C (or a broken
        # stderr) cancels the download, a non-zero return, and
        # fetch_debuginfo raises it again after.
        try:
            self.update(done, total)
            return 0
        except BaseException as exc:      # noqa: BLE001 - re-raised by fetch_debuginfo
            self.error = exc
            return 1

    def update(self, done: int, total: int) -> None:
        if total < PROGRESS_MIN_BYTES:
            return
        percent = min(100, max(0, done * 100 // total))
        terminal = self.stream.isatty()
        if self.shown_percent is not None and (not terminal or percent == self.shown_percent):
            return
        line = (f"gs-cgen: downloading debug info of '{self.module}' (build-id "
                f"{self.build_id}) from debuginfod: {total / (1 << 20):.1f} MB")
        if terminal:
            self.stream.write(f"\r{line}, {percent}%")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.shown_percent = percent

    def finish(self) -> None:
        if self.shown_percent is not None and self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()
