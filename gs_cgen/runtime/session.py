"""BCC load / attach / detach and map population: the only importer of bcc.

Uprobes are attached at an explicit file offset (never by symbol), as BPF
links (runtime/uprobe_links.py: Linux 6.6+, detached 100x faster) or else
through libbcc's bpf_attach_uprobe, which on kernels with the uprobe PMU
opens a perf event. Either way the kernel removes the uprobe when its fd
closes, even if we are SIGKILLed.
"""
from __future__ import annotations

import contextlib
import ctypes
import io
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gs_cgen.abi import HEADER_PATH, abi
from gs_cgen.emit.c import (SLEEPABLE_MACRO, capture_function_name, entry_function_name,
                            probe_function_name)
from gs_cgen.errors import PrivilegeError, RuntimeTraceError
from gs_cgen.plan.model import EventTransport, Plan, ProbeSite
from gs_cgen.runtime.collector import EventCounts
from gs_cgen.runtime.ringbuf import Record, RingBufferReader
from gs_cgen.runtime.sleepable import (ReadMode, choose_read_mode, load_sleepable,
                                       verifier_reason)
from gs_cgen.runtime.target import SectionOffsets
from gs_cgen.runtime.uprobe_links import (BPF_TRACE_UPROBE_MULTI, attach_link,
                                          close_concurrently, links_refusal)

# Events handed on per poll at most, so stop conditions are checked often.
POLL_BATCH = 4096
PERF_WAKEUP_EVENTS = 64
_PRELUDE_DIR = Path(__file__).resolve().parent.parent / "emit"


def require_privileges() -> None:
    if os.geteuid() != 0:
        raise PrivilegeError(
            "loading eBPF programs and attaching uprobes needs root "
            "(CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN); run gs-cgen with sudo",
            hints=("--emit-c prints the generated C without root",))


def _import_bcc():
    try:
        import bcc  # noqa: PLC0415 — deferred so --emit-c works without BCC
    except ImportError as exc:
        raise RuntimeTraceError(
            f"BCC is not importable ({exc}); install Debian's python3-bpfcc and run from "
            "a venv created with --system-site-packages (make setup does both)") from None
    return bcc


def bcc_version() -> str:
    """BCC's version (Debian's python3-bpfcc ships no package metadata)."""
    try:
        return getattr(_import_bcc(), "__version__", "unknown")
    except RuntimeTraceError:
        return "not installed"


@dataclass
class AttachedProbe:
    site: ProbeSite
    event_name: bytes | None     # a perf-event uprobe's name; None for a BPF link
    fd: int


