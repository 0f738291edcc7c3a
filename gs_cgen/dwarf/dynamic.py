"""What the dynamic loader reads from an ELF file before it maps the file's
dependencies: PT_INTERP and the PT_DYNAMIC entries DT_NEEDED, DT_RUNPATH,
DT_RPATH, DT_SONAME and DT_FLAGS_1 (gABI "Dynamic Section"). The search
itself (ld.so's rules) lives in runtime/libraries.py."""
from __future__ import annotations

from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from gs_cgen.errors import DebugInfoError

_DF_1_NODEFLIB = 0x800    # "ignore the default library search path"


@dataclass(frozen=True)
class DynamicInfo:
    """One ELF file's loader-relevant facts, strings as stored (dynamic
    string tokens such as $ORIGIN are not expanded here)."""

    elf_class: int                      # 32 or 64
    machine: str                        # e_machine, e.g. "EM_X86_64"
    interpreter: str | None             # PT_INTERP
    needed: tuple[str, ...] = ()        # DT_NEEDED, in order
    runpath: tuple[str, ...] = ()       # DT_RUNPATH split on ':'
    rpath: tuple[str, ...] = ()         # DT_RPATH split on ':'
    soname: str | None = None
    nodeflib: bool = False              # DF_1_NODEFLIB


def read_dynamic(path: str) -> DynamicInfo:
    """DebugInfoError when `path` cannot be read or is not an ELF file (the
    loader skips such a file and goes on searching)."""
    try:
        with open(path, "rb") as stream:
            return _dynamic_info(ELFFile(stream))
    except OSError as exc:
        raise DebugInfoError(f"cannot open '{path}': {exc.strerror}") from exc
    except ELFError as exc:
        raise DebugInfoError(f"'{path}' is not an ELF file") from exc


def _dynamic_info(elf: ELFFile) -> DynamicInfo:
    interpreter, tags = None, {}
    for segment in elf.iter_segments():
        if segment["p_type"] == "PT_INTERP":
            interpreter = segment.get_interp_name()
        elif segment["p_type"] == "PT_DYNAMIC":
            tags = _tags(segment)
    return DynamicInfo(
        elf_class=elf.elfclass, machine=elf.header["e_machine"], interpreter=interpreter,
        needed=tuple(tags.get("DT_NEEDED", ())),
        runpath=_path_list(tags.get("DT_RUNPATH")), rpath=_path_list(tags.get("DT_RPATH")),
        soname=next(iter(tags.get("DT_SONAME", ())), None),
        nodeflib=any(flags & _DF_1_NODEFLIB for flags in tags.get("DT_FLAGS_1", ())))


def _tags(segment) -> dict[str, list]:
    """d_tag -> values, strings already looked up in DT_STRTAB."""
    string_attr = {"DT_NEEDED": "needed", "DT_RUNPATH": "runpath", "DT_RPATH": "rpath",
                   "DT_SONAME": "soname"}
    tags: dict[str, list] = {}
    for tag in segment.iter_tags():
        kind = tag.entry.d_tag
        if kind in string_attr:
            tags.setdefault(kind, []).append(getattr(tag, string_attr[kind]))
        elif kind == "DT_FLAGS_1":
            tags.setdefault(kind, []).append(tag.entry.d_val)
    return tags


def _path_list(values: list[str] | None) -> tuple[str, ...]:
    # An empty element means the current directory (glibc fillin_rpath);
    # an empty string names no directory at all.
    return tuple(part for value in values or () if value for part in value.split(":"))
