"""Probing a function that was only ever inlined (-O2): every inlined copy
fires, with its own constant argument (gdb: `break scale` → 2 locations)."""
from __future__ import annotations

import json
import os

from tests.gdb_oracle import gdb_locations
from tests.live.conftest import compile_fixture, gs_cgen, require


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


LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


# gdb knows glibc's __mmap64 by its DW_AT_linkage_name: `break __mmap64` has
# one location (the ELF symbol's), `break __GI___mmap64` two.
MMAP64 = "__GI___mmap64"


def test_each_site_of_a_function_inlined_into_itself(build_dir, start_target):
    """glibc's __GI___mmap64 has two sites, as gdb's breakpoint: its entry,
    and the copy of itself inlined into it where INLINE_SYSCALL's
    __arg1..__arg6 live (issue #7.7: the script used to be refused with `no
    variable '__arg6'`). Each call hits both: the values print at the
    second; at the first gdb lists __arg6 optimized out (the function
    inherits it from the abstract block) and so do we. `trace __mmap64`
    is gdb's `break __mmap64`: the entry alone."""
    from gs_cgen.dwarf import open_module
    if not os.path.exists(LIBC) or len(open_module(LIBC).find_functions(MMAP64)) != 2:
        require(f"needs libc6-dbg with two {MMAP64} sites")
    binary = compile_fixture(build_dir, "mmap_loop.c", "-g -O0")
    target = start_target(binary)
    script = f'trace {MMAP64} {{ print "len={{}} __arg2={{}} __arg6={{}}", len, __arg2, __arg6; }}'
    # Probes attach one after the other: the first calls may hit the
    # entry site alone, so the lines are checked one by one, not as pairs.
    result = gs_cgen("trace", "-t", LIBC, "-p", str(target.pid), "-s", script,
                     "--max-events", "16", "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    read, absent = set(), set()
    for line in lines:
        n = int(line.split()[0].removeprefix("len="))
        assert n in {4096, 8192, 12288, 16384}, line
        if line == f"len={n} __arg2={n} __arg6=0":
            read.add(n)
        else:
            assert line == f"len={n} __arg2=<OPTIMIZED_OUT> __arg6=<OPTIMIZED_OUT>", line
            absent.add(n)
    assert len(read) >= 2 and absent, result.stdout

    result = gs_cgen("trace", "-t", LIBC, "-p", str(target.pid), "-s",
                     f"trace {MMAP64} {{ print __arg6; }}", "--max-events", "16",
                     "--output", "json")
    assert result.returncode == 0, result.stderr
    values = [json.loads(line)["values"][0] for line in result.stdout.splitlines()]
    assert {"expr": "__arg6", "type": "long int", "value": None, "status": "optimized_out",
            "error": "<OPTIMIZED_OUT>", "reason": "optimized out"} in values
    assert {"expr": "__arg6", "type": "long int", "value": 0, "status": "ok"} in values

    result = gs_cgen("trace", "--dry-run", "-t", LIBC, "-p", str(target.pid), "-s",
                     "trace __mmap64 { print len; }")
    assert result.returncode == 0, result.stderr
    probes = [line for line in result.stdout.splitlines() if line.startswith("probe ")]
    (gdb_address,) = gdb_locations(LIBC, ["__mmap64"])["__mmap64"]
    assert len(probes) == 1 and f" 0x{gdb_address:x}, file offset" in probes[0], result.stdout
