"""Processes and modules as /proc shows them: the executable, its mappings,
the files behind them, per-module load offsets, and the tracer's PID
namespace.

The kernel writes a path in /proc/PID/maps (and the /proc/PID/exe and
map_files links) relative to the *reader's* root when the file is within
reach of it (a target under `unshare --root=DIR` shows DIR/usr/bin/demo),
else relative to the root of the file's mount namespace (a pivot_root'ed
container shows /usr/bin/demo, its own view; so does a host process seen
from a container). So a maps path is tried both in the target's root and in
ours, and a file is accepted only when its device and inode are those of the
maps line, else read through /proc/PID/map_files (DESIGN.md "Module files
across namespaces"). Processes are matched to modules the same way, never
by path string."""
from __future__ import annotations

import os
import struct
from collections.abc import Callable

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.errors import TargetError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import ModuleFile, ModuleRef, PidNamespace

# PROC_PID_INIT_INO (include/linux/proc_ns.h): the initial PID namespace.
_INIT_PID_NS_INO = 0xEFFFFFFC
_PAGE = 4096
_AT_BASE = 7                         # include/uapi/linux/auxvec.h: the interpreter's base
_AT_ENTRY = 9
_DELETED = " (deleted)"              # fs/d_path.c: d_path() of an unlinked file


@dataclass(frozen=True)
class Mapping:
    """One line of /proc/PID/maps. `path` is the target's view, without the
    kernel's " (deleted)" suffix (then `deleted` is set)."""

    start: int
    end: int
    perms: str
    offset: int
    path: str
    dev: int = 0                     # os.makedev(major, minor) of the maps line
    inode: int = 0
    deleted: bool = False

    @property
    def is_file(self) -> bool:
        return self.inode != 0 and self.path.startswith("/")

    def same_file(self, dev: int, inode: int) -> bool:
        return self.is_file and (self.dev, self.inode) == (dev, inode)


@dataclass(frozen=True)
class ProcessTarget:
    """A process as the tracer sees it. `root` is a path that stands for its
    `/` ('' when that is ours: same root directory and mount namespace);
    `root_path` is its root directory as a path of ours, when within our
    reach ('/' when it is ours or out of reach)."""

    pid: int
    mappings: tuple[Mapping, ...]
    pidns: tuple[int, int] = (0, 0)       # (dev, ino) of /proc/PID/ns/pid
    root: str = ""
    entry: int | None = None              # AT_ENTRY: the executable's entry point
    root_path: str = "/"

    def own_view(self, path: str) -> str:
        """A maps path as the process itself names it: under our path of
        its root, the rest (unshare --root=DIR: DIR/usr/bin/x -> /usr/bin/x)."""
        inside = self.root_path.rstrip("/")
        if inside and path.startswith(inside + "/"):
            return path[len(inside):]
        return path

    def executable(self) -> Mapping:
        """The mapping of the program itself: the one holding its entry
        point (exact, whatever the paths say)."""
        for m in self.mappings:
            if m.is_file and self.entry is not None and m.start <= self.entry < m.end:
                return m
        raise TargetError(f"process {self.pid} maps no executable file "
                          "(a kernel thread, or a process that is exiting)")

    @property
    def exe_path(self) -> str:
        return self.executable().path

    def module_mappings(self) -> list[Mapping]:
        """One mapping per file that has executable code mapped (ELF
        modules; data files such as locale-archive have none), the first
        mapping of each file, in address order."""
        code = {(m.dev, m.inode) for m in self.mappings if m.is_file and "x" in m.perms}
        first: dict[tuple[int, int], Mapping] = {}
        for m in self.mappings:
            if (m.dev, m.inode) in code:
                first.setdefault((m.dev, m.inode), m)
        return list(first.values())


@dataclass(frozen=True)
class SectionOffsets:
    """Run-time address minus link-time address, per section class."""

    text: int
    rodata: int
    data: int
    bss: int


def _unreadable_process(pid: int) -> str:
    if os.geteuid() != 0:
        return f"cannot read /proc/{pid} (run gs-cgen as root)"
    # Root and still refused: ptrace access mode checks (a process of
    # another user namespace, Yama, an LSM) or a /proc mounted hidepid.
    return (f"cannot read /proc/{pid}, even as root: the kernel denies access to that "
            "process (another user namespace, or a security policy)")


