"""Return addresses of a traced process → function, source line and
module-relative address, for `bt`. Reads /proc/PID/maps (cached per PID,
re-read when an address is not covered) and each module's DWARF."""
from __future__ import annotations

import os
from dataclasses import dataclass

from gs_cgen.dwarf import open_module
from gs_cgen.errors import GsError
from gs_cgen.runtime.target import Mapping, open_process


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
        self._maps: dict[int, tuple[Mapping, ...]] = {}

    def __call__(self, pid: int, address: int, is_return_address: bool) -> Frame:
        mapping = self._mapping(pid, address)
        if mapping is None:
            return Frame(address, None, None, None, None, None)
        try:
            module = open_module(mapping.path)
            vaddr = _file_offset_to_vaddr(module, address - mapping.start + mapping.offset)
        except GsError:
            vaddr, module = None, None
        if vaddr is None:
            return Frame(address, None, None, None, os.path.basename(mapping.path), None)
        # A return address points after the call: look up the call itself.
        where = module.describe_address(vaddr - 1 if is_return_address else vaddr)
        return Frame(address, where.function, where.file, where.line,
                     os.path.basename(mapping.path), vaddr)

    def _mapping(self, pid: int, address: int) -> Mapping | None:
        for refresh in (False, True):
            if refresh or pid not in self._maps:
                try:
                    self._maps[pid] = open_process(pid).mappings
                except GsError:
                    self._maps[pid] = ()
            for m in self._maps[pid]:
                if m.start <= address < m.end and m.path.startswith("/"):
                    return m
        return None


def _file_offset_to_vaddr(module, file_offset: int) -> int | None:
    for seg in module.segments:
        if seg.offset <= file_offset < seg.offset + seg.filesz:
            return file_offset - seg.offset + seg.vaddr
    return None
