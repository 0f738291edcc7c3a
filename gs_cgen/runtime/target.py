"""Processes and modules as /proc shows them: the executable, its mappings,
per-module load offsets, and the tracer's PID namespace."""
from __future__ import annotations

import os
from dataclasses import dataclass

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.errors import TargetError
from gs_cgen.plan.model import PidNamespace

# PROC_PID_INIT_INO (include/linux/proc_ns.h): the initial PID namespace.
_INIT_PID_NS_INO = 0xEFFFFFFC
_PAGE = 4096


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    path: str


@dataclass(frozen=True)
class ProcessTarget:
    """A process as the tracer sees it. Paths are usable from the tracer's
    mount namespace (prefixed with /proc/PID/root when the target's root
    differs, as in a container)."""

    pid: int
    exe_path: str
    mappings: tuple[Mapping, ...]
    pidns: tuple[int, int] = (0, 0)       # (dev, ino) of /proc/PID/ns/pid

    def module_paths(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.mappings:
            if m.path.startswith("/"):
                seen.setdefault(m.path, None)
        return list(seen)


@dataclass(frozen=True)
class SectionOffsets:
    """Run-time address minus link-time address, per section class."""

    text: int
    rodata: int
    data: int
    bss: int


def open_process(pid: int) -> ProcessTarget:
    """Read /proc/PID; TargetError when it does not exist or is not ours."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
        ns = os.stat(f"/proc/{pid}/ns/pid")
        root = _foreign_root(pid)
    except (FileNotFoundError, ProcessLookupError):
        raise TargetError(f"no process with PID {pid}") from None
    except PermissionError:
        raise TargetError(f"cannot read /proc/{pid} (run gs-cgen as root)") from None
    mappings = tuple(_rooted(m, root) for m in parse_maps(maps))
    exe = root + exe.removesuffix(" (deleted)")
    return ProcessTarget(pid, exe, mappings, (ns.st_dev, ns.st_ino))


def _foreign_root(pid: int) -> str:
    """'' when the target shares our root directory, else /proc/PID/root."""
    ours, theirs = os.stat("/"), os.stat(f"/proc/{pid}/root")
    if (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino):
        return ""
    return f"/proc/{pid}/root"


def _rooted(mapping: Mapping, root: str) -> Mapping:
    if root and mapping.path.startswith("/"):
        return Mapping(mapping.start, mapping.end, mapping.perms, mapping.offset,
                       root + mapping.path)
    return mapping


def parse_maps(text: str) -> list[Mapping]:
    mappings = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 5:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        path = fields[5] if len(fields) == 6 else ""
        mappings.append(Mapping(start, end, fields[1], int(fields[2], 16), path))
    return mappings


def module_offsets(target: ProcessTarget, path: str,
                   segments: tuple[LoadSegment, ...]) -> SectionOffsets | None:
    """Where the module at `path` was loaded in `target`, or None if it is
    not mapped there (yet).

    The kernel and ld.so load all PT_LOADs of one ELF with a single bias, so
    it is read off the first segment's mapping: later file pages can be
    mapped twice (RELRO splits the data segment), the first one cannot."""
    if not segments:
        return None
    real = os.path.realpath(path)
    first = min(segments, key=lambda seg: seg.vaddr)
    page_offset = first.offset & ~(_PAGE - 1)
    starts = [m.start for m in target.mappings
              if m.path in (path, real) and m.offset == page_offset]
    if not starts:
        return None
    bias = min(starts) - (first.vaddr & ~(_PAGE - 1))
    return SectionOffsets(bias, bias, bias, bias)


def pid_namespaces(target: ProcessTarget | None = None) -> PidNamespace:
    """The tracer's PID namespace, plus the target's when it is another one."""
    st = os.stat("/proc/self/ns/pid")
    target_dev = target_ino = 0
    if target is not None and target.pidns != (st.st_dev, st.st_ino):
        target_dev, target_ino = target.pidns
    return PidNamespace(use_ns_helper=st.st_ino != _INIT_PID_NS_INO, dev=st.st_dev,
                        ino=st.st_ino, target_dev=target_dev, target_ino=target_ino)


def processes_mapping(path: str) -> list[int]:
    """PIDs (in the tracer's view) that currently map `path`."""
    real = os.path.realpath(path)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/maps") as f:
                if any(line.rstrip().endswith((" " + real, " " + path)) for line in f):
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
