"""How each tracer is put on one probe site: the commands, what they print,
how they are stopped and cleaned up.

A Site is one instruction of one file, known by gdb (address, line, the
local's frame slot) and by a symbol at it (bpftrace 0.17 here takes no
FUNC+OFFSET).  Every tracer gets the same site and, for the per-hit rows,
the same work: read one local and test a condition that is never true.

Kinds of work:
  hit    read the local, test it against a value it never has, print nothing
  print  one small print per call: "tick <i>"
  json   the same print, gs-cgen's --output json
  bt     the print and a backtrace (gs-cgen only)
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time

from bench.common import (ENV, GROUP, GS, HERE, TRACEFS, VENV_PY, Context, have, note,
                          perf_probe_cleanup, read_text, stop)

NEVER = -1          # the local is never -1 in the target's loop (total = a + b >= 1)


@dataclasses.dataclass(frozen=True)
class Site:
    binary: str             # the file probed
    symbol: str             # a function symbol at the address (bpftrace, BCC)
    address: int            # virtual address in the file
    offset: int             # file offset (tracefs)
    source_line: str        # FILE:LINE (gs-cgen, perf probe)
    local: str              # the variable read
    bp_offset: int          # its slot, from %rbp (gdb: &local - $rbp)
    instruction: str        # objdump's mnemonic there
    function: bool = False  # a function site (python): parameters, not frame slots


@dataclasses.dataclass
class Handle:
    """One running tracer: its process (None for raw ftrace), its output
    files, and what undoes its setup."""
    name: str
    proc: subprocess.Popen | None
    out_path: str
    err_path: str
    teardown: list = dataclasses.field(default_factory=list)

    def end(self) -> None:
        stop(self.proc)
        for undo in reversed(self.teardown):
            undo()


class Tracer:
    name = "?"
    lost_pattern = re.compile(r"$^")
    lost_reports_add_up = False     # each report counts new losses (else: the last is the total)
    event_pattern = re.compile(r"^tick \d+$")

    def available(self) -> str | None:
        """None when this tracer can run here, else why not."""
        return None

    def start(self, ctx: Context, site: Site, pid: int, kind: str, tag: str) -> Handle:
        raise NotImplementedError

    def spawn(self, ctx: Context, cmd: list[str], tag: str, env: dict | None = None) -> Handle:
        out_path, err_path = ctx.path(f"{tag}.out"), ctx.path(f"{tag}.err")
        with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
            proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL,
                                    env=env or ENV, cwd=ctx.workdir, start_new_session=True,
                                    preexec_fn=ctx.pin("tracer"))
        return Handle(self.name, proc, out_path, err_path)

    def lost(self, handle: Handle) -> int | None:
        found = self.lost_pattern.findall(read_text(handle.err_path) + read_text(handle.out_path))
        if not found:
            return None
        return sum(map(int, found)) if self.lost_reports_add_up else int(found[-1])

    def delivered(self, handle: Handle) -> list[str]:
        """The event lines it printed (for kind print/bt)."""
        with open(handle.out_path, errors="replace") as f:
            return [line.rstrip("\n") for line in f if self.event_pattern.match(line)]


class GsCgen(Tracer):
    name = "gs-cgen"
    lost_pattern = re.compile(r"lost (\d+) events in total")

    def __init__(self, env: dict | None = None) -> None:
        self.env = env

    def available(self):
        return None if os.path.exists(GS) else f"{GS} missing (scripts/setup.sh)"

    @staticmethod
    def script(site: Site, kind: str) -> str:
        where = site.symbol if site.function else site.source_line
        if kind == "hit":
            return f"trace {where} {{ if {site.local} == {0 if site.function else NEVER} {{ print {site.local}; }} }}"
        if kind == "bt":
            return f'trace {where} {{ print "tick {{}}", {site.local}; bt; }}'
        return f'trace {where} {{ print "tick {{}}", {site.local}; }}'

    def start(self, ctx, site, pid, kind, tag):
        output = "json" if kind == "json" else "plain"
        cmd = [GS, "trace", "-p", str(pid), "-s", self.script(site, kind), "--output", output]
        return self.spawn(ctx, cmd, tag, self.env)

    def delivered(self, handle):
        if handle.name.endswith("json"):
            lines = []
            with open(handle.out_path, errors="replace") as f:
                for line in f:
                    m = re.search(r'"lines": \["(tick \d+)"\]', line)
                    if m:
                        lines.append(m.group(1))
            return lines
        return super().delivered(handle)


class GsCgenJson(GsCgen):
    name = "gs-cgen json"


class Bpftrace(Tracer):
    name = "bpftrace"
    lost_pattern = re.compile(r"Lost (\d+) events")
    lost_reports_add_up = True

    def available(self):
        return None if have("bpftrace") else "bpftrace not installed"

    @staticmethod
    def program(site: Site, kind: str) -> str:
        probe = f"uprobe:{site.binary}:{site.symbol}"
        if site.function:
            value = "arg2"          # PyDict_SetItem(op, key, value)
            return f'{probe} /{value} == 0/ {{ printf("%p\\n", arg1); }}'
        value = f'*(int32*)(reg("bp") + ({site.bp_offset}))'
        if kind == "hit":
            return f'{probe} / {value} == {NEVER} / {{ printf("%d\\n", {value}); }}'
        return f'{probe} {{ printf("tick %d\\n", {value}); }}'

    def start(self, ctx, site, pid, kind, tag):
        cmd = ["bpftrace", "-p", str(pid), "-e", self.program(site, kind)]
        return self.spawn(ctx, cmd, tag)


class BccEmpty(Tracer):
    """The floor: a BPF program that returns at once, attached by BCC."""
    name = "BCC empty program"

    def start(self, ctx, site, pid, kind, tag):
        cmd = [VENV_PY, os.path.join(HERE, "bcc_empty.py"), site.binary, site.symbol, str(pid)]
        return self.spawn(ctx, cmd, tag)


class PerfProbe(Tracer):
    """perf probe places the event from DWARF (FILE:LINE and the local's
    name), perf record consumes it; the condition is a tracefs filter."""
    name = "perf probe"

    def available(self):
        return None if have("perf") else "perf not installed"

    def place(self, site: Site, event: str, tag: str) -> None:
        spec = f"{GROUP}:{event}={site.source_line} {site.local}"
        res = subprocess.run(["perf", "probe", "-q", "-x", site.binary, "-a", spec],
                             capture_output=True, text=True, env=ENV)
        if res.returncode != 0:
            raise RuntimeError(f"perf probe -a {spec!r}: {res.stderr.strip()[-200:]}")
        placed = [line for line in read_text(os.path.join(TRACEFS, "uprobe_events")).splitlines()
                  if f"{GROUP}/{event} " in line]
        m = re.search(r":0x([0-9a-f]+)", placed[0]) if placed else None
        if not m or int(m.group(1), 16) != site.offset:
            note(f"perf probe put {site.source_line} at {placed}, not at file offset 0x{site.offset:x}")

    def start(self, ctx, site, pid, kind, tag):
        event = f"p{tag.replace('-', '_')}"
        self.place(site, event, tag)
        cmd = ["perf", "record", "-q", "-e", f"{GROUP}:{event}", "-p", str(pid),
               "-o", ctx.path(f"{tag}.data")]
        if kind == "hit":
            cmd[5:5] = ["--filter", f"{site.local} == {NEVER}"]
        else:
            cmd += ["-m", "2048"]          # 8 MB of buffer, as gs-cgen's ring
        handle = self.spawn(ctx, cmd, tag)
        handle.teardown.append(perf_probe_cleanup)
        return handle

    def delivered(self, handle):
        data = handle.out_path[:-len(".out")] + ".data"
        res = subprocess.run(["perf", "script", "-i", data, "-F", "trace"], capture_output=True,
                             text=True, env=ENV)
        return [f"tick {int(m.group(1), 0)}" for m in re.finditer(r"i=(\S+)", res.stdout)]

    def lost(self, handle):
        """perf report --stats ends with a per-event block whose
        LOST_SAMPLES line counts the samples lost (the first block counts
        records); no such line: nothing was lost."""
        data = handle.out_path[:-len(".out")] + ".data"
        res = subprocess.run(["perf", "report", "-i", data, "--stats"], capture_output=True,
                             text=True, env=ENV)
        found = re.findall(r"LOST_SAMPLES events:\s+(\d+)", res.stdout)
        return int(found[-1]) if found else 0


class RawFtrace(Tracer):
    """A tracefs uprobe_events line, written by hand, with a filter; the
    kernel's own trace buffer and no consumer process."""
    name = "raw ftrace uprobe"

    def start(self, ctx, site, pid, kind, tag):
        event = f"f{tag.replace('-', '_')}"
        fetch = f"{site.local}={site.bp_offset}(%bp):s32"
        define = f"p:{GROUP}/{event} {site.binary}:0x{site.offset:x} {fetch}"
        events = os.path.join(TRACEFS, "events", GROUP, event)
        handle = Handle(self.name, None, ctx.path(f"{tag}.out"), ctx.path(f"{tag}.err"))
        open(handle.out_path, "w").close()
        open(handle.err_path, "w").close()

        def remove() -> None:
            try:
                tracefs_write(os.path.join(events, "enable"), "0")
            except OSError:
                pass
            for _ in range(50):        # busy while the event is being disabled
                try:
                    tracefs_write(uprobe_events, f"-:{GROUP}/{event}", append=True)
                    return
                except OSError:
                    time.sleep(0.05)

        uprobe_events = os.path.join(TRACEFS, "uprobe_events")
        tracefs_write(uprobe_events, define, append=True)
        handle.teardown.append(remove)
        tracefs_write(os.path.join(events, "filter"), f"{site.local} == {NEVER}")
        tracefs_write(os.path.join(events, "enable"), "1")
        return handle


def tracefs_write(path: str, text: str, append: bool = False) -> None:
    """One write(2) to a tracefs file (Python's append mode seeks, which
    uprobe_events refuses with EINVAL)."""
    fd = os.open(path, os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC))
    try:
        os.write(fd, (text.rstrip("\n") + "\n").encode())
    finally:
        os.close(fd)


def hit_tracers() -> list[Tracer]:
    return [GsCgen(), Bpftrace(), PerfProbe(), RawFtrace(), BccEmpty()]


def event_tracers() -> list[Tracer]:
    return [GsCgen(), GsCgenJson(), Bpftrace(), PerfProbe()]


def usable(tracers: list[Tracer]) -> list[Tracer]:
    kept = []
    for tracer in tracers:
        why = tracer.available()
        if why:
            note(f"{tracer.name} skipped: {why}")
        else:
            kept.append(tracer)
    return kept
