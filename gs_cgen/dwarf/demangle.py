"""Itanium C++ ABI symbol names -> the text gdb shows (`_ZN3geo3addEii` ->
`geo::add(int, int)`), by libstdc++'s own demangler.

`abi::__cxa_demangle` is libiberty's cp-demangle, the demangler gdb and
c++filt use, so names read exactly as gdb prints them (clone suffixes
included: `... [clone .isra.0]`). It is called through ctypes: libstdc++
is on every machine that runs C++ (and BCC links it), so no package is
needed. Without it, C++ names are simply not offered (`available()`).
"""
from __future__ import annotations

import functools


@functools.cache
def _cxa_demangle():
    # ctypes is imported at the first C++ name (~10 ms; C modules need none).
    import ctypes  # noqa: PLC0415
    import ctypes.util  # noqa: PLC0415
    path = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
    try:
        library = ctypes.CDLL(path)
        function = library.__cxa_demangle
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError):
        return None
    # char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
    function.restype = ctypes.c_void_p
    function.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.POINTER(ctypes.c_int))
    free.argtypes = (ctypes.c_void_p,)
    free.restype = None
    return function, free


def available() -> bool:
    return _cxa_demangle() is not None


@functools.lru_cache(maxsize=1 << 16)
def demangle(symbol: str) -> str | None:
    """The demangled text of a mangled (`_Z...`) symbol, None for any other
    name or one the demangler rejects."""
    if not symbol.startswith("_Z"):
        return None       # before loading libstdc++ (find_library runs ldconfig)
    functions = _cxa_demangle()
    if functions is None:
        return None
    import ctypes  # noqa: PLC0415 - imported by _cxa_demangle already
    function, free = functions
    status = ctypes.c_int()
    result = function(symbol.encode(), None, None, ctypes.byref(status))
    if not result:
        return None
    try:
        return ctypes.string_at(result).decode("utf-8", "replace") if status.value == 0 else None
    finally:
        free(result)
