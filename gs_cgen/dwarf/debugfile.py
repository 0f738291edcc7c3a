"""Separate debug info: the DWARF of a stripped ELF file kept in another
file, found the way gdb finds it (gdb manual, "Debugging Information in
Separate Files"):

  1. by build-id: <root>/.build-id/<first two hex digits>/<rest>.debug,
     accepted when that file's build-id matches;
  2. by .gnu_debuglink (file name, padding to 4 bytes, CRC32 of the debug
     file): <dir>/<name>, <dir>/.debug/<name>, <root>/<dir>/<name>, where
     <dir> is the directory of the file's real path; accepted when the CRC
     matches.

<root> is each of DEBUG_ROOTS, or of the colon-separated GS_CGEN_DEBUG_ROOTS.
A candidate must also have a real .debug_info section.

A file of a process in a container is known by its path in the target's
view (`name`) and a directory that stands for the target's `/` (`target_root`,
e.g. /proc/PID/root): <dir> is then the file's directory inside that root,
and the target's own /usr/lib/debug comes before the tracer's roots, as a
debugger running in the container would see them (DESIGN.md "Module files
across namespaces").

  3. when neither has it and DEBUGINFOD_URLS is set: by build-id from
     those debuginfod servers (debuginfod.py), accepted when the file's
     build-id matches; a failure is kept, to be raised when the DWARF is
     needed (a library nobody probes must not stop the run).
"""
from __future__ import annotations

import os
import struct
import zlib

from gs_cgen.elf.image import ElfImage
from gs_cgen.errors import DebugInfoError
from gs_cgen.lazydataclass import dataclass

DEBUG_ROOTS: tuple[str, ...] = ("/usr/lib/debug",)
# Where distributions put debug files, looked for inside a target's root.
TARGET_DEBUG_ROOT = "/usr/lib/debug"


@dataclass(frozen=True)
class DebugFileSearch:
    """Where a file's DWARF is: `image` (None when nowhere), and the paths
    looked at for separate debug info, for the error message."""

    image: ElfImage | None
    searched: tuple[str, ...] = ()
    failure: DebugInfoError | None = None     # why debuginfod had no file


def debug_roots() -> tuple[str, ...]:
    env = os.environ.get("GS_CGEN_DEBUG_ROOTS")
    return tuple(p for p in env.split(":") if p) if env else DEBUG_ROOTS


def has_dwarf(elf: ElfImage) -> bool:
    info = elf.section(".debug_info")
    return info is not None and info.size > 0 and not info.nobits


def find_debug_info(elf: ElfImage, name: str | None = None,
                    target_root: str = "") -> DebugFileSearch:
    """`elf` itself when it has DWARF, else its separate debug file. `name`
    is the file's path as seen from `target_root` (default: as opened)."""
    if has_dwarf(elf):
        return DebugFileSearch(elf)
    searched: list[str] = []
    if elf.build_id:
        for path in build_id_paths(elf.build_id, target_root):
            searched.append(path)
            image = _open_candidate(path, elf)
            if image is not None and image.build_id == elf.build_id:
                return DebugFileSearch(image, tuple(searched))
            _close(image)
    link = debuglink(elf)
    if link is not None:
        link_name, crc = link
        for path in debuglink_paths(name or elf.path, link_name, target_root):
            searched.append(path)
            image = _open_candidate(path, elf)
            if image is not None and _file_crc32(path) == crc:
                return DebugFileSearch(image, tuple(searched))
            _close(image)
    if elf.build_id and os.environ.get("DEBUGINFOD_URLS", "").strip():
        return _from_debuginfod(elf, name or elf.path, tuple(searched))
    return DebugFileSearch(None, tuple(searched))


def _from_debuginfod(elf: ElfImage, name: str, searched: tuple[str, ...]) -> DebugFileSearch:
    # Imported here: it loads ctypes, which the ordinary path never needs.
    from gs_cgen.dwarf import debuginfod  # noqa: PLC0415
    searched += (f"debuginfod ({debuginfod.urls()})",)
    try:
        path = debuginfod.fetch_debuginfo(elf.build_id, name)
    except DebugInfoError as exc:
        return DebugFileSearch(None, searched, exc)
    image = _open_candidate(path, elf)
    if image is not None and image.build_id == elf.build_id:
        return DebugFileSearch(image, searched)
    found = image.build_id if image is not None else None
    _close(image)
    what = f"build-id {found}" if found else "no DWARF"
    return DebugFileSearch(None, searched, DebugInfoError(
        f"the debug file debuginfod gave for '{name}' (build-id {elf.build_id}) has {what}: "
        f"{path}",
        hints=("the server holds a wrong file for that build-id; once it is fixed, delete "
               "the file from the debuginfod cache",)))


def search_roots(target_root: str = "") -> tuple[str, ...]:
    """The debug roots, the target's own /usr/lib/debug first."""
    own = (target_root + TARGET_DEBUG_ROOT,) if target_root else ()
    return own + debug_roots()


def build_id_paths(build_id: str, target_root: str = "") -> list[str]:
    return [os.path.join(root, ".build-id", build_id[:2], build_id[2:] + ".debug")
            for root in search_roots(target_root)]


def debuglink_paths(path: str, name: str, target_root: str = "") -> list[str]:
    """`path` is the file's path inside `target_root` (or ours when '').
    Inside another root its directory is taken as it is: /proc/PID/maps
    names files by their real path, and realpath would resolve the target's
    absolute symlinks against our root."""
    directory = os.path.dirname(path if target_root else os.path.realpath(path))
    inside = target_root + directory
    return ([os.path.join(inside, name), os.path.join(inside, ".debug", name)]
            + [os.path.join(root + directory, name) for root in search_roots(target_root)])


def debuglink(elf: ElfImage) -> tuple[str, int] | None:
    """(file name, CRC32) from .gnu_debuglink, or None."""
    data = elf.section_bytes(".gnu_debuglink")
    end = data.find(b"\0")
    if end <= 0:
        return None
    crc_at = (end + 4) & ~3
    if len(data) < crc_at + 4:
        return None
    (crc,) = struct.unpack_from("<I", data, crc_at)
    return os.fsdecode(data[:end]), crc


def _open_candidate(path: str, elf: ElfImage) -> ElfImage | None:
    if not os.path.isfile(path) or _same_file(path, elf.path):
        return None
    try:
        image = ElfImage(path)
    except DebugInfoError:
        return None
    if has_dwarf(image):
        return image
    image.close()
    return None


def _same_file(path: str, other: str) -> bool:
    # By device and inode: /proc/PID/map_files names do not realpath.
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def _close(image: ElfImage | None) -> None:
    if image is not None:
        image.close()


def _file_crc32(path: str) -> int | None:
    crc = 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc
