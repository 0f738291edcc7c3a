"""Mangled symbol names -> the text gdb shows: Itanium C++ (`_ZN3geo3addEii`
-> `geo::add(int, int)`) by libstdc++'s own demangler, Rust's legacy
(`_ZN4main7process17h97cb9ddefe075236E` -> `main::process`) and v0
(`_RNvNtCs..._3std7process5abort` -> `std::process::abort`) manglings by
libiberty's rust-demangle, the one gdb and c++filt are built with.

`abi::__cxa_demangle` is libiberty's cp-demangle, the demangler gdb and
c++filt use, so names read exactly as gdb prints them (clone suffixes
included: `... [clone .isra.0]`). It is called through ctypes: libstdc++
is on every machine that runs C++ (and BCC links it), so no package is
needed. Without it, C++ names are simply not offered (`available()`).

libiberty is not a shared library of its own; binutils' libbfd exports
it (`rust_demangle`), and binutils is on every machine with a compiler.
Without it, Rust symbols have no demangled names, and Rust functions are
still found and named by their DWARF paths (dwarf/rustnames.py).
"""
from __future__ import annotations

import functools
import glob
import re

# rustc's legacy scheme: an Itanium nested name whose last component is
# the crate hash, `17h` + 16 hex digits (rustc_symbol_mangling/legacy.rs).
_RUST_LEGACY = re.compile(r"_ZN.*17h[0-9a-f]{16}E(\.[\w.]*)?$")


def is_rust_symbol(symbol: str) -> bool:
    return symbol.startswith("_R") or _RUST_LEGACY.match(symbol) is not None


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
    if is_rust_symbol(symbol):
        return rust_demangle(symbol)
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


@functools.cache
def _rust_demangler():
    import ctypes  # noqa: PLC0415
    for path in sorted(glob.glob("/usr/lib/*/libbfd-*.so")) + ["libbfd.so"]:
        try:
            library = ctypes.CDLL(path)
            function = library.rust_demangle
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            continue
        # char *rust_demangle(const char *mangled, int options), malloc'd
        function.restype = ctypes.c_void_p
        function.argtypes = (ctypes.c_char_p, ctypes.c_int)
        free.argtypes = (ctypes.c_void_p,)
        free.restype = None
        return function, free
    return None


_DMGL_PARAMS_ANSI = 0x3      # libiberty demangle.h: DMGL_PARAMS | DMGL_ANSI; no hash


@functools.lru_cache(maxsize=1 << 16)
def rust_demangle(symbol: str) -> str | None:
    """`main::process`, `<() as std::process::Termination>::report`,
    `std::rt::lang_start::{closure#0}` (v0); None when libiberty is
    missing or rejects the name."""
    functions = _rust_demangler()
    if functions is None:
        return None
    import ctypes  # noqa: PLC0415
    function, free = functions
    result = function(symbol.encode(), _DMGL_PARAMS_ANSI)
    if not result:
        return None
    try:
        return ctypes.string_at(result).decode("utf-8", "replace")
    finally:
        free(result)
