"""Live: memory the target never touched is read as gdb reads it, by
sleepable uprobes that fault pages in (CONTRACT.md, end); the fallback says
so once; threads whose probes sleep in page faults get their own events.

tests/fixtures/paged: libpaged.so's .rodata holds 256 KiB blocks no code
reads, each with a string over two pages and a struct; the app passes
pointers into them to show() without reading them. The test checks in
/proc/PID/pagemap that those pages are not mapped in before the probe, and
takes every expected value from gdb attached to the same process at
`break show` afterwards. The library is written 4 KiB at a time, so its
page cache holds single pages and the string's two pages take two faults
(a large folio would map both at once): checked by hand, a build that
faults in only the string's first page reads it as an error.

GS_CGEN_SLEEPABLE=off turns sleepable uprobes off (the fallback test).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.conftest import FIXTURES, REPO, gs_cgen_popen
from tests.live.test_threads_pidns_live import finish, wait_until_attached
from tests.prerequisites import require

BLOCKS = 8                     # PAGED_BLOCKS in paged.h
THREADS, CALLS = 8, 100        # threads.c
SCRIPT = "trace show { print index; print text; print *record; print record.label; " \
         'print "{} {}", record.id, record.checksum; }'
NOTE = ("gs-cgen: note: sleepable uprobes unavailable ({}); pages the target has not "
        "touched read as errors")


@pytest.fixture(scope="module")
def paged_app(build_dir) -> Path:
    folder = build_dir / "paged"
    app = folder / "app"
    if not app.exists():
        folder.mkdir(exist_ok=True)
        built = folder / "libpaged.so.built"
        subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(built),
                        str(FIXTURES / "paged" / "libpaged.c")], check=True)
        _write_in_pages(built.read_bytes(), folder / "libpaged.so")
        subprocess.run(["gcc", "-g", "-O0", "-fPIE", "-pie", "-o", str(app),
                        str(FIXTURES / "paged" / "app.c"), f"-L{folder}", "-lpaged",
                        f"-Wl,-rpath,{folder}"], check=True)
    return app


def _write_in_pages(data: bytes, path: Path) -> None:
    """A new file written one page per write: single-page folios."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    try:
        for at in range(0, len(data), 4096):
            os.write(fd, data[at:at + 4096])
        os.fsync(fd)
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def threads_bin(build_dir) -> Path:
    out = build_dir / "paged_threads"
    if not out.exists():
        subprocess.run(["gcc", "-g", "-O0", "-fPIE", "-pie", "-pthread", "-o", str(out),
                        str(FIXTURES / "paged" / "threads.c")], check=True)
    return out


def read_blocks(target) -> dict[int, tuple[int, int]]:
    """block -> (text address, record address), as the app printed them."""
    blocks = {}
    for _ in range(BLOCKS):
        _, block, text, record = target.proc.stdout.readline().split()
        blocks[int(block)] = (int(text, 16), int(record, 16))
    return blocks


def resident(pid: int, address: int) -> bool:
    """Whether the page holding `address` is mapped in `pid` (pagemap bit 63)."""
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(address // 4096 * 8)
        return bool(struct.unpack("<Q", pagemap.read(8))[0] >> 63)


def assert_untouched(pid: int, blocks: dict[int, tuple[int, int]]) -> None:
    for block, (text, record) in blocks.items():
        assert (text + 8) % 4096 == 0, "the text must start 8 bytes before a page boundary"
        for address in (text, text + 8, record):
            assert not resident(pid, address), f"block {block}: 0x{address:x} already mapped in"


def trace_blocks(app: Path, target, *options: str, events: int = BLOCKS,
                 env: dict | None = None) -> tuple[str, str]:
    """Attach, let the app call show() for every block, wait for `events`."""
    tracer = subprocess.Popen(
        [sys.executable, "-m", "gs_cgen.cli", "trace", "-p", str(target.pid), "-s", SCRIPT,
         "--max-events", str(events), "--output", "plain", *options],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})})
    try:
        wait_until_attached(app, target.pid, "show", tracer)
    except BaseException:
        tracer.kill()
        tracer.wait()
        raise
    os.kill(target.pid, signal.SIGUSR1)                   # show() calls begin
    out, err = finish(tracer)
    assert tracer.returncode == 0, err
    return out, err


_GDB_RECORD = re.compile(r"\{id = (-?\d+), weight = (\d+), label = \"((?:[^\"\\]|\\.)*)\", "
                         r"checksum = (-?\d+)\}")


