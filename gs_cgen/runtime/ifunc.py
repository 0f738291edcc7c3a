"""Which implementation of a GNU IFUNC a process runs, read from the GOT
slots ld.so filled with the resolver's choice (plan.model.IfuncLookup says
which slots). The target process is asked first; then gs-cgen's own
process, when it maps the same file (device and inode, from /proc/PID/maps
or /proc/PID/map_files): the resolver decides from the CPU, so its answer
there is the target's too, unless the target runs with other
GLIBC_TUNABLES. That covers -t PATH alone and a launched command that has
not loaded its libraries yet.
"""
from __future__ import annotations

import os

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.plan.model import IfuncChoice, IfuncLookup
from gs_cgen.runtime.target import Mapping, ProcessTarget, parse_maps

_PAGE = 4096


class GotReader:
    """The plan's IfuncReader: `(IfuncLookup) -> IfuncChoice | None`."""

    def __init__(self, process: ProcessTarget | None) -> None:
        self._process = process

    def __call__(self, lookup: IfuncLookup) -> IfuncChoice | None:
        for pid, chosen_by in self._processes(lookup):
            address = read_choice(pid, lookup)
            if address is not None:
                return IfuncChoice(address, chosen_by)
        return None

    def _processes(self, lookup: IfuncLookup):
        if self._process is not None:
            yield self._process.pid, "this process"
        name = os.path.basename(lookup.module_path)
        yield os.getpid(), f"gs-cgen's own process, which maps the same {name}"


def read_choice(pid: int, lookup: IfuncLookup) -> int | None:
    """The implementation (link-time address in the defining module) that
    the first readable slot of `lookup` holds in process `pid`."""
    mappings = _file_mappings(pid)
    bias = load_bias(pid, mappings, lookup.module_path, lookup.segments)
    if bias is None:
        return None
    for slot in lookup.slots:
        same = slot.module_path == lookup.module_path
        slot_bias = bias if same else load_bias(pid, mappings, slot.module_path, slot.segments)
        value = None if slot_bias is None else _read_u64(pid, slot.vaddr + slot_bias)
        if value is None:
            continue
        address = value - bias
        if _is_code(lookup.segments, address) and \
                (slot.exact or not lookup.implementations or address in lookup.implementations):
            return address
    return None


def load_bias(pid: int, mappings: list[Mapping], path: str,
              segments: tuple[LoadSegment, ...]) -> int | None:
    """Run-time minus link-time address of the file at `path` in `pid`:
    from the mapping of its first PT_LOAD, the one whose file is `path`'s."""
    try:
        wanted = os.stat(path)
    except OSError:
        return None
    first = min(segments, key=lambda seg: seg.vaddr)
    page_offset = first.offset & ~(_PAGE - 1)
    for mapping in mappings:
        if mapping.offset == page_offset and _maps_file(pid, mapping, wanted):
            return mapping.start - (first.vaddr & ~(_PAGE - 1))
    return None


def _maps_file(pid: int, mapping: Mapping, wanted: os.stat_result) -> bool:
    """The maps line's device and inode, else (overlayfs shows the lower
    file's there) the file behind /proc/PID/map_files, which needs root."""
    if (mapping.dev, mapping.inode) == (wanted.st_dev, wanted.st_ino):
        return True
    try:
        st = os.stat(f"/proc/{pid}/map_files/{mapping.start:x}-{mapping.end:x}")
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (wanted.st_dev, wanted.st_ino)


def _file_mappings(pid: int) -> list[Mapping]:
    """The maps lines of files (an inode), or none when unreadable."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return [m for m in parse_maps(f.read()) if m.inode]
    except OSError:
        return []


def _read_u64(pid: int, address: int) -> int | None:
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, 8, address)
    except OSError:
        return None
    finally:
        os.close(fd)
    return int.from_bytes(data, "little") if len(data) == 8 else None


def _is_code(segments: tuple[LoadSegment, ...], address: int) -> bool:
    return any(seg.executable and seg.vaddr <= address < seg.vaddr + seg.filesz
               for seg in segments)