def open_process(pid: int) -> ProcessTarget:
    """Read /proc/PID; TargetError when it does not exist or is not ours."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
        ns = os.stat(f"/proc/{pid}/ns/pid")
        root, root_path = _foreign_root(pid), os.readlink(f"/proc/{pid}/root")
    except (FileNotFoundError, ProcessLookupError):
        raise TargetError(f"no process with PID {pid}") from None
    except PermissionError:
        raise TargetError(_unreadable_process(pid)) from None
    return ProcessTarget(pid, tuple(parse_maps(maps)), (ns.st_dev, ns.st_ino), root,
                         _entry_point(pid), root_path)


def _foreign_root(pid: int) -> str:
    """'' when the target shares our root directory and mount namespace,
    else /proc/PID/root (which walks the target's mounts from its root)."""
    same_root = _identity("/") == _identity(f"/proc/{pid}/root")
    same_mounts = _identity("/proc/self/ns/mnt") == _identity(f"/proc/{pid}/ns/mnt")
    return "" if same_root and same_mounts else f"/proc/{pid}/root"


def _identity(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _entry_point(pid: int) -> int | None:
    """AT_ENTRY from /proc/PID/auxv, or None."""
    return _auxv_value(pid, _AT_ENTRY)


def interpreter_base(pid: int) -> int | None:
    """AT_BASE: where the kernel loaded the program's interpreter (ld.so),
    0 for a static executable; None when auxv cannot be read."""
    return _auxv_value(pid, _AT_BASE)


def _auxv_value(pid: int, wanted: int) -> int | None:
    # /proc/PID/auxv is pairs of native words (key, value).
    try:
        with open(f"/proc/{pid}/auxv", "rb") as f:
            data = f.read()
    except OSError:
        return None
    for key, value in struct.iter_unpack("<QQ", data[:len(data) // 16 * 16]):
        if key == wanted:
            return value
    return None


def parse_maps(text: str) -> list[Mapping]:
    """Lines of /proc/PID/maps: `start-end perms offset major:minor inode
    path` (proc(5)); the path may hold spaces."""
    mappings = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 5:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        major, minor = (int(x, 16) for x in fields[3].split(":"))
        path = fields[5] if len(fields) == 6 else ""
        deleted = path.endswith(_DELETED)
        mappings.append(Mapping(start, end, fields[1], int(fields[2], 16),
                                path.removesuffix(_DELETED), os.makedev(major, minor),
                                int(fields[4]), deleted))
    return mappings


# ---------------------------------------------------------------- module files

Identify = Callable[[str], tuple[int, int]]     # path -> (st_dev, st_ino); OSError


def module_file(target: ProcessTarget, mapping: Mapping,
                identify: Identify = _identity) -> ModuleFile:
    """The file behind `mapping`: its path in the target's root, or the
    maps path as ours, when that is the same file (device and inode); else
    /proc/PID/map_files/START-END, which is that very file (root only).
    Overlayfs may show another device or inode in maps than a stat does:
    then map_files is the truth. Named as the target names it."""
    tried: list[str] = []
    found = _by_path(target, mapping, identify, tried) or \
        _by_map_files(target, mapping, identify, tried)
    if found is None:
        raise TargetError(f"cannot open {target.own_view(mapping.path)} of process {target.pid} "
                          "through any view: " + "; ".join(tried))
    return found


def _by_path(target: ProcessTarget, mapping: Mapping, identify: Identify,
             tried: list[str]) -> ModuleFile | None:
    name = target.own_view(mapping.path)
    # (path, the root it is in): separate debug files are looked for there.
    candidates = [(target.root + name, target.root)]
    if target.root:
        candidates.append((mapping.path, ""))
    for path, root in candidates:
        try:
            found = identify(path)
        except OSError as exc:
            tried.append(f"{path}: {exc.strerror}")
            continue
        if found == (mapping.dev, mapping.inode):
            # Found only by our path (outside the target's root, e.g. opened
            # before a chroot): a file of ours, named and searched as ours.
            shown = name if root else mapping.path
            return ModuleFile(shown, path, mapping.dev, mapping.inode, root)
        tried.append(f"{path}: another file (device and inode differ from the maps line)")
    return None


def _by_map_files(target: ProcessTarget, mapping: Mapping, identify: Identify,
                  tried: list[str]) -> ModuleFile | None:
    path = f"/proc/{target.pid}/map_files/{mapping.start:x}-{mapping.end:x}"
    try:
        identify(path)   # following the link needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE
    except OSError as exc:
        tried.append(f"{path}: {exc.strerror}")
        return None
    return ModuleFile(target.own_view(mapping.path), path, mapping.dev, mapping.inode,
                      target.root)


def module_files(target: ProcessTarget) -> list[ModuleFile]:
    """Every module file the process maps, executable first."""
    exe = target.executable()
    rest = [m for m in target.module_mappings() if not m.same_file(exe.dev, exe.inode)]
    return [module_file(target, m) for m in (exe, *rest)]


def target_file(path: str, target: ProcessTarget | None) -> ModuleFile:
    """`-t PATH`. With -p, PATH is looked up in the target's root first
    (a container's path), then in ours; a file the target maps is then
    named and opened as its mapping is."""
    if target is None:
        return _host_file(path)
    in_root = [(target.root + path, target.root)] if target.root and path.startswith("/") else []
    for candidate, root in (*in_root, (path, "")):
        try:
            dev, inode = _identity(candidate)
        except OSError:
            continue
        for m in target.module_mappings():
            if m.same_file(dev, inode):
                return module_file(target, m)
        if not root:
            return _host_file(candidate)
        return ModuleFile(path, candidate, dev, inode, root)
    where = f" (looked in the root of process {target.pid} and in ours)" if target.root else ""
    raise TargetError(f"no such file: {path}{where}")


def _host_file(path: str) -> ModuleFile:
    real = os.path.realpath(path)
    try:
        dev, inode = _identity(real)
    except OSError:
        raise TargetError(f"no such file: {path}") from None
    return ModuleFile(real, real, dev, inode)


# ---------------------------------------------------------------- load offsets

def module_offsets(target: ProcessTarget, module: ModuleRef) -> SectionOffsets | None:
    """Where `module` was loaded in `target`, or None if it is not mapped
    there (yet). Its mappings are the ones of the same device and inode.

    The kernel and ld.so load all PT_LOADs of one ELF with a single bias, so
    it is read off the first segment's mapping: later file pages can be
    mapped twice (RELRO splits the data segment), the first one cannot."""
    if not module.segments:
        return None
    first = min(module.segments, key=lambda seg: seg.vaddr)
    page_offset = first.offset & ~(_PAGE - 1)
    starts = [m.start for m in target.mappings
              if m.same_file(module.file.dev, module.file.inode) and m.offset == page_offset]
    if not starts:
        return None
    bias = min(starts) - (first.vaddr & ~(_PAGE - 1))
    return SectionOffsets(bias, bias, bias, bias)


def processes_mapping(file: ModuleFile) -> list[int]:
    """PIDs (in the tracer's view) that currently map `file`, in whatever
    mount namespace and under whatever path."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/maps") as f:
                text = f.read()
        except OSError:
            continue
        # The inode's digits first: parsing every line of every process is slow.
        if str(file.inode) in text and \
                any(m.same_file(file.dev, file.inode) for m in parse_maps(text)):
            pids.append(int(entry))
    return pids


def pid_namespaces(target: ProcessTarget | None = None) -> PidNamespace:
    """The tracer's PID namespace, plus the target's when it is another one."""
    st = os.stat("/proc/self/ns/pid")
    target_dev = target_ino = 0
    if target is not None and target.pidns != (st.st_dev, st.st_ino):
        target_dev, target_ino = target.pidns
    return PidNamespace(use_ns_helper=st.st_ino != _INIT_PID_NS_INO, dev=st.st_dev,
                        ino=st.st_ino, target_dev=target_dev, target_ino=target_ino)


def is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
