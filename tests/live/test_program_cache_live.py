"""The compiled-program cache (runtime/progcache.py, progload.py), live:
the second run of a script loads the program without compiling (no libbcc
in the tracer's memory), prints exactly what the compiled run and gdb
print, and an entry that is corrupt or that the verifier refuses means
compiling again, never an error."""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gs_cgen.runtime import progcache
from tests.live.conftest import REPO, compile_fixture, gs_cgen
from tests.prerequisites import require

SOURCE = "live_basic.c"
SCRIPT = 'trace add { print "{} {} {} {}", a, b, g_int, g_long; }'
COMPILED = "BPF program compiled by BCC, stored in the compiled-program cache"
FROM_CACHE = "BPF program loaded from the compiled-program cache (not compiled)"
# r0 is never set: the verifier refuses "R0 !read_ok"
_REFUSED_PROGRAM = bytes([0x95, 0, 0, 0, 0, 0, 0, 0])


@pytest.fixture(scope="module")
def basic_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """A cache of this test's own (the test process reads it too)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for switch in ("GS_CGEN_NO_CACHE", progcache.SWITCH_VARIABLE):
        monkeypatch.delenv(switch, raising=False)
    return dict(os.environ)


def _gdb_line(pid: int) -> str:
    """gdb's values of the script's four expressions at `break add`."""
    expressions = ["a", "b", "g_int", "g_long"]
    commands = ["break add", "continue", *(f"print {e}" for e in expressions)]
    out = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid),
                          *(a for c in commands for a in ("-ex", c))],
                         capture_output=True, text=True, timeout=60).stdout
    values = re.findall(r"^\$\d+ = (\S+)", out, re.M)
    assert len(values) == len(expressions), out
    return " ".join(values)


def _dry_run(binary: Path, env: dict, *extra: str) -> str:
    result = gs_cgen("trace", "-t", str(binary), "-s", SCRIPT, "--dry-run", *extra, env=env)
    assert result.returncode == 0, result.stderr
    assert "probe 0: add" in result.stdout
    return result.stderr


def _trace(pid: int, env: dict, events: int = 2) -> tuple[list[str], bool]:
    """(the first `events` lines printed, whether libbcc was in the
    tracer's memory while it traced)."""
    tracer = subprocess.Popen([sys.executable, "-m", "gs_cgen.cli", "trace", "-p", str(pid),
                               "-s", SCRIPT, "--output", "plain"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = _read_until(tracer.stderr, "tracing 1 probe(s)")
        assert "tracing 1 probe(s)" in said, said
        libbcc = "libbcc" in Path(f"/proc/{tracer.pid}/maps").read_text()
        lines = [tracer.stdout.readline().rstrip("\n") for _ in range(events)]
    finally:
        tracer.send_signal(signal.SIGINT)
        _, rest = tracer.communicate(timeout=60)
    assert tracer.returncode == 0, rest
    assert "Traceback" not in rest and "error" not in rest, rest
    return lines, libbcc


def _read_until(stream, text: str, timeout: float = 60) -> str:
    said, deadline = "", time.monotonic() + timeout
    while text not in said and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 1)
        if ready:
            line = stream.readline()
            if not line:
                break
            said += line
    return said


def _entries(cache_home: str) -> list[Path]:
    return sorted(Path(cache_home, "gs-cgen", "programs").glob("*.marshal"))


def test_the_second_run_loads_from_the_cache_and_prints_what_gdb_prints(
        basic_bin, start_target, cache_env):
    require(None if Path("/usr/bin/gdb").exists() else "gdb is not installed")
    target = start_target(basic_bin)
    expected = _gdb_line(target.pid)
    assert expected == "3 39 -42 9000000000"
    assert COMPILED in _dry_run(basic_bin, cache_env)
    assert FROM_CACHE in _dry_run(basic_bin, cache_env)

    compiled = _trace(target.pid, dict(cache_env, GS_CGEN_PROGRAM_CACHE="off"))
    first = _trace(target.pid, cache_env)       # -p: a program of its own, compiled once
    cached = _trace(target.pid, cache_env)
    assert compiled == ([expected] * 2, True)
    assert first == ([expected] * 2, True)
    assert cached == ([expected] * 2, False)    # no libbcc: nothing compiled


def test_a_corrupt_entry_means_compiling_again(basic_bin, cache_env):
    assert COMPILED in _dry_run(basic_bin, cache_env)
    entries = _entries(cache_env["XDG_CACHE_HOME"])
    assert entries
    for entry in entries:
        entry.write_bytes(b"not a cache entry")
    assert COMPILED in _dry_run(basic_bin, cache_env)
    assert FROM_CACHE in _dry_run(basic_bin, cache_env)


def test_an_entry_the_verifier_refuses_means_compiling_again(basic_bin, start_target, cache_env):
    """As a kernel rebuilt under the same release string would: the cached
    instructions no longer pass, the program is compiled and traces."""
    target = start_target(basic_bin)
    first = _trace(target.pid, cache_env)
    stale = 0
    for entry in _entries(cache_env["XDG_CACHE_HOME"]):
        key = entry.name.removesuffix(".marshal")
        program = progcache.read_cached(key)
        if program is None or program.refused:
            continue
        refused = [p.__class__(p.name, p.prog_type, p.prog_flags, p.expected_attach_type,
                               _REFUSED_PROGRAM, ()) for p in program.programs]
        progcache.write_cached(key, program.__class__(program.maps, tuple(refused)))
        stale += 1
    assert stale
    again = _trace(target.pid, cache_env)
    assert again == (first[0], True)            # compiled again, same values
    assert _trace(target.pid, cache_env) == (first[0], False)    # and cached again


def test_the_perf_transport_always_compiles(basic_bin, cache_env):
    for _ in range(2):
        said = _dry_run(basic_bin, cache_env, "--event-map", "perf")
        assert "BPF program compiled by BCC\n" in said, said
    assert _entries(cache_env["XDG_CACHE_HOME"]) == []


AGGREGATIONS = """
trace record {
    count calls by req->name;
    sum bytes = size by req->status;
    hist sizes = size;
}
trace spread { count spread; }
"""


def test_aggregations_and_stats_from_the_cache_equal_a_compiled_run(build_dir, cache_env):
    """Aggregation maps (per-CPU hashes, some BPF_F_NO_PREALLOC) and the
    probes' run-time stats, read by fd from a cached program. Their values
    are checked against gdb in test_aggregations_live.py; here, that the
    cached program gives the same."""
    binary = compile_fixture(build_dir, "aggregations.c")

    def run(env: dict) -> tuple[list[str], list[list[str]]]:
        result = gs_cgen("trace", "-s", AGGREGATIONS, "--output", "plain", "--stats", "--",
                         str(binary), env=env)
        assert result.returncode == 0, result.stderr
        rows = [line.split() for line in result.stderr.splitlines()
                if line.startswith(("record ", "spread "))]
        # probe, where, hits, (avg ns: varies), events sent, events lost
        return sorted(result.stdout.splitlines()), [row[:3] + row[4:] for row in rows]

    compiled = run(dict(cache_env, GS_CGEN_PROGRAM_CACHE="off"))
    assert compiled[1] and all(row[2] == "10" for row in compiled[1])
    assert run(cache_env) == compiled                 # compiled and stored
    said = gs_cgen("trace", "-s", AGGREGATIONS, "--dry-run", "--", str(binary), env=cache_env)
    assert FROM_CACHE in said.stderr, said.stderr
    assert run(cache_env) == compiled                 # from the cache
