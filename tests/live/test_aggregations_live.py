"""Aggregations and --stats on a real process (tests/fixtures/aggregations.c):
exact counts, sums and histograms computed from what gdb sees at each of
record()'s calls, string, enum and bool keys, a NULL key read as <error>,
a full map's dropped count, --interval, JSON; --stats hits = calls."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import Counter

import pytest

from tests.gdb_oracle import gdb_values
from tests.live.conftest import compile_fixture, gs_cgen, gs_cgen_popen

SOURCE = "aggregations.c"
RECORD_CALLS = 10


@pytest.fixture(scope="module")
def binary(build_dir):
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture(scope="module")
def gdb_calls(binary):
    """(name or None, status, size) at each record() call, as gdb prints them."""
    stops = gdb_values(str(binary), [("record", ["req->name", "req->status", "size"])],
                       RECORD_CALLS)
    calls = []
    for _spec, (name, status, size) in stops:
        quoted = re.search(r'"(.*)"', name)
        calls.append((quoted.group(1) if quoted else None, status, int(size)))
    assert len(calls) == RECORD_CALLS
    return calls


def trace(binary, script: str, *options: str, args: tuple[str, ...] = ()):
    result = gs_cgen("trace", "-s", script, *options, "--", str(binary), *args, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def bpftrace_bucket(value: int) -> str:
    """The label of bpftrace's hist() bucket that holds `value`."""
    if value < 0:
        return "(..., 0)"
    if value < 2:
        return f"[{value}]"
    low = 1 << (value.bit_length() - 1)

    def label(n):
        for power, suffix in ((30, "G"), (20, "M"), (10, "K")):
            if n >= 1 << power:
                return f"{n >> power}{suffix}"
        return str(n)
    return f"[{label(low)}, {label(low * 2)})"


def test_count_sum_hist_and_keys_equal_gdbs_calls(binary, gdb_calls):
    out = trace(binary, "trace record { count calls; sum bytes = size; hist sizes = size; "
                        "count by_name by req->name; "
                        "count by_status by req->status, size > 100; "
                        "if size > 100 { count big; } }").stdout
    assert "@calls: 10\n" in out
    assert f"@big: {len([s for _, _, s in gdb_calls if s > 100])}\n" in out
    assert f"@bytes: {sum(size for _, _, size in gdb_calls)}\n" in out
    names = Counter(name for name, _, _ in gdb_calls)
    for name, count in names.items():
        key = "<error: null pointer dereference>" if name is None else f'"{name}"'
        assert f"@by_name[{key}]: {count}\n" in out
    statuses = Counter((status, str(size > 100).lower()) for _, status, size in gdb_calls)
    for (status, big), count in statuses.items():
        assert f"@by_status[status::{status}, {big}]: {count}\n" in out
    # bpftrace's order: by value, the largest last; the <error> key after all.
    by_name = [line for line in out.splitlines() if line.startswith("@by_name")]
    assert by_name[-1].startswith("@by_name[<error")
    hist = _hist_rows(out, "@sizes: ")
    buckets = Counter(bpftrace_bucket(size) for _, _, size in gdb_calls)
    assert {label: count for label, count in hist.items() if count} == dict(buckets)
    assert list(hist)[0] == "(..., 0)" and list(hist)[-1] == "[4K, 8K)"


