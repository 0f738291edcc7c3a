"""Live, real-world targets: threads ($tid per thread, no loss at a moderate
rate, `lost N events` on an overrun), PID namespaces (gs-cgen outside and
inside the target's namespace), two sessions on one target, and probes
removed when a trace ends by --max-events or by an output error.

threads.c (gdb: `break work` shows id=0..7, i=0..199 per thread) prints each
thread's gettid(); live_basic.c values are gdb's (a=3, b=39, g_int=-42).
"""
from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.live.conftest import REPO, compile_fixture, gs_cgen, gs_cgen_popen, our_uprobes
from tests.live.test_lifecycle_errors import INT3, probe_runtime_address, text_byte

THREADS, CALLS = 8, 200


@pytest.fixture(scope="module")
def threads_bin(build_dir):
    return compile_fixture(build_dir, "threads.c", "-g -O0 -fPIE -pie -pthread")


@pytest.fixture(scope="module")
def basic_bin(build_dir):
    return compile_fixture(build_dir, "live_basic.c")


def read_thread_ids(target) -> dict[int, int]:
    """tid -> thread id, as the program printed them after "ready"."""
    tids = {}
    for _ in range(THREADS):
        _, thread_id, tid = target.proc.stdout.readline().split()
        tids[int(tid)] = int(thread_id)
    return tids


def wait_until_attached(binary: Path, pid: int, function: str, tracer: subprocess.Popen):
    """The uprobe's int3 is in the target's code, then a little slack for the BPF side."""
    address = probe_runtime_address(binary, pid, function)
    deadline = time.monotonic() + 60
    while text_byte(pid, address) != INT3:
        assert tracer.poll() is None, tracer.stderr.read()
        assert time.monotonic() < deadline, "probe never attached"
        time.sleep(0.05)
    time.sleep(0.5)
    return address


def finish(tracer: subprocess.Popen, timeout: float = 30) -> tuple[str, str]:
    """Wait for a tracer started with Popen; on a timeout kill it and fail, saying why."""
    try:
        return tracer.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        tracer.kill()
        out, err = tracer.communicate()
        pytest.fail(f"gs-cgen did not end within {timeout} s; {len((out or '').splitlines())} "
                    f"lines out; stderr: {err}")


def wait_restored(pid: int, address: int, original: int) -> None:
    deadline = time.monotonic() + 5
    while text_byte(pid, address) == INT3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text_byte(pid, address) == original


# threads --------------------------------------------------------------------


def test_threads_have_distinct_tids_and_no_event_is_lost(threads_bin, start_target):
    target = start_target(threads_bin)
    tids = read_thread_ids(target)
    assert len(tids) == THREADS
    tracer = gs_cgen_popen("trace", "-p", str(target.pid), "-s",
                           'trace work { print "{} {} {} {}", $pid, $tid, id, i; }',
                           "--max-events", str(THREADS * CALLS), "--output", "plain")
    try:
        wait_until_attached(threads_bin, target.pid, "work", tracer)
    except BaseException:
        tracer.kill()
        tracer.wait()
        raise
    os.kill(target.pid, signal.SIGUSR1)                      # the threads start calling
    out, err = finish(tracer)
    assert tracer.returncode == 0, err
    assert "lost" not in err
    lines = out.splitlines()
    assert len(lines) == THREADS * CALLS
    calls = collections.defaultdict(list)
    for text in lines:
        pid, tid, thread_id, i = map(int, text.split())
        assert pid == target.pid
        assert tids.get(tid) == thread_id, text               # $tid is that thread's gettid()
        calls[tid].append(i)
    assert set(calls) == set(tids)
    for tid, numbers in calls.items():
        assert sorted(numbers) == list(range(CALLS)), tid    # every call of every thread


