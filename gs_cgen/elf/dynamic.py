"""What the dynamic loader reads from an ELF file before it maps the file's
dependencies: PT_INTERP and the PT_DYNAMIC entries DT_NEEDED, DT_RUNPATH,
DT_RPATH, DT_SONAME and DT_FLAGS_1 (gABI "Dynamic Section"). The search
itself (ld.so's rules) lives in runtime/libraries.py."""
from __future__ import annotations

import struct

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_E_MACHINE

from gs_cgen.errors import DebugInfoError
from gs_cgen.lazydataclass import dataclass

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
    loader skips such a file and goes on searching). ELF64 little-endian
    files are decoded from their raw bytes (a library closure reads every
    library; pyelftools' construct parsing took ~5 ms each), others by
    pyelftools."""
    try:
        with open(path, "rb") as stream:
            info = _raw_dynamic_info(stream)
            return info if info is not None else _dynamic_info(ELFFile(stream))
    except OSError as exc:
        raise DebugInfoError(f"cannot open '{path}': {exc.strerror}") from exc
    except (ELFError, ValueError, IndexError, struct.error) as exc:
        raise DebugInfoError(f"'{path}' is not an ELF file") from exc


# gABI "Dynamic Section" d_tag values, and ELF64 layouts (little-endian).
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 14, 15, 29
_DT_FLAGS_1 = 0x6FFFFFFB
_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")
_DYN = struct.Struct("<qQ")
_MACHINES = {code: name for name, code in ENUM_E_MACHINE.items() if name.startswith("EM_")}


def _raw_dynamic_info(stream) -> DynamicInfo | None:
    """None for anything but ELF64 little-endian (ValueError: no ELF file)."""
    header = stream.read(_EHDR.size)
    if len(header) < 16 or header[:4] != b"\x7fELF":
        raise ValueError("no ELF magic")
    if header[4] != 2 or header[5] != 1 or len(header) < _EHDR.size:
        return None
    fields = _EHDR.unpack(header)
    machine, phoff, phentsize, phnum = fields[2], fields[5], fields[9], fields[10]
    if phnum and phentsize != _PHDR.size:
        return None
    stream.seek(phoff)
    programs = list(_PHDR.iter_unpack(stream.read(phnum * _PHDR.size)))
    interpreter, entries = None, []
    for p_type, _, offset, _, _, filesz, _, _ in programs:
        if p_type == _PT_INTERP:
            stream.seek(offset)
            interpreter = stream.read(filesz).split(b"\0", 1)[0].decode("utf-8", "replace")
        elif p_type == _PT_DYNAMIC:
            stream.seek(offset)
            data = stream.read(filesz - filesz % _DYN.size)
            for tag, value in _DYN.iter_unpack(data):
                if tag == _DT_NULL:
                    break
                entries.append((tag, value))
    tags = _raw_tags(stream, programs, entries)
    return DynamicInfo(
        elf_class=64, machine=_MACHINES.get(machine, machine), interpreter=interpreter,
        needed=tuple(tags.get("DT_NEEDED", ())),
        runpath=_path_list(tags.get("DT_RUNPATH")), rpath=_path_list(tags.get("DT_RPATH")),
        soname=next(iter(tags.get("DT_SONAME", ())), None),
        nodeflib=any(flags & _DF_1_NODEFLIB for flags in tags.get("DT_FLAGS_1", ())))


def _raw_tags(stream, programs, entries) -> dict[str, list]:
    """_tags' answer from raw entries: strings are read from DT_STRTAB, an
    address that the PT_LOAD segments place in the file (as ld.so finds it)."""
    strtab = next((value for tag, value in entries if tag == _DT_STRTAB), None)
    base = None
    for p_type, _, offset, vaddr, _, filesz, _, _ in programs:
        if strtab is not None and p_type == _PT_LOAD and vaddr <= strtab < vaddr + filesz:
            base = strtab - vaddr + offset
    names = {_DT_NEEDED: "DT_NEEDED", _DT_RUNPATH: "DT_RUNPATH", _DT_RPATH: "DT_RPATH",
             _DT_SONAME: "DT_SONAME"}
    tags: dict[str, list] = {}
    for tag, value in entries:
        if tag in names:
            if base is None:
                raise ValueError("dynamic strings outside the file")
            tags.setdefault(names[tag], []).append(_string_at(stream, base + value))
        elif tag == _DT_FLAGS_1:
            tags.setdefault("DT_FLAGS_1", []).append(value)
    return tags


def _string_at(stream, offset: int) -> str:
    stream.seek(offset)
    data = b""
    while b"\0" not in data:
        chunk = stream.read(256)
        if not chunk:
            break
        data += chunk
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


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
