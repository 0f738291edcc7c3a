"""Return addresses of a traced process → function, source line and
module-relative address, for `bt`. Reads /proc/PID/maps (cached per PID,
re-read when an address is not covered) and each module's DWARF, opened
through the process's own view; frames name modules as the process does.

Backtraces of one probe visit the same PCs event after event: each PC's
module is remembered per process (forgotten when the maps are re-read),
and each module's unwind rows and source frames per address, on disk by
build-id too (unwind/memo.py), one memo per module however many
processes or paths map it."""
from __future__ import annotations

import atexit
import os
import time

from gs_cgen.dwarf import open_module
from gs_cgen.errors import GsError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import ModuleFile
from gs_cgen.runtime.target import Mapping, ProcessTarget, module_file, open_process
from gs_cgen.unwind import StackCopy
from gs_cgen.unwind.parameters import with_parameters
from gs_cgen.unwind.backtrace import Backtrace, ModuleAt, build_backtrace, mapping_bias
from gs_cgen.unwind.memo import ModuleMemo
from gs_cgen.unwind.model import RIP


@dataclass(frozen=True)
class Frame:
    address: int
    function: str | None
    file: str | None
    line: int | None
    module: str | None
    module_address: int | None


class FrameResolver:
    """Callable `(pid, address, is_return_address) -> Frame`."""

    def __init__(self) -> None:
        self._targets: dict[int, ProcessTarget | None] = {}
        self._files: dict[tuple[int, Mapping], ModuleFile] = {}
        self._modules: dict[tuple[int, Mapping], ModuleAt | None] = {}
        self._memos: dict[object, ModuleMemo] = {}       # by build-id (else the module)
        self._by_pc: dict[int, dict[int, ModuleAt]] = {}  # pid -> PC -> its module
        self._named: dict[int, dict] = {}  # pid -> machine frame -> its shown frames
        self._gone: dict[int, float] = {}  # pid -> when /proc last had no such process
        self._read_at: dict[int, float] = {}  # pid -> when its maps were last read
        atexit.register(self.flush)

    def __call__(self, pid: int, address: int, is_return_address: bool) -> Frame:
        found = self._mapping(pid, address)
        if found is None:
            return Frame(address, None, None, None, None, None)
        target, mapping = found
        name = os.path.basename(mapping.path)
        try:
            file = self._file(target, mapping)
            module = open_module(file.open_path, file.display_path, file.root)
            vaddr = _file_offset_to_vaddr(module, address - mapping.start + mapping.offset)
        except GsError:
            vaddr, module = None, None
        if vaddr is None:
            return Frame(address, None, None, None, name, None)
        # A return address points after the call: look up the call itself.
        where = module.describe_address(vaddr - 1 if is_return_address else vaddr)
        return Frame(address, where.function, where.file, where.line, name, vaddr)

    def backtrace(self, pid: int, value) -> "Backtrace":
        """A `bt` value (render/decode.py Backtrace) unwound and named with
        the modules `pid` has mapped now (gs_cgen/unwind)."""
        self._fresh_maps(pid)
        capture = value.capture
        inlined = capture.show.inlined
        stack = StackCopy(value.stack_base, value.stack).with_returns(value.pending_returns)
        full = capture.show.parameters
        found = build_backtrace(value.registers, stack,
                                lambda address: self._module_at(pid, address) or
                                self._probe_module_at(capture, value.registers, address),
                                capture.max_frames, include_inlined=inlined,
                                frame_die=capture.frame_die,
                                named=None if full else self._named.setdefault(pid, {}))
        for memo in self._memos.values():
            memo.flush()
        return with_parameters(found, stack) if full else found

    def flush(self) -> None:
        """Store what the memos learnt (at exit; unwind/memo.py)."""
        for memo in self._memos.values():
            memo.flush(force=True)

    def _module_at(self, pid: int, address: int) -> ModuleAt | None:
        known = self._by_pc.get(pid)
        if known is not None and address in known:
            return known[address]
        found = self._mapped_module_at(pid, address)
        if found is not None:
            known = self._by_pc.setdefault(pid, {})
            if len(known) >= _MAX_PCS:
                self._forget_pcs(pid)
                known = self._by_pc.setdefault(pid, {})
            known[address] = found
        return found

    def _probe_module_at(self, capture, registers, address: int) -> ModuleAt | None:
        """The probe's own module, placed by the probe's own address (ip -
        the probe's vaddr), for a process whose maps are gone (it exited
        before its first `bt` was named) or do not cover `address`."""
        own, pc = capture.probe_module, registers.get(RIP)
        if own is None or pc is None:
            return None
        found = self._own_module(own)
        if found is None:
            return None
        bias = pc - capture.probe_address
        if not any(s.executable and s.vaddr <= address - bias < s.vaddr + s.memsz
                   for s in found.segments):
            return None
        return ModuleAt(self._memo(found), os.path.basename(own.display_path), bias)

    def _own_module(self, own: ModuleFile):
        try:
            return open_module(own.open_path, own.display_path, own.root)
        except GsError:
            return None

    def _memo(self, module) -> ModuleMemo:
        # One memo per build-id: the same library mapped from several
        # paths (containers, symlinks) decodes its CFI once.
        key = module.build_id or module
        if key not in self._memos:
            self._memos[key] = ModuleMemo(module, module.derived_cache())
        return self._memos[key]

    def _fresh_maps(self, pid: int) -> None:
        """Maps read at most _MAPS_FRESH ago, before a backtrace is named: a
        module dlopen()ed since the last read would otherwise be looked for
        only once its frame is reached, which (the first time a module's
        DWARF is opened, in a process that exits at once) can be after the
        process and its /proc are gone."""
        now = time.monotonic()
        if pid not in self._targets or now - self._read_at.get(pid, 0.0) < _MAPS_FRESH:
            return
        self._read_at[pid] = now
        fresh = _live_maps(pid)
        if fresh is None:
            return                       # gone or exiting: keep the maps it had
        old = self._targets.get(pid)
        if old is None or fresh.mappings != old.mappings:
            self._forget_pcs(pid)
        self._targets[pid] = fresh

    def _forget_pcs(self, pid: int) -> None:
        """Its maps are re-read: what was found by PC may have moved."""
        self._by_pc.pop(pid, None)
        self._named.pop(pid, None)

    def _mapped_module_at(self, pid: int, address: int) -> ModuleAt | None:
        found = self._mapping(pid, address)
        if found is None:
            return None
        target, mapping = found
        key = (pid, mapping)
        if key not in self._modules:
            self._modules[key] = self._open_module_at(target, mapping)
        return self._modules[key]

    def _open_module_at(self, target: ProcessTarget, mapping: Mapping) -> ModuleAt | None:
        try:
            file = self._file(target, mapping)
            module = open_module(file.open_path, file.display_path, file.root)
        except GsError:
            return None
        bias = mapping_bias(module, mapping.start, mapping.offset)
        if bias is None:
            return None
        return ModuleAt(self._memo(module), os.path.basename(mapping.path), bias)

    def _file(self, target: ProcessTarget, mapping: Mapping) -> ModuleFile:
        key = (target.pid, mapping)
        if key not in self._files:
            self._files[key] = module_file(target, mapping)
        return self._files[key]

    def remember(self, pid: int) -> None:
        """Read `pid`'s maps now, while it lives: events of a process that
        has exited by the time they render are named with the maps it had."""
        target = _live_maps(pid)
        if target is not None:
            self._targets[pid] = target
            self._forget_pcs(pid)

    def _mapping(self, pid: int, address: int) -> tuple[ProcessTarget, Mapping] | None:
        for refresh in (False, True):
            if refresh and time.monotonic() - self._gone.get(pid, -_RETRY_GONE) < _RETRY_GONE:
                break                 # exited just now: no /proc to re-read
            if refresh or pid not in self._targets:
                self._forget_pcs(pid)
                self._read_at[pid] = time.monotonic()
                target = _live_maps(pid)
                if target is not None:
                    self._targets[pid] = target
                else:                 # gone or exiting: keep the maps it had, if any
                    self._targets.setdefault(pid, None)
                    self._gone[pid] = time.monotonic()
            target = self._targets[pid]
            for m in target.mappings if target else ():
                if m.start <= address < m.end and m.is_file:
                    return target, m
        return None


def _live_maps(pid: int) -> ProcessTarget | None:
    """`pid` as /proc shows it now; None when it has gone, or is exiting:
    its memory is released before its root and namespaces are, and in that
    window (long under load: the exiting task may be preempted there) its
    maps read empty, which must not replace the maps it had."""
    try:
        target = open_process(pid)
    except GsError:
        return None
    return target if any(m.is_file for m in target.mappings) else None


# An exited process's events render with the maps it had; its PID is
# looked up again only after this long (a new process may reuse it).
_RETRY_GONE = 1.0
_MAX_PCS = 1 << 16      # remembered PCs per process (a bound; loops revisit a few)
_MAPS_FRESH = 0.05      # s: how old a process's maps may be when a backtrace starts


def _file_offset_to_vaddr(module, file_offset: int) -> int | None:
    for seg in module.segments:
        if seg.offset <= file_offset < seg.offset + seg.filesz:
            return file_offset - seg.offset + seg.vaddr
    return None
