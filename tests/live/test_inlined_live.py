"""Probing a function that was only ever inlined (-O2): every inlined copy
fires, with its own constant argument (gdb: `break scale` → 2 locations)."""
from __future__ import annotations

from tests.live.conftest import compile_fixture, gs_cgen


def test_inlined_function_fires_at_every_copy(build_dir, start_target):
    binary = compile_fixture(build_dir, "inlined.c", "-g -O2 -fPIE -pie")
    target = start_target(binary)
    result = gs_cgen("trace", "-p", str(target.pid), "-s",
                     'trace scale { print "v={} k={}", v, k; }', "--max-events", "6",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    seen = {line.split()[1] for line in result.stdout.splitlines()}
    assert seen == {"k=3", "k=5"}
    for line in result.stdout.splitlines():
        v, k = (int(part.split("=")[1]) for part in line.split())
        assert (k == 3 and 0 <= v <= 8) or (k == 5 and 1 <= v <= 4), line