def gdb_expected_lines(app: Path, pid: int) -> dict[int, list[str]]:
    """Per block, the lines gs-cgen must print, from what gdb prints at
    `break show` in the same process (after the trace)."""
    commands = ["break show", "continue"]
    for block in range(BLOCKS):
        commands += [f'printf "text %d %s\\n", {block}, paged_blocks[{block}].text',
                     f"print paged_blocks[{block}].record"]
    argv = ["gdb", "-nx", "-batch", "-p", str(pid)]
    for command in commands:
        argv += ["-ex", command]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
    texts = dict(re.findall(r"^text (\d+) (.*)$", out, re.MULTILINE))
    records = _GDB_RECORD.findall(out)
    assert len(texts) == BLOCKS and len(records) == BLOCKS, out
    expected = {}
    for block, (ident, weight, label, checksum) in enumerate(records):
        label = re.sub(r"(\\000)+$", "", label)           # gdb shows char[10]'s padding
        rendered = (f'paged_record {{ id: {ident}, weight: {weight}, label: "{label}", '
                    f"checksum: {checksum} }}")
        expected[block] = [f"index = {block}", f'text = "{texts[str(block)]}"',
                           f"*record = {rendered}", f'record.label = "{label}"',
                           f"{ident} {checksum}"]
    return expected


def test_untouched_rodata_of_a_library_reads_as_gdb_reads_it(paged_app, start_target):
    require(None if shutil.which("gdb") else "gdb is not installed")
    target = start_target(paged_app)
    blocks = read_blocks(target)
    assert_untouched(target.pid, blocks)
    out, err = trace_blocks(paged_app, target)
    assert "note:" not in err, err                         # sleepable uprobes were used
    lines = out.splitlines()
    assert len(lines) == 5 * BLOCKS, out
    expected = gdb_expected_lines(paged_app, target.pid)
    for block in range(BLOCKS):
        assert lines[5 * block:5 * block + 5] == expected[block]


@pytest.mark.parametrize("fallback", ["environment", "perf"])
def test_fallback_says_so_once_and_reads_untouched_pages_as_errors(paged_app, start_target,
                                                                   fallback):
    target = start_target(paged_app)
    blocks = read_blocks(target)
    assert_untouched(target.pid, blocks)
    if fallback == "environment":
        out, err = trace_blocks(paged_app, target, events=2, env={"GS_CGEN_SLEEPABLE": "off"})
        reason = "GS_CGEN_SLEEPABLE=off"
    else:
        out, err = trace_blocks(paged_app, target, "--event-map", "perf", events=2)
        reason = "--event-map perf: sleepable programs cannot use perf event arrays"
    assert err.count("note:") == 1 and NOTE.format(reason) in err.splitlines(), err
    lines = out.splitlines()
    for block in range(2):
        text, record = blocks[block]
        assert lines[5 * block:5 * block + 4] == [
            f"index = {block}", f"text = <error: read failed at 0x{text:x}>",
            f"*record = <error: read failed at 0x{record:x}>",
            f"record.label = <error: read failed at 0x{record + 6:x}>"]


def test_kernel_loads_the_probe_program_only_as_sleepable():
    """The start-up check means something: the same program without
    BPF_F_SLEEPABLE is refused for calling a helper that may sleep."""
    from gs_cgen.runtime.sleepable import BPF_F_SLEEPABLE, kernel_refusal
    assert kernel_refusal(BPF_F_SLEEPABLE) == ""
    assert "might sleep" in kernel_refusal(0)


def test_threads_sleeping_in_page_faults_each_get_their_own_event(threads_bin, build_dir,
                                                                  start_target):
    """Every call's probe faults its thread's page in from disk and sleeps
    while other threads' probes run on that CPU: each event must still be
    the calling thread's own ($tid, its arguments, its page's text). With
    per-CPU scratch in a sleepable probe, 738 of 800 events were mixed."""
    target = start_target(threads_bin, str(build_dir / "paged_threads.data"))
    faults_before = _major_faults(target.pid)
    tracer = gs_cgen_popen("trace", "-p", str(target.pid), "-s",
                           'trace stamp { print "{} {} {} {} {}", $tid, tid, i, key, text; }',
                           "--max-events", str(THREADS * CALLS), "--output", "plain")
    try:
        wait_until_attached(threads_bin, target.pid, "stamp", tracer)
    except BaseException:
        tracer.kill()
        tracer.wait()
        raise
    os.kill(target.pid, signal.SIGUSR1)
    out, err = finish(tracer)
    assert tracer.returncode == 0, err
    assert "lost" not in err and "note:" not in err, err
    seen = set()
    for line in out.splitlines():
        probed_tid, tid, i, key, text = line.split(" ", 4)
        assert probed_tid == tid and int(key) == int(tid) * 7919 + int(i), line
        assert re.fullmatch(rf'"thread [0-7] tid {tid}"', text), line
        seen.add((int(tid), int(i)))
    assert len(seen) == THREADS * CALLS
    require(None if _major_faults(target.pid) > faults_before else
            "no major page faults: the fixture's file could not be dropped from the page "
            "cache (a tmpfs build directory?), so no probe slept")


def _major_faults(pid: int) -> int:
    # /proc/PID/stat: field 12 is majflt; the command name in field 2 has no spaces here.
    return int(Path(f"/proc/{pid}/stat").read_text().split()[11])