class TraceSession:
    """One compiled program: load, attach, collect, detach."""

    def __init__(self, plan: Plan, c_text: str) -> None:
        self.plan = plan
        self.c_text = c_text
        self.bpf = None
        self.functions = {}
        self.entry_functions = {}     # a return probe's entry probe, by probe id
        self.capture_functions = {}   # ... and its capture probe, if any
        self.attached: list[AttachedProbe] = []
        self.ring: RingBufferReader | None = None
        self.pending: list[bytes] = []      # perf events copied out, not yet handled
        self.read_mode: ReadMode | None = None
        # Why uprobes are not BPF links ('' when they are); decided before
        # loading, as a link's program is loaded with its own attach type.
        self.links_refusal = ""

    # -------------------------------------------------------------- load
    def load(self) -> None:
        """Compile with clang and pass every probe through the verifier:
        as sleepable uprobes where they can be (see runtime/sleepable.py),
        else as today's. `read_mode.note` says which, for the user."""
        bcc = _import_bcc()
        self.read_mode = choose_read_mode(self.plan.transport)
        self.links_refusal = links_refusal()
        if self.read_mode.sleepable:
            try:
                self._build(bcc, sleepable=True)
                return
            except _SleepableRejected as rejected:
                self._unload()
                self.read_mode = ReadMode(False, str(rejected))
        self._build(bcc, sleepable=False)

    def _build(self, bcc, sleepable: bool) -> None:
        cflags = [f"-I{HEADER_PATH.parent}", f"-I{_PRELUDE_DIR}", "-Wno-unused-function",
                  f"-D{SLEEPABLE_MACRO}={int(sleepable)}"]
        captured = io.StringIO()
        try:
            with _stderr_to(captured, report_if_exited=True):
                self.bpf = bcc.BPF(text=self.c_text, cflags=cflags)
        except Exception as exc:  # noqa: BLE001 — BCC raises bare Exception
            raise RuntimeTraceError(f"BPF compilation failed: {exc}",
                                    hints=(captured.getvalue().strip()[-2000:],)) from None
        for probe in self.plan.probes:
            self.functions[probe.site.probe_id] = self._load_function(bcc, probe.site, sleepable)
            if probe.entry is not None:        # FUNC:return: its paired entry probe
                self.entry_functions[probe.site.probe_id] = self._load_function(
                    bcc, probe.site, sleepable, entry_function_name(probe.site.probe_id))
            if probe.entry_capture is not None:
                self.capture_functions[probe.site.probe_id] = self._load_function(
                    bcc, probe.site, sleepable, capture_function_name(probe.site.probe_id))

    def _load_function(self, bcc, site: ProbeSite, sleepable: bool, function: str = ""):
        name = (function or probe_function_name(site.probe_id)).encode()
        attach_type = -1 if self.links_refusal else BPF_TRACE_UPROBE_MULTI
        log = io.StringIO()
        try:
            with _stderr_to(log):
                if not sleepable:
                    return self.bpf.load_func(name, bcc.BPF.KPROBE, attach_type=attach_type)
                fd = load_sleepable(self.bpf.module, name, bcc.BPF.KPROBE, attach_type)
        except Exception as exc:  # noqa: BLE001
            raise RuntimeTraceError(
                f"the kernel verifier rejected the probe for '{site.pattern_text}': {exc}",
                hints=(log.getvalue().strip()[-3000:],)) from None
        if fd < 0:
            # The non-sleepable build may still pass: load() falls back to it.
            raise _SleepableRejected(
                f"the verifier rejected the sleepable probe for '{site.pattern_text}': "
                f"{_verifier_reason(log.getvalue(), ctypes.get_errno())}")
        function = bcc.BPF.Function(self.bpf, name, fd)
        self.bpf.funcs[name] = function      # closed by BPF.cleanup, like its own
        return function

    # ------------------------------------------------------------ attach
    def attach(self, pid: int | None) -> None:
        """Attach every probe; on any failure detach what was attached. A
        return probe's entry probe goes first: a call that passes the
        uretprobe then always has its entry recorded too."""
        for probe in self.plan.probes:
            if probe.entry is not None:
                self._attach_one(probe.entry.site, self.entry_functions[probe.site.probe_id],
                                 pid, "e")
            if probe.entry_capture is not None:
                self._attach_one(probe.entry_capture.site,
                                 self.capture_functions[probe.site.probe_id], pid, "c")
            self._attach_one(probe.site, self.functions[probe.site.probe_id], pid)

    def _attach_one(self, site: ProbeSite, fn, pid: int | None, suffix: str = "") -> None:
        # The kernel resolves the path to an inode; a /proc/PID/root or
        # map_files path reaches a container's file from here.
        if self.links_refusal:
            event_name = f"gs_{os.getpid()}_{site.probe_id}{suffix}".encode()
            fd, err = _attach_perf_uprobe(fn.fd, event_name, site, pid)
        else:
            event_name = None
            fd, err = attach_link(fn.fd, site.attach_path.encode(), site.file_offset, pid,
                                  site.at_return)
        if fd < 0:
            self.detach()
            opened = "" if site.attach_path == site.module_path else \
                f" (opened as {site.attach_path})"
            raise RuntimeTraceError(
                f"cannot attach uprobe for '{site.pattern_text}' at "
                f"{site.module_path}+0x{site.file_offset:x}{opened}: "
                f"{os.strerror(err) if err else 'failed'}")
        self.attached.append(AttachedProbe(site, event_name, fd))

    def detach(self) -> None:
        """Close every probe fd: the kernel drops the uprobes with them.
        Each close waits for RCU grace periods, so they are closed
        concurrently (runtime/uprobe_links.py)."""
        if not self.attached:
            return
        close_concurrently(p.fd for p in self.attached if p.event_name is None)
        perf_events = [p for p in self.attached if p.event_name is not None]
        if perf_events:
            from bcc.libbcc import lib  # noqa: PLC0415
            close_concurrently((p.fd for p in perf_events), close=lib.bpf_close_perf_event_fd)
            # Only does something when libbcc fell back to tracefs events.
            with _stderr_to(io.StringIO()):
                for probe in perf_events:
                    lib.bpf_detach_uprobe(probe.event_name)
        self.attached.clear()

    def close(self) -> None:
        self.detach()
        self._unload()

    def _unload(self) -> None:
        if self.ring is not None:
            self.ring.close()
            self.ring = None
        if self.bpf is not None:
            self.bpf.cleanup()
            self.bpf = None
        self.functions.clear()
        self.entry_functions.clear()
        self.capture_functions.clear()

    # -------------------------------------------------------------- maps
    def set_module_offsets(self, pid: int, cookie: int, offsets: SectionOffsets) -> None:
        table = self.bpf[abi().map_names["GS_MAP_OFFSETS"]]
        key = table.Key(pid=pid, pad=0, module_cookie=cookie)
        table[key] = table.Leaf(text=offsets.text & _U64, rodata=offsets.rodata & _U64,
                                data=offsets.data & _U64, bss=offsets.bss & _U64)

    def set_module_tls(self, pid: int, cookie: int, block) -> None:
        """A module's TLS block in process `pid` (runtime/tls.py TlsBlock)."""
        table = self.bpf[abi().map_names["GS_MAP_TLS"]]
        key = table.Key(pid=pid, pad=0, module_cookie=cookie)
        table[key] = table.Leaf(block_offset=block.block_offset, modid=block.modid)

    def event_counts(self) -> EventCounts:
        """The probes' sent/failed counters, summed over probes and CPUs."""
        table = self.bpf[abi().map_names["GS_MAP_COUNTS"]]
        sent = failed = 0
        for per_cpu in table.values():
            for counts in per_cpu:
                sent, failed = sent + counts.sent, failed + counts.failed
        return EventCounts(sent, failed)

    def aggregation_map(self, name: str):
        """An aggregation's map (or its dropped counters) by fd, as
        runtime/bpfmaps.py BpfMap. (`bpfcache` adds TraceSession.map(name)
        for the same; the two are to be unified.)"""
        from gs_cgen.runtime.bpfmaps import BpfMap  # noqa: PLC0415
        return BpfMap.from_fd(self.bpf[name].map_fd)

    def probe_event_counts(self) -> dict[int, tuple[int, int]]:
        """Per probe id: (sent, failed) events, summed over CPUs (--stats)."""
        table = self.bpf[abi().map_names["GS_MAP_COUNTS"]]
        totals = {}
        for index, per_cpu in table.items():
            totals[index.value] = (sum(c.sent for c in per_cpu), sum(c.failed for c in per_cpu))
        return totals

    def program_fd(self, probe_id: int) -> int:
        """The loaded BPF program of one probe (--stats reads its run time)."""
        return self.functions[probe_id].fd

    def rearm_offsets_notice(self, pid: int) -> None:
        """Let the probes report `pid`'s next offsets miss: they report a
        process once, until its entry here is deleted."""
        table = self.bpf[abi().map_names["GS_MAP_OFFSETS_WANTED"]]
        try:
            del table[table.Key(pid)]
        except KeyError:
            pass                          # no probe has missed yet

    # ------------------------------------------------------------ events
    def open_events(self) -> None:
        """Start reading events. Drops are counted by the probe itself
        (event_counts), for both transports."""
        table = self.bpf[abi().map_names["GS_MAP_EVENTS"]]
        if self.plan.transport is EventTransport.RINGBUF:
            self.ring = RingBufferReader.open(table.map_fd, table.max_entries)
            return
        # perf: BCC's reader calls back once per event; the callback only
        # copies the bytes out, and poll() hands them on in batches.
        pending = self.pending

        def copy_out(_cpu, data, size):
            pending.append(ctypes.string_at(data, size))

        # A failed perf_submit is already counted by the probe's per-CPU
        # counter; the ring's own PERF_RECORD_LOST would count it twice.
        # The kernel wakes us every PERF_WAKEUP_EVENTS events, not every
        # one (a wake-up costs the probed thread); poll() picks up the rest.
        table.open_perf_buffer(copy_out, page_cnt=abi().constants["GS_PERF_PAGES"],
                               lost_cb=lambda count: None, wakeup_events=PERF_WAKEUP_EVENTS)

    def poll(self, timeout_ms: int) -> list[Record]:
        """The events ready to read, at most POLL_BATCH, waiting up to
        `timeout_ms` when there are none. Each is (buffer, offset, size,
        end): its bytes are buffer[offset:offset + size], valid until
        `release(end)` of it or of a later one, which the caller must call
        after handling them (ring buffer records are read in place)."""
        if self.ring is not None:
            return self.ring.poll(timeout_ms, POLL_BATCH)
        if not self.pending:
            self.bpf.perf_buffer_poll(timeout_ms)
        if not self.pending:
            self.bpf.perf_buffer_consume()      # fewer than PERF_WAKEUP_EVENTS waiting
        # perf_buffer_poll reads every CPU's ring whole: the events past
        # POLL_BATCH wait in `pending` for the next poll.
        return [(raw, 0, len(raw), count)
                for count, raw in enumerate(self.pending[:POLL_BATCH], start=1)]

    def release(self, end: int) -> None:
        """Done with every event polled up to the one whose end is `end`."""
        if self.ring is not None:
            self.ring.release(end)
        else:
            del self.pending[:end]

