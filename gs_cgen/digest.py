"""BLAKE2b, the one hash gs-cgen's start-up path needs (module cookies,
cache entry names), without `import hashlib`: that loads OpenSSL, ~5 ms of
a 0.15 s `info`. CPython's hashlib takes blake2b from its built-in
`_blake2` module, so this is the same function.
"""
from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:                 # another interpreter: hashlib's own
    from hashlib import blake2b

__all__ = ["blake2b", "name_digest"]


def name_digest(text: str) -> str:
    """24 hex digits naming `text` in a file name (cache entries; the entry
    itself stores the text, so a collision costs a recomputation)."""
    return blake2b(text.encode(), digest_size=12).hexdigest()