def _hist_rows(out: str, header: str) -> dict[str, int]:
    block = out.split(header + "\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in block.splitlines():
        match = re.fullmatch(r"(\S.*?)\s+(\d+) \|(@*)\s*\|", line)
        assert match, line
        rows[match.group(1)] = int(match.group(2))
    return rows


def test_full_map_counts_dropped_hits(binary):
    out = trace(binary, "trace spread { count seen by k; }", args=("4100",)).stdout
    entries = [line for line in out.splitlines() if line.startswith("@seen[")]
    dropped = re.search(r"@seen: (\d+) hits dropped \(more than 4096 keys\)", out)
    assert len(entries) == 4096 and all(line.endswith(": 1") for line in entries)
    assert dropped and int(dropped.group(1)) == 4100 - 4096


def test_json_has_one_object_per_aggregation(binary, gdb_calls):
    out = trace(binary, "trace record { count by_name by req->name; hist sizes = size; }",
                "--output", "json").stdout
    documents = [json.loads(line) for line in out.splitlines() if line.strip()]
    by_name, sizes = documents
    assert by_name["aggregation"] == "by_name" and by_name["kind"] == "count"
    keyed = {tuple(e["key"]): e["value"] for e in by_name["entries"] if e["key"] is not None}
    names = Counter(name for name, _, _ in gdb_calls if name is not None)
    assert keyed == {(name,): count for name, count in names.items()}
    errors = [e for e in by_name["entries"] if e["key"] is None]
    assert errors == [{"key": None, "error": "null pointer dereference", "hits": 1,
                       "value": 1}]
    assert sizes["kind"] == "hist"
    buckets = Counter(bpftrace_bucket(size) for _, _, size in gdb_calls)
    assert {b["bucket"]: b["count"] for b in sizes["entries"][0]["value"]} == dict(buckets)


def test_interval_prints_the_maps_as_they_grow(binary):
    result = trace(binary, "trace record { count calls; }", "--interval", "1", "--stats",
                   args=("10", "3"))
    counts = [int(n) for n in re.findall(r"^@calls: (\d+)$", result.stdout, re.MULTILINE)]
    # Every interval during the 3 s pause sees the first round, the exit both.
    assert counts[0] == 10 and counts[-1] == 20 and len(counts) >= 3
    assert counts == sorted(counts)
    # --stats comes with every print, its hits the calls made so far.
    hits = [int(line.split()[2]) for line in result.stderr.splitlines()
            if line.startswith("record ")]
    assert hits == counts


def test_one_name_in_two_probes_is_one_map(binary):
    out = trace(binary, "trace record { count calls; } trace spread { count calls; }",
                args=("7",)).stdout
    assert out == f"@calls: {RECORD_CALLS + 7}\n"


def test_stats_hits_equal_calls_and_events_add_up(binary, gdb_calls):
    result = trace(binary, 'trace record { if size > 100 { print "big {}", size; } } '
                           "trace spread { count spread; }", "--stats", args=("25",))
    rows = {}
    for line in result.stderr.splitlines():
        fields = line.split()
        if fields and fields[0] in ("record", "spread"):
            rows[fields[0]] = fields
    assert rows["record"][1].startswith("aggregations+0x")
    hits, average, sent, lost = (rows["record"][i] for i in (2, 3, 4, 5))
    assert int(hits) == RECORD_CALLS and int(average) > 0
    printed = [line for line in result.stdout.splitlines() if line.startswith("big ")]
    big = [size for _, _, size in gdb_calls if size > 100]
    assert int(sent) == len(printed) == len(big) and int(lost) == 0
    assert int(rows["spread"][2]) == 25 and rows["spread"][4:] == ["0", "0"]


def test_stats_of_a_return_probe_count_its_returns(binary):
    """A return probe's hits are the calls that returned; its time includes
    the entry probe that timed the call (two programs, one row)."""
    result = trace(binary, "trace spread:return { count returns; }", "--stats", args=("25",))
    (row,) = [line.split() for line in result.stderr.splitlines()
              if line.split()[:1] == ["spread:return"]]
    assert int(row[2]) == 25 and int(row[3]) > 0 and row[4:] == ["0", "0"]


def test_aggregations_only_trace_runs_until_sigint_then_prints(binary, gdb_calls):
    """-t: no process to end with, no event to count: it runs until
    stopped, and SIGINT prints the maps of every run of the program."""
    tracer = gs_cgen_popen("trace", "-t", str(binary), "-s",
                           "trace record { count calls by req->status; }")
    try:
        while "tracing" not in (line := tracer.stderr.readline()):
            assert line, "gs-cgen ended before tracing"
        for _ in range(2):
            subprocess.run([str(binary)], check=True)
        time.sleep(0.5)
        assert tracer.poll() is None          # still tracing
        tracer.send_signal(signal.SIGINT)
        out, _ = tracer.communicate(timeout=30)
    finally:
        if tracer.poll() is None:
            tracer.kill()
    assert tracer.returncode == 0
    statuses = Counter(status for _, status, _ in gdb_calls)
    expected = sorted(statuses.items(), key=lambda item: item[1])
    assert out == "".join(f"@calls[status::{status}]: {2 * count}\n" for status, count in expected)


def test_pointer_keys_are_the_pointers(binary):
    """gdb sees one `req` (the same stack object) at every call: one key,
    counting every call, rendered as a pointer value."""
    pointers = {values[0] for _, values in gdb_values(str(binary), [("record", ["req"])],
                                                      RECORD_CALLS)}
    out = trace(binary, "trace record { count by_req by req; }").stdout
    lines = out.splitlines()
    assert len(pointers) == 1 and len(lines) == 1
    assert re.fullmatch(r"@by_req\[0x[0-9a-f]+ \(struct request\*\)\]: 10", lines[0])