def test_overrun_reports_lost_events(threads_bin, start_target):
    target = start_target(threads_bin, "flood")
    read_thread_ids(target)
    tracer = subprocess.Popen(
        [sys.executable, "-m", "gs_cgen.cli", "trace", "-p", str(target.pid), "-s",
         'trace flood { print "{:x.256}", buf; }', "--duration", "3", "--output", "plain"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_attached(threads_bin, target.pid, "flood", tracer)
    except BaseException:
        tracer.kill()
        tracer.wait()
        raise
    os.kill(target.pid, signal.SIGUSR1)                      # millions of calls from now on
    _, err = finish(tracer, 25)
    assert tracer.returncode == 0, err
    assert "Traceback" not in err
    periodic = [(int(n), int(t)) for n, t in re.findall(r"lost (\d+) events \((\d+) in total\)", err)]
    totals = [t for _, t in periodic]
    assert periodic and totals == sorted(totals), err          # running totals only grow
    assert all(t == sum(n for n, _ in periodic[:i + 1]) for i, t in enumerate(totals)), err
    final = re.findall(r"lost (\d+) events in total", err)
    assert len(final) == 1 and int(final[0]) >= totals[-1], err


BURST = 50_000


@pytest.mark.parametrize("event_map", ["ringbuf", "perf"])
def test_delivered_plus_lost_is_exactly_what_the_threads_called(threads_bin, event_map):
    """8 threads call burst() flat out (400k calls): far more than the reader
    renders, so events are lost; every one is either printed or counted."""
    result = gs_cgen("trace", "-s", 'trace burst { print "{} {}", id, i; }', "--output",
                     "plain", "--event-map", event_map, "--", str(threads_bin), "burst",
                     str(BURST), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "command exited with status 0" in result.stderr
    printed = [line for line in result.stdout.splitlines() if line != "done"]
    seen = set()
    for line in printed:
        thread_id, i = map(int, line.split())
        assert 0 <= thread_id < THREADS and 0 <= i < BURST, line
        seen.add((thread_id, i))
    assert len(seen) == len(printed)                           # no event twice
    final = re.findall(r"lost (\d+) events in total", result.stderr)
    lost = int(final[0]) if final else 0
    assert len(final) <= 1, result.stderr
    assert len(printed) + lost == THREADS * BURST, result.stderr


# PID namespaces -------------------------------------------------------------


@pytest.fixture
def namespaced_target(basic_bin):
    """live_basic as PID 1 of a new PID namespace: (host pid, namespace pid)."""
    unshare = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", str(basic_bin)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    host_pid = None
    try:
        assert unshare.stdout.readline().strip() == "ready"
        children = Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children").read_text().split()
        assert len(children) == 1
        host_pid = int(children[0])
        status = Path(f"/proc/{host_pid}/status").read_text()
        ns_pids = re.search(r"^NSpid:\s+(.*)$", status, re.M).group(1).split()
        assert int(ns_pids[0]) == host_pid and len(ns_pids) == 2
        yield host_pid, int(ns_pids[-1])
    finally:
        if host_pid is not None:
            try:
                os.kill(host_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if unshare.poll() is None:
            unshare.kill()
        unshare.wait()


NS_SCRIPT = ('trace add { print "{} {} {} {} {} {}", $pid, $tid, $host_pid, $input_pid, '
             'a, g_int; }')


def test_pid_namespace_target_traced_from_the_host(namespaced_target):
    host_pid, ns_pid = namespaced_target
    result = gs_cgen("trace", "-p", str(host_pid), "-s", NS_SCRIPT, "--max-events", "2",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{ns_pid} {ns_pid} {host_pid} {host_pid} 3 -42"] * 2


def test_pid_namespace_target_traced_from_inside(namespaced_target):
    host_pid, ns_pid = namespaced_target
    result = subprocess.run(
        ["nsenter", "--target", str(host_pid), "--pid", "--mount", "--",
         sys.executable, "-m", "gs_cgen.cli", "trace", "-p", str(ns_pid), "-s", NS_SCRIPT,
         "--max-events", "2", "--output", "plain"],
        capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{ns_pid} {ns_pid} {host_pid} {ns_pid} 3 -42"] * 2


# sessions and exit paths ----------------------------------------------------


def test_two_sessions_on_one_target(basic_bin, start_target):
    target = start_target(basic_bin)
    address = probe_runtime_address(basic_bin, target.pid, "add")
    original = text_byte(target.pid, address)
    first = gs_cgen_popen("trace", "-p", str(target.pid), "-s", 'trace add { print "one {}", a; }',
                          "--max-events", "100000", "--output", "plain")
    try:
        assert first.stdout.readline() == "one 3\n"
        second = gs_cgen("trace", "-p", str(target.pid), "-s",
                         'trace add { print "two {} {}", b, g_int; }', "--max-events", "5",
                         "--output", "plain")
        assert second.returncode == 0, second.stderr
        assert second.stdout.splitlines() == ["two 39 -42"] * 5
        assert text_byte(target.pid, address) == INT3        # the first one is still there
        after = [first.stdout.readline() for _ in range(5)]  # and still gets its events
        assert after == ["one 3\n"] * 5
    finally:
        first.send_signal(signal.SIGINT)
        status = first.wait(timeout=20)
    assert status == 0
    rest = first.stdout.read()
    assert set(rest.splitlines()) <= {"one 3"}               # nothing of the other session
    assert "Traceback" not in first.stderr.read()
    wait_restored(target.pid, address, original)
    assert our_uprobes() == []


def test_max_events_end_removes_the_probe(basic_bin, start_target):
    target = start_target(basic_bin)
    address = probe_runtime_address(basic_bin, target.pid, "add")
    original = text_byte(target.pid, address)
    result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace add { print a; }",
                     "--max-events", "1", "--output", "plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "a = 3\n"
    wait_restored(target.pid, address, original)
    assert our_uprobes() == []
    assert target.proc.poll() is None


def test_output_error_after_attach_removes_the_probe(basic_bin, start_target):
    target = start_target(basic_bin)
    address = probe_runtime_address(basic_bin, target.pid, "add")
    original = text_byte(target.pid, address)
    tracer = gs_cgen_popen("trace", "-p", str(target.pid), "-s", "trace add { print a; }",
                           "--output", "plain")
    assert tracer.stdout.readline() == "a = 3\n"
    assert text_byte(target.pid, address) == INT3
    tracer.stdout.close()                # like `gs-cgen ... | head -1`: the next write fails
    tracer.stdout = None
    _, err = finish(tracer, 20)
    assert "Traceback" not in err
    wait_restored(target.pid, address, original)
    assert our_uprobes() == []
    assert target.proc.poll() is None
