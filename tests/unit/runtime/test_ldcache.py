"""/etc/ld.so.cache parsing: this machine's real cache against `ldconfig -p`
(glibc's own reader), and synthetic caches for the parts a Debian 12 cache
does not have (the libc5 prefix, glibc-hwcaps entries)."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require

from gs_cgen.runtime.ldcache import CacheFormatError, parse_cache, read_cache

REAL_CACHE = Path("/etc/ld.so.cache")


def ldconfig_entries() -> list[tuple[str, str]]:
    """(name, path) of the x86-64 libc6 baseline entries, in cache order."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^\s+(\S+) \(libc6,x86-64\) => (\S+)$", out, re.M)]


def test_real_cache_matches_ldconfig():
    if not REAL_CACHE.exists() or shutil.which("ldconfig") is None:
        require("no glibc ld.so.cache on this machine")
    cache = read_cache(str(REAL_CACHE))
    expected = ldconfig_entries()
    assert len(expected) > 10
    assert [(e.name, e.path) for e in cache.entries if e.hwcaps is None] == expected
    assert cache.lookup("libc.so.6") == dict(expected)["libc.so.6"]
    assert cache.lookup("libno-such-library.so.9") is None


def _cache(entries: list[tuple[str, str, int]], hwcaps: list[str] = (),
           old_prefix: bool = False) -> bytes:
    """A "glibc-ld.so.cache1.1" image: header, entries, strings, extension."""
    strings = bytearray()
    entry_start = 48
    strings_start = entry_start + 24 * len(entries)

    def string(text: str) -> int:
        strings.extend(text.encode() + b"\0")
        return strings_start + len(strings) - len(text) - 1

    body = b"".join(struct.pack("<iIIIQ", flags, string(name), string(path), 0, hwcap)
                    for name, path, flags, hwcap in
                    [(n, p, 0x0303, h) for n, p, h in entries])
    names = [string(name) for name in hwcaps]
    while (strings_start + len(strings)) % 4:
        strings.append(0)
    extension = strings_start + len(strings)
    array = extension + 8 + 16
    tail = struct.pack("<II", 0xEAA42174, 1) + struct.pack("<IIII", 1, 0, array, 4 * len(names))
    tail += b"".join(struct.pack("<I", n) for n in names)
    header = struct.pack("<20sIIB3xI12x", b"glibc-ld.so.cache1.1", len(entries), len(strings),
                         2, extension if hwcaps else 0)
    image = header + body + bytes(strings) + (tail if hwcaps else b"")
    if old_prefix:
        old = struct.pack("<12sI", b"ld.so-1.7.0", 1) + struct.pack("<iII", 1, 0, 0)
        image = old + b"\0" * ((-len(old)) % 8) + image
    return image


HWCAP_EXT = 1 << 62


def test_hwcaps_build_is_chosen_when_the_cpu_supports_it():
    cache = parse_cache(_cache([
        ("libz.so.1", "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1", HWCAP_EXT | 1),
        ("libz.so.1", "/usr/lib/glibc-hwcaps/x86-64-v2/libz.so.1", HWCAP_EXT | 0),
        ("libz.so.1", "/usr/lib/libz.so.1", 0),
    ], hwcaps=["x86-64-v2", "x86-64-v3"]))
    assert cache.lookup("libz.so.1", ("x86-64-v3", "x86-64-v2")) == \
        "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1"
    assert cache.lookup("libz.so.1", ("x86-64-v2",)) == "/usr/lib/glibc-hwcaps/x86-64-v2/libz.so.1"
    assert cache.lookup("libz.so.1") == "/usr/lib/libz.so.1"


def test_legacy_libc5_prefix_is_skipped():
    cache = parse_cache(_cache([("libm.so.6", "/lib/libm.so.6", 0)], old_prefix=True))
    assert cache.lookup("libm.so.6") == "/lib/libm.so.6"


def test_garbage_is_a_format_error():
    with pytest.raises(CacheFormatError, match="unknown magic"):
        parse_cache(b"not a cache at all")
    with pytest.raises(CacheFormatError, match="truncated"):
        parse_cache(_cache([("libm.so.6", "/lib/libm.so.6", 0)])[:60])
