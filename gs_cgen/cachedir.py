"""Where gs-cgen keeps what it derives once and reuses across runs:
`${XDG_CACHE_HOME:-~/.cache}/gs-cgen`. DWARF indexes live there by
build-id (dwarf/cache.py), the script parser's tables by grammar digest
(script/parser.py). GS_CGEN_NO_CACHE=1 turns every such cache off."""
from __future__ import annotations

import os


def cache_root() -> str | None:
    """The cache directory, or None when caching is switched off."""
    if os.environ.get("GS_CGEN_NO_CACHE") == "1":
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gs-cgen")
