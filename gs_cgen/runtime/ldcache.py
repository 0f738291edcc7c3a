"""/etc/ld.so.cache: ldconfig's index from library names to files, which
the dynamic loader consults after DT_RUNPATH and before its default
directories.

Format "glibc-ld.so.cache1.1" (glibc sysdeps/generic/dl-cache.h): a
48-byte header, `nlibs` 24-byte entries, then the string table; string
offsets count from the header. ldconfig before glibc 2.32 put the libc5
format ("ld.so-1.7.0") in front of it; that part is skipped. An optional
extension block names the glibc-hwcaps subdirectories (x86-64-v3, ...)
that entries with DL_CACHE_HWCAP_EXTENSION refer to."""
from __future__ import annotations

import struct

from gs_cgen.lazydataclass import dataclass

DEFAULT_PATH = "/etc/ld.so.cache"

_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_OLD_MAGIC = b"ld.so-1.7.0"
_OLD_HEADER = struct.Struct("<12sI")           # magic (padded), nlibs
_OLD_ENTRY_SIZE = 12                           # flags, key, value
_HEADER = struct.Struct("<20sIIB3xI12x")       # magic+version, nlibs, len_strings,
                                               # flags, extension_offset
_ENTRY = struct.Struct("<iIIIQ")               # flags, key, value, osversion, hwcap
_EXTENSION_MAGIC = 0xEAA42174
_EXTENSION_HEADER = struct.Struct("<II")       # magic, count
_EXTENSION_SECTION = struct.Struct("<IIII")    # tag, flags, offset, size
_TAG_GLIBC_HWCAPS = 1
# FLAG_ELF_LIBC6 | FLAG_X8664_LIB64: what ld.so on x86-64 accepts.
_X86_64_LIBC6 = 0x0303
_HWCAP_EXTENSION = 1 << 62


class CacheFormatError(ValueError):
    """Not an ld.so.cache this parser knows (callers fall back to no cache)."""


@dataclass(frozen=True)
class CacheEntry:
    name: str                  # the soname ldconfig indexed, e.g. "libc.so.6"
    path: str
    hwcaps: str | None = None  # glibc-hwcaps subdirectory; None: the baseline build


@dataclass(frozen=True)
class LdCache:
    entries: tuple[CacheEntry, ...]

    def lookup(self, name: str, hwcaps: tuple[str, ...] = ()) -> str | None:
        """The file ld.so picks for `name`: the build for the most preferred
        subdirectory in `hwcaps` (best first) this CPU supports, else the
        baseline build."""
        best, best_rank = None, len(hwcaps) + 1
        for entry in self.entries:
            if entry.name != name:
                continue
            rank = len(hwcaps) if entry.hwcaps is None else _rank(entry.hwcaps, hwcaps)
            if rank < best_rank:
                best, best_rank = entry.path, rank
        return best


def _rank(subdirectory: str, hwcaps: tuple[str, ...]) -> int:
    return hwcaps.index(subdirectory) if subdirectory in hwcaps else len(hwcaps) + 1


def read_cache(path: str = DEFAULT_PATH) -> LdCache:
    """OSError when unreadable, CacheFormatError when not a known format."""
    with open(path, "rb") as f:
        return parse_cache(f.read())


def parse_cache(data: bytes) -> LdCache:
    base = _new_format_start(data)
    try:
        magic, nlibs, _, _, extension = _HEADER.unpack_from(data, base)
        subdirectories = _hwcaps_subdirectories(data, base, extension)
        entries = [_entry(data, base, offset, subdirectories)
                   for offset in range(base + _HEADER.size, base + _HEADER.size
                                       + nlibs * _ENTRY.size, _ENTRY.size)]
    except (struct.error, IndexError, ValueError) as exc:   # ValueError: no NUL, bad UTF-8
        raise CacheFormatError(f"truncated or corrupt ld.so.cache: {exc}") from None
    return LdCache(tuple(entry for entry in entries if entry is not None))


def _new_format_start(data: bytes) -> int:
    if data.startswith(_NEW_MAGIC):
        return 0
    if not data.startswith(_OLD_MAGIC):
        raise CacheFormatError("not an ld.so.cache (unknown magic)")
    _, old_count = _OLD_HEADER.unpack_from(data)
    # The new header follows the old entries, 8-byte aligned (dl-cache.h ALIGN_CACHE).
    start = (_OLD_HEADER.size + old_count * _OLD_ENTRY_SIZE + 7) & ~7
    if not data.startswith(_NEW_MAGIC, start):
        raise CacheFormatError("old-format ld.so.cache without the glibc 2.x part")
    return start


def _entry(data: bytes, base: int, offset: int, subdirectories: list[str]) -> CacheEntry | None:
    flags, key, value, _, hwcap = _ENTRY.unpack_from(data, offset)
    if flags != _X86_64_LIBC6:
        return None
    subdirectory = None
    if hwcap & _HWCAP_EXTENSION:
        subdirectory = subdirectories[hwcap & 0xFFFF_FFFF]
    elif hwcap:
        return None       # legacy hwcaps (tls/, x86_64/ ...): gone since glibc 2.37
    return CacheEntry(_string(data, base + key), _string(data, base + value), subdirectory)


def _hwcaps_subdirectories(data: bytes, base: int, extension: int) -> list[str]:
    if not extension or len(data) < base + extension + _EXTENSION_HEADER.size:
        return []
    magic, count = _EXTENSION_HEADER.unpack_from(data, base + extension)
    if magic != _EXTENSION_MAGIC:
        return []
    for i in range(count):
        tag, _, offset, size = _EXTENSION_SECTION.unpack_from(
            data, base + extension + _EXTENSION_HEADER.size + i * _EXTENSION_SECTION.size)
        if tag == _TAG_GLIBC_HWCAPS:
            # An array of string-table offsets, one per subdirectory name.
            return [_string(data, base + name) for (name,) in
                    struct.iter_unpack("<I", data[base + offset:base + offset + size])]
    return []


def _string(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode()
