"""Return addresses of a traced process → function, source line and
module-relative address, for `bt`. Reads /proc/PID/maps (cached per PID,
re-read when an address is not covered) and each module's DWARF, opened
through the process's own view; frames name modules as the process does."""
from __future__ import annotations

import os
from dataclasses import dataclass

from gs_cgen.dwarf import open_module
from gs_cgen.errors import GsError
from gs_cgen.plan.model import ModuleFile
from gs_cgen.plan.model import BacktraceShow
from gs_cgen.runtime.target import Mapping, ProcessTarget, module_file, open_process
from gs_cgen.unwind import StackCopy
from gs_cgen.unwind.parameters import with_parameters
from gs_cgen.unwind.backtrace import Backtrace, CachedRows, ModuleAt, build_backtrace, mapping_bias


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
        self._by_build_id: dict[str, object] = {}

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
        capture = value.capture
        inlined = capture.show in (BacktraceShow.FRAMES, BacktraceShow.FULL)
        stack = StackCopy(value.stack_base, value.stack)
        found = build_backtrace(value.registers, stack,
                                lambda address: self._module_at(pid, address),
                                capture.max_frames, include_inlined=inlined,
                                frame_die=capture.frame_die)
        return with_parameters(found, stack) if capture.show is BacktraceShow.FULL else found

    def _module_at(self, pid: int, address: int) -> ModuleAt | None:
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
        # One set of unwind rows per build-id: the same library mapped from
        # several paths (containers, symlinks) decodes its CFI once.
        module = self._by_build_id.setdefault(module.build_id, module) if module.build_id \
            else module
        return ModuleAt(CachedRows(module), os.path.basename(mapping.path), bias)

    def _file(self, target: ProcessTarget, mapping: Mapping) -> ModuleFile:
        key = (target.pid, mapping)
        if key not in self._files:
            self._files[key] = module_file(target, mapping)
        return self._files[key]

    def remember(self, pid: int) -> None:
        """Read `pid`'s maps now, while it lives: events of a process that
        has exited by the time they render are named with the maps it had."""
        try:
            self._targets[pid] = open_process(pid)
        except GsError:
            pass

    def _mapping(self, pid: int, address: int) -> tuple[ProcessTarget, Mapping] | None:
        for refresh in (False, True):
            if refresh or pid not in self._targets:
                try:
                    self._targets[pid] = open_process(pid)
                except GsError:       # gone: keep the maps it had, if any
                    self._targets.setdefault(pid, None)
            target = self._targets[pid]
            for m in target.mappings if target else ():
                if m.start <= address < m.end and m.is_file:
                    return target, m
        return None


def _file_offset_to_vaddr(module, file_offset: int) -> int | None:
    for seg in module.segments:
        if seg.offset <= file_offset < seg.offset + seg.filesz:
            return file_offset - seg.offset + seg.vaddr
    return None
