"""BCC load / attach / detach and map population: the only importer of bcc.

A program compiled before with the same inputs is loaded from the
compiled-program cache (runtime/progcache.py, progload.py) without BCC;
maps are read and written by fd either way (runtime/bpfmaps.py), with the
ABI's byte layouts.

Uprobes are attached at an explicit file offset (never by symbol), as BPF
links (runtime/uprobe_links.py: Linux 6.6+, detached 100x faster) or else
through libbcc's bpf_attach_uprobe, which on kernels with the uprobe PMU
opens a perf event. Either way the kernel removes the uprobe when its fd
closes, even if we are SIGKILLed.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import io
import os
import re
import struct
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from gs_cgen.abi import HEADER_PATH, abi
from gs_cgen.emit.c import (SLEEPABLE_MACRO, capture_function_name, entry_function_name,
                            probe_function_name)
from gs_cgen.errors import PrivilegeError, RuntimeTraceError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import EventTransport, Plan, ProbeSite
from gs_cgen.runtime import progcache
from gs_cgen.runtime.bpfmaps import BpfMap
from gs_cgen.runtime.collector import EventCounts
from gs_cgen.runtime.ringbuf import Record, RingBufferReader
from gs_cgen.runtime.sleepable import (BPF_F_SLEEPABLE, BPF_PROG_TYPE_KPROBE, ReadMode,
                                       choose_read_mode, kernel_support, load_sleepable,
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


@dataclass(frozen=True)
class LoadedFunction:
    """A program loaded from the cache (BCC's BPF.Function on the compile path)."""

    fd: int


@dataclass
class AttachedProbe:
    sites: tuple[ProbeSite, ...]   # several: one BPF link with a uprobe at each
    event_name: bytes | None       # a perf-event uprobe's name; None for a BPF link
    fd: int


def _link_batches(order) -> tuple[list[list[ProbeSite]], list]:
    """Of the attachments in `order` (site, function, suffix): the sites
    that may share a link, as lists with one program and path each; and
    the rest, in order. A site whose address another attachment has too
    stays alone, so that the handlers there run in attach order, as do a
    return probe's (its entry record first)."""
    at_address = Counter((site.attach_path, site.file_offset) for site, _, _ in order)
    batches: dict[tuple[int, str], list[ProbeSite]] = {}
    alone = []
    for site, fn, suffix in order:
        if suffix or site.at_return or at_address[(site.attach_path, site.file_offset)] > 1:
            alone.append((site, fn, suffix))
        else:
            batches.setdefault((fn.fd, site.attach_path), []).append(site)
    return list(batches.values()), alone


class TraceSession:
    """One compiled program: load, attach, collect, detach."""

    def __init__(self, plan: Plan, c_text: str,
                 program_of: Mapping[int, str] | None = None, statements=()) -> None:
        self.plan = plan
        self.c_text = c_text
        # emit/probe.py StatementLines: which script statement produced
        # which lines of c_text (a clang error names its statement)
        self.statements = statements
        # probe id -> the C function it runs (emit/program.py: sites with
        # the same code may share one, told apart by their attach cookie)
        self.program_of = program_of or {p.site.probe_id: probe_function_name(p.site.probe_id)
                                         for p in plan.probes}
        self.bpf = None
        self.functions = {}
        self.maps: dict[str, BpfMap] = {}   # by C name, whichever way the program was loaded
        self.cached = None                  # progload.LoadedProgram on a cache hit
        self.loaded_from = ""               # "cache" or "compiler", once loaded
        self.stored = False                 # the compiled program went into the cache
        self._loaded_as: dict[str, progcache.LoadedAs] = {}   # compile path, for the cache
        self.entry_functions = {}     # a return probe's entry probe, by probe id
        self.capture_functions = {}   # ... and its capture probe, if any
        self.attached: list[AttachedProbe] = []
        self.ring: RingBufferReader | None = None
        self.pending: list[bytes] = []      # perf events copied out, not yet handled
        self.events_open = False
        self.read_mode: ReadMode | None = None
        # Why uprobes are not BPF links ('' when they are); decided before
        # loading, as a link's program is loaded with its own attach type.
        self.links_refusal = ""

    # -------------------------------------------------------------- load
    def load(self, watch_exec: bool = True) -> None:
        """Compile with clang and pass every probe through the verifier:
        as sleepable uprobes where they can be (see runtime/sleepable.py),
        else as today's. `read_mode.note` says which, for the user.
        From the compiled-program cache when it has this program.
        `watch_exec=False` (--dry-run) leaves a cached program's exec
        tracepoint unattached: nothing would watch it, and detaching a
        tracepoint waits for RCU grace periods (~70 ms here). BCC attaches
        it by itself on compiling."""
        self.links_refusal = links_refusal()
        if self.links_refusal and self.plan.shared_programs:
            # A shared program (emit/program.py) knows its site by its link's
            # cookie; a perf-event uprobe has none to give.
            raise RuntimeTraceError(f"uprobes cannot be BPF links here ({self.links_refusal}), "
                                    "and the program was built for them")
        if self._load_cached(watch_exec):
            self.loaded_from = "cache"
            return
        bcc = _import_bcc()
        self.read_mode = choose_read_mode(self.plan.transport)
        kernel_sleepable = self.read_mode.sleepable or \
            (self.plan.transport is EventTransport.RINGBUF and kernel_support().sleepable)
        self.loaded_from = "compiler"
        if self.read_mode.sleepable:
            try:
                self._build(bcc, sleepable=True)
                self._remember(bcc, sleepable=True)
                return
            except _SleepableRejected as rejected:
                self._unload()
                self.read_mode = ReadMode(False, str(rejected))
        self._build(bcc, sleepable=False)
        self._remember(bcc, sleepable=False)
        if kernel_sleepable:
            # The next run need not compile to learn this again.
            self._store(True, progcache.CachedProgram(refused=self.read_mode.reason))

    def _cflags(self, sleepable: bool) -> list[str]:
        return [f"-I{HEADER_PATH.parent}", f"-I{_PRELUDE_DIR}", "-Wno-unused-function",
                f"-D{SLEEPABLE_MACRO}={int(sleepable)}"]

    def _build(self, bcc, sleepable: bool) -> None:
        cflags = self._cflags(sleepable)
        captured = io.StringIO()
        try:
            with _stderr_to(captured, report_if_exited=True, sites=self._sites_by_function()):
                self.bpf = bcc.BPF(text=self.c_text, cflags=cflags)
        except Exception as exc:  # noqa: BLE001 — BCC raises bare Exception
            raise compile_refusal(captured.getvalue(), str(exc), self.statements) from None
        by_name = {}
        for probe in self.plan.probes:
            name = self.program_of[probe.site.probe_id]
            if name not in by_name:
                by_name[name] = self._load_function(bcc, probe.site, sleepable, name)
            self.functions[probe.site.probe_id] = by_name[name]
            if probe.entry is not None:        # FUNC:return: its paired entry probe
                self.entry_functions[probe.site.probe_id] = self._load_function(
                    bcc, probe.site, sleepable, entry_function_name(probe.site.probe_id))
            if probe.entry_capture is not None:
                self.capture_functions[probe.site.probe_id] = self._load_function(
                    bcc, probe.site, sleepable, capture_function_name(probe.site.probe_id))
        self.maps = {name: BpfMap.from_fd(fd, name)
                     for name, fd in progcache.bcc_tables(bcc.libbcc.lib,
                                                          self.bpf.module).items()}

    def _sites_by_function(self) -> dict[str, ProbeSite]:
        """The probe site each BPF function of the program is for."""
        sites = {}
        for probe in self.plan.probes:
            probe_id = probe.site.probe_id
            for name in (self.program_of[probe_id], entry_function_name(probe_id),
                         capture_function_name(probe_id)):
                sites.setdefault(name, probe.site)
        return sites

    # ------------------------------------------------- compiled-program cache
    def _cache_key(self, sleepable: bool) -> str:
        return progcache.cache_key(progcache.KeyInputs(
            c_text=self.c_text, cflags=tuple(self._cflags(sleepable)), sleepable=sleepable,
            links=not self.links_refusal, bcc_version=progcache.bcc_version_without_import(),
            kernel=progcache.kernel_identity(), gs_version=_loader_digest(),
            headers_digest=progcache.headers_digest((HEADER_PATH.parent, _PRELUDE_DIR))))

    def _load_cached(self, watch_exec: bool) -> bool:
        """Load the program from the cache: True on a hit the verifier
        accepted; False (nothing left loaded) means compile."""
        if self.plan.transport is not EventTransport.RINGBUF or not progcache.enabled():
            return False        # the perf transport needs BCC's perf reader
        from gs_cgen.runtime.progload import CachedLoadFailed, load_cached  # noqa: PLC0415
        read_mode = kernel_support()
        for sleepable in ((True, False) if read_mode.sleepable else (False,)):
            entry = progcache.read_cached(self._cache_key(sleepable))
            if entry is None:
                return False
            if entry.refused:
                read_mode = ReadMode(False, entry.refused)
                continue
            try:
                loaded = load_cached(entry)
            except CachedLoadFailed:
                return False    # e.g. a kernel rebuilt under the same release: compile
            try:
                if watch_exec:
                    loaded.attach_tracepoints()
            except CachedLoadFailed:
                loaded.close()
                return False
            self._use_cached(loaded, read_mode)
            return True
        return False

    def _use_cached(self, loaded, read_mode: ReadMode) -> None:
        self.cached, self.maps, self.read_mode = loaded, loaded.maps, read_mode
        for probe in self.plan.probes:
            probe_id = probe.site.probe_id
            self.functions[probe_id] = LoadedFunction(loaded.programs[self.program_of[probe_id]])
            if probe.entry is not None:
                self.entry_functions[probe_id] = LoadedFunction(
                    loaded.programs[entry_function_name(probe_id)])
            if probe.entry_capture is not None:
                self.capture_functions[probe_id] = LoadedFunction(
                    loaded.programs[capture_function_name(probe_id)])

    def _remember(self, bcc, sleepable: bool) -> None:
        """Store what was just compiled and verified, for the next run."""
        if self.plan.transport is not EventTransport.RINGBUF or not progcache.enabled():
            return
        loaded = dict(self._loaded_as)
        for name in self.bpf.funcs:
            name = name.decode() if isinstance(name, bytes) else name
            if name.startswith("tracepoint__"):        # attached by BCC on compiling
                loaded[name] = progcache.LoadedAs(BPF_PROG_TYPE_TRACEPOINT, 0, -1)
            elif name not in loaded:
                return                                 # loaded some way we cannot repeat
        try:
            tables = {name: bpf_map.fd for name, bpf_map in self.maps.items()}
            program = progcache.record_bcc_module(bcc.libbcc.lib, self.bpf.module, tables,
                                                  loaded)
        except progcache.Uncacheable:
            return
        self._store(sleepable, program)

    def _store(self, sleepable: bool, program) -> None:
        if self.plan.transport is EventTransport.RINGBUF and progcache.enabled():
            progcache.write_cached(self._cache_key(sleepable), program)
            self.stored = self.stored or not program.refused

    @property
    def load_note(self) -> str:
        """How the program was loaded, for --dry-run."""
        if self.loaded_from == "cache":
            return "BPF program loaded from the compiled-program cache (not compiled)"
        stored = ", stored in the compiled-program cache" if self.stored else ""
        return f"BPF program compiled by BCC{stored}"

    def _load_function(self, bcc, site: ProbeSite, sleepable: bool, function: str = ""):
        name = (function or probe_function_name(site.probe_id)).encode()
        attach_type = -1 if self.links_refusal else BPF_TRACE_UPROBE_MULTI
        self._loaded_as[name.decode()] = progcache.LoadedAs(
            BPF_PROG_TYPE_KPROBE, BPF_F_SLEEPABLE if sleepable else 0, attach_type)
        log = io.StringIO()
        try:
            with _stderr_to(log):
                if not sleepable:
                    return self.bpf.load_func(name, bcc.BPF.KPROBE, attach_type=attach_type)
                fd = load_sleepable(self.bpf.module, name, bcc.BPF.KPROBE, attach_type)
        except Exception as exc:  # noqa: BLE001
            raise RuntimeTraceError(
                f"the kernel verifier rejected the probe for '{site.pattern_text}': {exc}",
                span=site.span, hints=refusal_hints(log.getvalue(), str(exc))) from None
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
        uretprobe then always has its entry recorded too. The kernel runs
        the handlers of one address newest first, so probes attach in
        reverse: blocks on the same function run in script order, as
        bpftrace's do. As BPF links, the sites of one program that share
        their address with no other probe go in one link (2604 copies of
        an inlined function: ~100 links, each closed in one go)."""
        order = list(self._attach_order())
        if self.links_refusal:
            for site, fn, suffix in order:
                self._attach_one(site, fn, pid, suffix)
            return
        batches, alone = _link_batches(order)
        for batch in batches:
            self._attach_batch(batch, pid)
        for site, fn, suffix in alone:
            self._attach_one(site, fn, pid, suffix)

    def _attach_order(self):
        """(site, loaded function, event name suffix), in attach order."""
        for probe in reversed(self.plan.probes):
            probe_id = probe.site.probe_id
            if probe.entry is not None:
                yield probe.entry.site, self.entry_functions[probe_id], "e"
            if probe.entry_capture is not None:
                yield probe.entry_capture.site, self.capture_functions[probe_id], "c"
            yield probe.site, self.functions[probe_id], ""

    def _attach_batch(self, sites: list[ProbeSite], pid: int | None) -> None:
        """One link for sites of one program and path; if the kernel
        refuses it, one by one, so that the error names the site."""
        fn, first = self.functions[sites[0].probe_id], sites[0]
        fd, _ = attach_link(fn.fd, first.attach_path.encode(),
                            [(site.file_offset, site.probe_id) for site in sites], pid)
        if fd >= 0:
            self.attached.append(AttachedProbe(tuple(sites), None, fd))
            return
        for site in sites:
            self._attach_one(site, fn, pid)

    def _attach_one(self, site: ProbeSite, fn, pid: int | None, suffix: str = "") -> None:
        # The kernel resolves the path to an inode; a /proc/PID/root or
        # map_files path reaches a container's file from here.
        if self.links_refusal:
            event_name = f"gs_{os.getpid()}_{site.probe_id}{suffix}".encode()
            fd, err = _attach_perf_uprobe(fn.fd, event_name, site, pid)
        else:
            event_name = None
            fd, err = attach_link(fn.fd, site.attach_path.encode(),
                                  [(site.file_offset, site.probe_id)], pid, site.at_return)
        if fd < 0:
            self.detach()
            opened = "" if site.attach_path == site.module_path else \
                f" (opened as {site.attach_path})"
            raise RuntimeTraceError(
                f"cannot attach uprobe for '{site.pattern_text}' at "
                f"{site.module_path}+0x{site.file_offset:x}{opened}: {_attach_failure(err)}")
        self.attached.append(AttachedProbe((site,), event_name, fd))

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
        if self.cached is not None:
            self.cached.close()
            self.cached = None
        self.functions.clear()
        self.events_open = False
        self.maps = {}
        self._loaded_as.clear()
        self.entry_functions.clear()
        self.capture_functions.clear()

    # -------------------------------------------------------------- maps
    def map(self, name: str) -> BpfMap:
        """The program's map `name` (its C name), by fd: bytes in, bytes out."""
        try:
            return self.maps[name]
        except KeyError:
            raise RuntimeTraceError(f"the BPF program has no map {name}") from None

    def set_module_offsets(self, pid: int, cookie: int, offsets: SectionOffsets) -> None:
        layouts = abi().structs
        key = layouts["proc_module_key"].pack(pid=pid, pad=0, module_cookie=cookie)
        value = layouts["proc_module_offsets_value"].pack(
            text=offsets.text & _U64, rodata=offsets.rodata & _U64,
            data=offsets.data & _U64, bss=offsets.bss & _U64)
        self.map(abi().map_names["GS_MAP_OFFSETS"]).update(key, value)

    def set_module_tls(self, pid: int, cookie: int, block) -> None:
        """A module's TLS block in process `pid` (runtime/tls.py TlsBlock)."""
        layouts = abi().structs
        key = layouts["proc_module_key"].pack(pid=pid, pad=0, module_cookie=cookie)
        value = layouts["proc_module_tls_value"].pack(block_offset=block.block_offset,
                                                      modid=block.modid)
        self.map(abi().map_names["GS_MAP_TLS"]).update(key, value)

    def event_counts(self) -> EventCounts:
        """The probes' sent/failed counters, summed over probes and CPUs."""
        per_probe = self.probe_event_counts().values()
        return EventCounts(sum(sent for sent, _ in per_probe),
                           sum(failed for _, failed in per_probe))

    def aggregation_map(self, name: str) -> BpfMap:
        """An aggregation's map (or its dropped counters) by fd: map(name)."""
        return self.map(name)

    def probe_event_counts(self) -> dict[int, tuple[int, int]]:
        """Per probe id: (sent, failed) events, summed over CPUs (--stats)."""
        counts = self.map(abi().map_names["GS_MAP_COUNTS"])
        layout = abi().structs["gs_event_counts"]
        totals = {}
        for index in range(counts.max_entries):
            stored = counts.lookup(_U32.pack(index))
            per_cpu = [layout.unpack_fast(slot) for slot in counts.per_cpu_values(stored or b"")]
            totals[index] = (sum(c["sent"] for c in per_cpu), sum(c["failed"] for c in per_cpu))
        return totals

    def program_fd(self, probe_id: int) -> int:
        """The loaded BPF program of one probe (--stats reads its run time)."""
        return self.functions[probe_id].fd

    def helper_program_fds(self, probe_id: int) -> list[int]:
        """A return probe's entry (and capture) programs: they run for
        every call, so --stats counts their time as the probe's."""
        return [functions[probe_id].fd for functions in (self.entry_functions,
                                                         self.capture_functions)
                if probe_id in functions]

    def rearm_offsets_notice(self, pid: int) -> None:
        """Let the probes report `pid`'s next offsets miss: they report a
        process once, until its entry here is deleted."""
        # False when no probe has missed yet.
        self.map(abi().map_names["GS_MAP_OFFSETS_WANTED"]).delete(_U32.pack(pid))

    # ------------------------------------------------------------ events
    def open_events(self) -> None:
        """Start reading events (once: later calls do nothing). Opened
        before the probes are attached, so no event finds the perf buffers
        missing. Drops are counted by the probe itself (event_counts), for
        both transports."""
        if self.events_open:
            return
        self.events_open = True
        name = abi().map_names["GS_MAP_EVENTS"]
        if self.plan.transport is EventTransport.RINGBUF:
            events = self.map(name)
            self.ring = RingBufferReader.open(events.fd, events.max_entries)
            return
        table = self.bpf[name]
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
_U32 = struct.Struct("<I")
BPF_PROG_TYPE_TRACEPOINT = 5


@functools.cache
def _loader_digest() -> str:
    """gs-cgen's side of the cache key: the code that records and reloads
    programs (a change to it may change what an entry means)."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for module in ("session.py", "progcache.py", "progload.py", "sleepable.py",
                   "uprobe_links.py"):
        digest.update((here / module).read_bytes())
    return digest.hexdigest()


_ENOTSUPP = 524          # the kernel's own errno (include/linux/errno.h), not in userspace's


def _attach_failure(err: int) -> str:
    if err == _ENOTSUPP:
        return "the kernel refuses a uprobe on the instruction there (ENOTSUPP)"
    return os.strerror(err) if err else "failed"


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


# libbcc's own line for E2BIG guesses the pre-5.2 4096-instruction limit of
# unprivileged programs; root's is the verifier's 1M processed-instruction
# budget, which a program of any length can exhaust.
_BCC_SIZE_GUESS = re.compile(r"^.*Program\s+too large \(\d+ insns\), at most \d+ insns\s*$", re.M)


def refusal_hints(log: str, reason: str) -> tuple[str, ...]:
    """What the user reads under a verifier refusal: the log's tail, without
    libbcc's guessed limit; for E2BIG, what the budget is."""
    text = _BCC_SIZE_GUESS.sub("", log).strip()
    hints = (text[-3000:],) if text else ()
    if "Argument list too long" in reason:
        hints += ("the verifier explores every path through the probe's branches and gives up "
                  "after 1,000,000 instructions processed in all; split the block into "
                  "several `trace` blocks on the same function",)
    return hints


# clang's diagnostics on the program BCC compiles as /virtual/main.c, whose
# lines are c_text's.
_CLANG_ERROR = re.compile(r"^/virtual/main\.c:(\d+):\d+: (?:fatal )?error: (.*)$", re.M)


def compile_refusal(said: str, reason: str, statements) -> RuntimeTraceError:
    """A clang refusal, naming the script statement whose generated C its
    first error is in (`statements`: emit/probe.py StatementLines,
    innermost first), the whole clang output as the hint."""
    hints = (said.strip()[-2000:],) if said.strip() else ()
    error = _CLANG_ERROR.search(said)
    if error is None:
        return RuntimeTraceError(f"BPF compilation failed: {reason}", hints=hints)
    line = int(error.group(1))
    span = next((s.span for s in statements if s.first <= line <= s.last), None)
    where = "the C generated for this statement" if span else "the generated C"
    return RuntimeTraceError(f"BPF compilation failed: clang refused {where} "
                             f"(line {line}: {error.group(2)})", span=span, hints=hints)


class _SleepableRejected(Exception):
    """The verifier refused a probe's sleepable build."""


def _verifier_reason(log: str, errno: int) -> str:
    return verifier_reason(log) or (os.strerror(errno) if errno else "load failed")


@contextlib.contextmanager
def _stderr_to(buffer: io.StringIO, report_if_exited: bool = False,
               sites: Mapping[str, ProbeSite] | None = None):
    """Capture C-level stderr (clang and verifier output) into `buffer`.
    With `report_if_exited`, a C-level exit() inside (_exit_reported)
    still shows the user what was captured, and which probe's trace block
    (`sites`: by BPF function name) the C it stopped in was for."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            with _exit_reported(saved, tmp, sites or {}) if report_if_exited \
                    else contextlib.nullcontext():
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            buffer.write(tmp.read().decode(errors="replace"))


@contextlib.contextmanager
def _exit_reported(saved_stderr: int, capture, sites: Mapping[str, ProbeSite]):
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
            _report_captured(saved_stderr, capture, sites)

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


def _report_captured(saved_stderr: int, capture, sites: Mapping[str, ProbeSite]) -> None:
    try:
        os.dup2(saved_stderr, 2)
        capture.seek(0)
        said = capture.read().decode(errors="replace").strip()
        os.write(2, (fatal_compile_message(said, sites) + "\n").encode())
    except Exception:  # noqa: BLE001 — nothing may escape into C's exit()
        pass


# LLVM's BPF backend names the function it stopped in.
_FATAL_FUNCTION = re.compile(r"in function (\w+)")


def fatal_compile_message(said: str, sites: Mapping[str, ProbeSite] | None = None) -> str:
    """What the user reads when clang ended the process: the trace block
    whose C it stopped in, when it named a probe's function (`sites`).
    The script's text is not at hand there: the block's line and column
    are in the message."""
    function = _FATAL_FUNCTION.search(said)
    site = (sites or {}).get(function.group(1)) if function else None
    where = "the generated C"
    if site is not None and site.span is not None:
        where = (f"the C generated for the trace block at line {site.span.line}, column "
                 f"{site.span.column} ('{site.pattern_text}')")
    return RuntimeTraceError(
        f"BPF compilation failed: clang stopped gs-cgen with a fatal error in {where} "
        "(no probe was attached)",
        hints=(said[-2000:] or "clang printed nothing",)).render()
