"""DwarfIndex.function_at finds by bisection what a scan of every
function's ranges in functions() order finds: at every range boundary of
the fixtures and of libpython CUs, and for overlapping and split ranges."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf.index import FunctionEntry, _RangeIndex
from gs_cgen.dwarf.module import open_module

from .test_libpython import libpython  # noqa: F401 — the fixture


def _scanned(functions, address: int) -> int | None:
    return next((i for i, entry in enumerate(functions)
                 if any(lo <= address < hi for lo, hi in entry.ranges)), None)


def _boundaries(functions):
    return sorted({a for entry in functions for lo, hi in entry.ranges
                   for a in (lo - 1, lo, lo + 1, hi - 1, hi)})


def _check(functions) -> None:
    index = _RangeIndex(functions)
    for address in _boundaries(functions) + [0, 2**64]:
        assert index.first_covering(address) == _scanned(functions, address), hex(address)


def test_overlapping_and_split_ranges():
    functions = (FunctionEntry("big", ((0x100, 0x400),), 1),
                 FunctionEntry("hot", ((0x150, 0x160), (0x900, 0x950)), 2),   # inside big: big wins
                 FunctionEntry("cold", ((0x500, 0x510), (0x120, 0x130)), 3),
                 FunctionEntry("empty", ((0x600, 0x600),), 4),
                 FunctionEntry("next", ((0x400, 0x480),), 5))
    _check(functions)
    assert _RangeIndex(functions).first_covering(0x155) == 0
    assert _RangeIndex(functions).first_covering(0x920) == 1


@pytest.mark.parametrize("variant", ["O0", "O2", "O2-dwarf4"])
def test_fixture_cus(binaries, variant):
    index = open_module(binaries[variant])._dwarf
    for off in index.cu_offsets():
        _check(index.functions(off))


def test_libpython_cus(libpython):  # noqa: F811
    index = libpython._dwarf
    for off in index.cu_offsets()[:20]:
        _check(index.functions(off))
