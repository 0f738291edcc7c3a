"""Live: thread-local variables (`__thread`, `_Thread_local`), read for the
thread that hit the probe (tests/fixtures/tls): the executable's (an int,
a struct, an array, a char buffer, a function-scope static), a library's
linked at start (static TLS area) and a dlopen()ed plugin's (the thread's
DTV; one thread never touched it, so it has no block there).

Each thread's values are made from its id; the fixture prints tid -> id
and its own &t_counter, and gdb, attached to the same process after the
trace, prints every thread's values (`thread apply all`): the trace must
show, for each $tid, what gdb shows for that LWP. gdb's own words for the
thread without a plugin block: "The inferior has not yet allocated
storage for thread-local variables in the shared library ...".
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import FIXTURES, gs_cgen, gs_cgen_popen
from tests.live.test_threads_pidns_live import finish, wait_until_attached

TLS = FIXTURES / "tls"
THREADS, LAZY_THREAD = 4, 3
NOT_ALLOCATED = "<error: TLS block not allocated for this thread>"
SCRIPT = """
trace tls_tick {
    print "tid={} id={} round={} ticks={} counter={} at={:p}", $tid, id, round, ticks, t_counter,
          &t_counter;
    print t_point;
    print t_history;
    print t_name;
    print "lib {} {}", lib_tls_id, lib_tls_tag;
    print plugin_tls_value;
    if t_counter == 1000 * (id + 1) {
        print "own counter";
    }
}
"""
LINES_PER_EVENT = 7


@pytest.fixture(scope="module")
def tls_app(build_dir) -> dict[str, Path]:
    folder = build_dir / "tls"
    files = {"lib": folder / "libtlsdemo.so", "plugin": folder / "libtlsplugin.so",
             "app": folder / "app"}
    if not files["app"].exists():
        folder.mkdir(exist_ok=True)
        subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(files["lib"]),
                        str(TLS / "libtlsdemo.c")], check=True)
        subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(files["plugin"]),
                        str(TLS / "plugin.c")], check=True)
        subprocess.run(["gcc", "-g", "-O0", "-fPIE", "-pie", "-pthread", f"-I{TLS}", "-o",
                        str(files["app"]), str(TLS / "app.c"), f"-L{folder}", "-ltlsdemo",
                        f"-Wl,-rpath,{folder}", "-ldl"], check=True)
    return files


@pytest.fixture
def running_app(tls_app):
    """The app held before its threads tick: (process, {tid: (id, &t_counter)})."""
    app = subprocess.Popen([str(tls_app["app"]), str(tls_app["plugin"])],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert app.stdout.readline().strip() == "ready"
        app.stdout.readline()                                   # plugin-modid
        threads = {}
        for _ in range(THREADS):
            _, thread_id, tid, _, counter, _ = app.stdout.readline().split()
            threads[int(tid)] = (int(thread_id), int(counter, 16))
        yield app, threads
    finally:
        app.kill()
        app.wait()


def expected_lines(thread_id: int, tid: int, round_: int, counter_address: int) -> list[str]:
    plugin = NOT_ALLOCATED if thread_id == LAZY_THREAD else str(7000 + thread_id)
    history = ", ".join(str(10 * thread_id + i) for i in range(4))
    return [f"tid={tid} id={thread_id} round={round_} ticks={round_} "
            f"counter={1000 * (thread_id + 1)} at=0x{counter_address:x}",
            f"t_point = point {{ x: {thread_id}, y: {-2 * thread_id} }}",
            f"t_history = [{history}]",
            f't_name = "worker-{thread_id}"',
            f'lib {500 + thread_id} "lib-{thread_id}"',
            f"plugin_tls_value = {plugin}",
            "own counter"]


def gdb_thread_values(pid: int, expressions: list[str]) -> dict[str, dict[int, str]]:
    """expression -> {LWP: what gdb prints for it in that thread}."""
    args = ["gdb", "-nx", "-batch", "-p", str(pid)]
    for expression in expressions:
        args += ["-ex", f"echo @@{expression}\\n", "-ex", f"thread apply all -c -- print {expression}"]
    text = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    values: dict[str, dict[int, str]] = {}
    current, lwp = None, None
    for line in text.splitlines():
        if line.startswith("@@"):
            current = values.setdefault(line[2:], {})
        elif (thread := re.match(r"Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)", line)):
            lwp = int(thread.group(1))
        elif current is not None and lwp is not None and lwp not in current and line.strip():
            current[lwp] = re.sub(r"^\$\d+ = ", "", line.strip())
    return values


def test_each_thread_reads_its_own_thread_locals(tls_app, running_app):
    app, threads = running_app
    tracer = gs_cgen_popen("trace", "-p", str(app.pid), "-s", SCRIPT, "--max-events", "24",
                           "--output", "plain")
    try:
        wait_until_attached(tls_app["app"], app.pid, "tls_tick", tracer)
    except BaseException:
        tracer.kill()
        tracer.wait()
        raise
    os.kill(app.pid, signal.SIGUSR1)                            # the threads start ticking
    out, err = finish(tracer)
    assert tracer.returncode == 0, err
    assert "Traceback" not in err and "unavailable" not in err, err
    lines = out.splitlines()
    assert len(lines) == 24 * LINES_PER_EVENT, out
    seen = set()
    for start in range(0, len(lines), LINES_PER_EVENT):
        event = lines[start:start + LINES_PER_EVENT]
        found = re.match(r"tid=(\d+) id=\d+ round=(\d+) ", event[0])
        assert found, event
        tid, round_ = int(found.group(1)), int(found.group(2))
        thread_id, counter_address = threads[tid]
        assert event == expected_lines(thread_id, tid, round_, counter_address)
        seen.add(thread_id)
    assert seen == set(range(THREADS))
    # gdb, in the same process, per thread: the values the trace showed for that tid.
    gdb = gdb_thread_values(app.pid, ["t_counter", "t_point.y", "t_history[3]", "t_name",
                                      "lib_tls_id", "plugin_tls_value"])
    for tid, (thread_id, _) in threads.items():
        assert gdb["t_counter"][tid] == str(1000 * (thread_id + 1))
        assert gdb["t_point.y"][tid] == str(-2 * thread_id)
        assert gdb["t_history[3]"][tid] == str(10 * thread_id + 3)
        assert re.match(rf'"worker-{thread_id}(\\000)*"', gdb["t_name"][tid])
        assert gdb["lib_tls_id"][tid] == str(500 + thread_id)
        if thread_id == LAZY_THREAD:
            assert gdb["plugin_tls_value"][tid].startswith("The inferior has not yet allocated "
                                                           "storage for thread-local variables")
        else:
            assert gdb["plugin_tls_value"][tid] == str(7000 + thread_id)


def test_a_launched_command_reads_thread_locals_from_its_first_event(tls_app):
    """`-- COMMAND`: ld.so places the TLS blocks while the command is held;
    the first events already have them (JSON, status ok)."""
    script = 'trace tls_tick { print "{} {} {}", id, t_counter, lib_tls_id; print t_name; }'
    result = gs_cgen("trace", "-s", script, "--max-events", "8", "--output", "json", "--",
                     str(tls_app["app"]), str(tls_app["plugin"]), "go")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(events) == 8, result.stdout
    for event in events:
        id_value, counter, lib_id, name = event["values"]
        thread_id = id_value["value"]
        assert [counter["status"], lib_id["status"], name["status"]] == ["ok"] * 3, event
        assert event["lines"] == [f"{thread_id} {1000 * (thread_id + 1)} {500 + thread_id}",
                                  f't_name = "worker-{thread_id}"']


def test_info_says_where_a_static_thread_local_lives(tls_app):
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-ex", "info scope tls_tick",
                          str(tls_app["app"])], capture_output=True, text=True).stdout
    offset = re.search(r"Symbol ticks is a thread-local variable at offset (0x[0-9a-f]+)", gdb)
    assert offset, gdb
    result = gs_cgen("info", "-t", str(tls_app["app"]), "function", "tls_tick")
    assert result.returncode == 0, result.stderr
    assert (f"  local     int ticks  @ thread-local, offset {offset.group(1)} in app's TLS block"
            in result.stdout.splitlines()), result.stdout