_U64 = 0xFFFF_FFFF_FFFF_FFFF


def _attach_perf_uprobe(prog_fd: int, event_name: bytes, site: ProbeSite,
                        pid: int | None) -> tuple[int, int]:
    """libbcc's uprobe (a uprobe PMU perf event, else a tracefs event):
    (fd, 0) or (-1, errno)."""
    from bcc.libbcc import lib  # noqa: PLC0415
    # attach_type 1: BPF_PROBE_RETURN, a uretprobe (libbcc's enum bpf_probe_attach_type).
    fd = lib.bpf_attach_uprobe(prog_fd, 1 if site.at_return else 0, event_name,
                               site.attach_path.encode(),
                               site.file_offset, -1 if pid is None else pid)
    return (fd, 0) if fd >= 0 else (fd, ctypes.get_errno())


class _SleepableRejected(Exception):
    """The verifier refused a probe's sleepable build."""


def _verifier_reason(log: str, errno: int) -> str:
    return verifier_reason(log) or (os.strerror(errno) if errno else "load failed")


@contextlib.contextmanager
def _stderr_to(buffer: io.StringIO, report_if_exited: bool = False):
    """Capture C-level stderr (clang and verifier output) into `buffer`.
    With `report_if_exited`, a C-level exit() inside (_exit_reported)
    still shows the user what was captured."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            with _exit_reported(saved, tmp) if report_if_exited else contextlib.nullcontext():
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            buffer.write(tmp.read().decode(errors="replace"))


@contextlib.contextmanager
def _exit_reported(saved_stderr: int, capture):
    """clang ends the process with exit(1) on a fatal diagnostic (LLVM's
    default for an error no handler takes: "Looks like the BPF stack limit
    of 512 bytes is exceeded", report_fatal_error) from inside
    BPF(text=...), while stderr goes to `capture`: the user would see
    nothing. exit() runs the C library's exit handlers, so one is
    registered for the time of the block: it puts stderr back and prints
    what was captured as a gs-cgen error; exit() then ends the process with
    clang's status. It is registered under a handle of its own and removed
    with __cxa_finalize(handle) after the block, so it never runs once
    Python has shut down. (atexit() itself is not exported by glibc: it
    lives in libc_nonshared.a and calls __cxa_atexit.)"""
    libc = ctypes.CDLL(None)
    register = getattr(libc, "__cxa_atexit", None)
    finalize = getattr(libc, "__cxa_finalize", None)
    armed = True

    def on_exit(_arg) -> None:
        if armed:
            _report_captured(saved_stderr, capture)

    callback = _EXIT_HANDLER_TYPE(on_exit)
    handle = ctypes.create_string_buffer(1)          # this registration's own "DSO"
    registered = register is not None and finalize is not None and \
        register(callback, None, ctypes.cast(handle, ctypes.c_void_p)) == 0
    try:
        yield
    finally:
        armed = False
        if registered:
            finalize(ctypes.cast(handle, ctypes.c_void_p))    # runs it disarmed, removes it


_EXIT_HANDLER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _report_captured(saved_stderr: int, capture) -> None:
    try:
        os.dup2(saved_stderr, 2)
        capture.seek(0)
        said = capture.read().decode(errors="replace").strip()
        os.write(2, (fatal_compile_message(said) + "\n").encode())
    except Exception:  # noqa: BLE001 — nothing may escape into C's exit()
        pass


def fatal_compile_message(said: str) -> str:
    """What the user reads when clang ended the process."""
    return RuntimeTraceError(
        "BPF compilation failed: clang stopped gs-cgen with a fatal error in the "
        "generated C (no probe was attached)",
        hints=(said[-2000:] or "clang printed nothing",)).render()
