"""On-disk cache of DWARF indexes, keyed by build-id (DESIGN.md "Speed").

A build-id names one linked image, so what we decode from its DWARF (line
tables, top-level functions, file names, .debug_aranges, symbol tables,
the call sites of each callee and the inlined copies of each function
looked up so far) never changes. Entries live in
`${XDG_CACHE_HOME:-~/.cache}/gs-cgen/<build-id>/v<FORMAT>-<name>.marshal`.

Values are plain tuples, dicts, ints and strings, stored as
gs_cgen/cachedir.py writes entries (marshal, version, name and CRC32
checked on reading, atomic writes): a bad cache costs time, never a wrong
answer.

Small modules decode in milliseconds, so only those with at least
MIN_DEBUG_INFO bytes of .debug_info are cached: that keeps test binaries and
one-off builds from filling the cache directory.

Bump FORMAT whenever what is cached, or how it is derived (e.g. path
normalization in index.py), changes.
"""
from __future__ import annotations

import os
import re

from gs_cgen.cachedir import cache_root, read_entry, write_entry

FORMAT = 6      # 6: a C++ CU's functions include a lambda's operator() (nested in its function); 5: a Rust CU's functions include those nested in its namespaces; 4: line rows keep their discriminator; 3: no functions without valid addresses
MIN_DEBUG_INFO = 256 * 1024
# Symbol tables of 1000 symbols and more (libc, ld.so: a `-p PID` opens
# every mapped module) decode in several ms; smaller ones in less.
MIN_SYMBOL_TABLE = 1000 * 24
_BUILD_ID = re.compile(r"[0-9a-f]{8,128}")


def open_index_cache(build_id: str | None, debug_info_size: int,
                     minimum: int | None = None) -> "IndexCache | None":
    """The cache for one build-id; None without a build-id, for inputs
    smaller than `minimum` bytes (MIN_DEBUG_INFO of .debug_info by
    default), or when GS_CGEN_NO_CACHE=1."""
    least = MIN_DEBUG_INFO if minimum is None else minimum
    if not build_id or not _BUILD_ID.fullmatch(build_id) or debug_info_size < least:
        return None
    root = cache_root()
    return IndexCache(os.path.join(root, build_id)) if root is not None else None


class IndexCache:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, f"v{FORMAT}-{name}.marshal")

    def load(self, name: str):
        """The value stored under `name`, or None (missing, unreadable,
        another format, corrupt)."""
        return read_entry(self._path(name), FORMAT, name)

    def store(self, name: str, value) -> None:
        """Best effort: a read-only or full disk just means no cache. The
        entry's copies in earlier formats, which no release reads any
        more, are removed: they would otherwise stay for ever."""
        write_entry(self._path(name), FORMAT, name, value)
        for old in range(1, FORMAT):
            try:
                os.unlink(os.path.join(self.directory, f"v{old}-{name}.marshal"))
            except OSError:
                pass
