"""Where gs-cgen keeps what it derives once and reuses across runs:
`${XDG_CACHE_HOME:-~/.cache}/gs-cgen`. DWARF indexes live there by
build-id (indexcache.py), the script parser's tables by grammar digest
(script/parser.py), the ABI's layouts by header digest (abi.py).
GS_CGEN_NO_CACHE=1 turns every such cache off.

Entries written with `write_entry` are plain data (tuples, dicts, ints,
strings) stored with `marshal`, which, unlike pickle, cannot run code when
read. Each file carries a format version, its own name and a CRC32 of the
payload; any mismatch or read error makes `read_entry` return None and the
caller recomputes, so a bad cache costs time, never a wrong answer. Writes
go to a temporary file renamed into place, so a reader never sees half a
file.
"""
from __future__ import annotations

import marshal
import os
import zlib


def cache_root() -> str | None:
    """The cache directory, or None when caching is switched off."""
    if os.environ.get("GS_CGEN_NO_CACHE") == "1":
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gs-cgen")


def read_entry(path: str, version: int, name: str):
    """The value stored at `path` under `name` in format `version`, or None
    (missing, unreadable, another format or name, corrupt)."""
    try:
        with open(path, "rb") as f:
            stored_version, stored_name, crc, payload = marshal.loads(f.read())
        if stored_version != version or stored_name != name or zlib.crc32(payload) != crc:
            return None
        return marshal.loads(payload)
    except Exception:   # noqa: BLE001 - any failure means "not cached"
        return None


def write_entry(path: str, version: int, name: str, value) -> None:
    """Best effort: a read-only or full disk just means no cache."""
    import tempfile  # noqa: PLC0415 - ~8 ms to import (shutil, random...); a warm run writes nothing
    directory = os.path.dirname(path)
    try:
        payload = marshal.dumps(value)
        data = marshal.dumps((version, name, zlib.crc32(payload), payload))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    except (OSError, ValueError):
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
