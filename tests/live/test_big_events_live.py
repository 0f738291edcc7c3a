"""Events larger than the old 8 KiB limit (plan/limits.py), traced live and
compared with what gdb reads at the same breakpoint: a 300-struct array
(9,600 bytes), a 40,000-byte dump, 300 prints in one event, over the ring
buffer (sleepable probes, and the non-sleepable build whose scratch is too
small for the dump) and over perf event arrays; beyond the limit, the error
says which limit and why."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, require

SOURCE = "big_events.c"
SAMPLES, BLOB = 300, 40000
_GDB = f"""
import json
gdb.execute("set pagination off")
gdb.Breakpoint("record")
gdb.execute("run", to_string=True)
samples = gdb.parse_and_eval("g_samples")
fields = [f.name for f in samples.type.target().fields()]
blob = int(gdb.parse_and_eval("(long)&g_blob"))
print("GS-BIG " + json.dumps({{
    "samples": [{{f: str(samples[i][f]) for f in fields}} for i in range({SAMPLES})],
    "blob": bytes(gdb.selected_inferior().read_memory(blob, {BLOB})).hex()}}))
gdb.execute("kill")
"""


@pytest.fixture(scope="module")
def binary(build_dir):
    return compile_fixture(build_dir, SOURCE, "-g -O0 -fPIE -pie")


@pytest.fixture(scope="module")
def gdb_reads(binary):
    """g_samples, field by field as gdb prints them, and g_blob's bytes, at
    the first call of record()."""
    require(None if shutil.which("gdb") else "gdb is not installed")
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", "python\n" + _GDB, str(binary)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    (line,) = [row for row in out.splitlines() if row.startswith("GS-BIG ")]
    return json.loads(line.removeprefix("GS-BIG "))


def trace(binary, script: str, *options: str, env: dict | None = None) -> list[str]:
    """The trace lines of the first hit (launched: held until attached)."""
    result = gs_cgen("trace", "--max-events", "1", "--output", "plain", *options, "-s", script,
                     "--", str(binary), env=env)
    assert result.returncode == 0, result.stderr
    return [row for row in result.stdout.splitlines() if row != "ready"]


def samples_of(text: str) -> list[dict[str, str]]:
    """`sample { id: 1, kind: -3, ... }` elements, field by field."""
    return [dict(field.split(": ") for field in body.split(", "))
            for body in re.findall(r"sample \{ (.*?) \}", text)]


BUILDS = {"ringbuf": ("--event-map", "ringbuf"), "perf": ("--event-map", "perf")}


# Perf event arrays are never sleepable.
@pytest.mark.parametrize("transport, sleepable", [("ringbuf", "on"), ("ringbuf", "off"),
                                                  ("perf", "off")])
def test_struct_array_of_9600_bytes_prints_as_gdb_reads_it(binary, gdb_reads, transport,
                                                           sleepable):
    (line,) = trace(binary, "trace record { print g_samples; }", *BUILDS[transport],
                    env=_env(sleepable))
    assert line.startswith("g_samples = [sample { ") and line.endswith(" }]")
    assert "truncated" not in line
    assert samples_of(line) == gdb_reads["samples"]


@pytest.mark.parametrize("sleepable", ("on", "off"))
def test_dump_of_40000_bytes_prints_as_gdb_reads_it(binary, gdb_reads, sleepable):
    # 40 KB: more than the per-CPU scratch, so the non-sleepable build too
    # builds this event in a ring reservation.
    (line,) = trace(binary, f'trace record {{ print "{{:x.{BLOB}}}", g_blob; }}',
                    "--mem-dump-cap", str(BLOB), env=_env(sleepable))
    assert line.replace(" ", "") == gdb_reads["blob"]


def test_300_prints_in_one_event(binary, gdb_reads):
    script = "trace record { " + " ".join(f"print g_samples[{i}];" for i in range(SAMPLES)) + " }"
    lines = trace(binary, script)
    assert [row.split(" = ", 1)[0] for row in lines] == [f"g_samples[{i}]" for i in range(SAMPLES)]
    assert [samples_of(row)[0] for row in lines] == gdb_reads["samples"]


def test_beyond_the_limit_the_error_says_which_and_why(binary):
    result = gs_cgen("trace", "--dry-run", "--mem-dump-cap", "2000000", "-t", str(binary), "-s",
                     'trace record { print "{:x.2000000}", g_blob; }')
    assert result.returncode == 1
    assert ("error: the values of 'record' need 2000064 bytes per event, more than the "
            "1048576-byte limit (one event may take an eighth of the 8 MiB BPF ring buffer); "
            "the largest is 'g_blob', 2000000 bytes") in result.stderr, result.stderr
    result = gs_cgen("trace", "--dry-run", "--event-map", "perf", "--mem-dump-cap", str(BLOB),
                     "-t", str(binary), "-s", f'trace record {{ print "{{:x.{BLOB}}}", g_blob; }}')
    assert result.returncode == 1
    assert "more than the 32256-byte limit (over perf event arrays an event is built in a " \
           "per-CPU map value, which the kernel caps at 32 KiB" in result.stderr, result.stderr
    assert "hint: use --event-map ringbuf" in result.stderr


def _env(sleepable: str) -> dict:
    env = dict(os.environ)
    if sleepable == "off":
        env["GS_CGEN_SLEEPABLE"] = "off"
    return env
