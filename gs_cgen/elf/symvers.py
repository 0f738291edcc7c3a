"""GNU symbol versions: `memcpy@@GLIBC_2.14` (the default version, what a
new link binds to) and `memcpy@GLIBC_2.2.5` (an older, hidden one).

Two places spell them (LSB Core, "Symbol Versioning"; ld manual, VERSION):
  - .dynsym: `.gnu.version` holds one Elf64_Half per symbol, the index of
    a `.gnu.version_d` definition; bit 15 (VERSYM_HIDDEN) marks a
    non-default version. Indexes 0 (local) and 1 (global) are unversioned.
  - .symtab: the assembler's `.symver` leaves the version in the name,
    `name@@VERSION` or `name@VERSION`; default versions that the
    linker added later appear bare, so .dynsym fills those in.

A bare name means the default version, as for the dynamic linker and gdb
(gdb installs `name@@V` under `name` as well, `name@V` only as itself).
"""
from __future__ import annotations

import struct

from gs_cgen.lazydataclass import dataclass

_VERSYM_HIDDEN = 0x8000
_VER_FLG_BASE = 0x1
_VER_NDX_GLOBAL = 1


@dataclass(frozen=True)
class Spelling:
    """A function or variable name as a user may type it."""

    name: str                    # without the version
    version: str | None = None   # GLIBC_2.14
    default_only: bool = False   # `@@`: the default version and no other


def parse_spelling(text: str) -> Spelling:
    """`memcpy` / `memcpy@GLIBC_2.2.5` / `memcpy@@GLIBC_2.14`."""
    name, at, version = text.partition("@")
    if not at or not name:
        return Spelling(text)
    if version.startswith("@"):
        return Spelling(name, version[1:], default_only=True)
    return Spelling(name, version)


def version_of(symbol_name: str) -> tuple[str, str | None, bool]:
    """(bare name, version, hidden) of a .symtab name."""
    spelling = parse_spelling(symbol_name)
    if spelling.version is None:
        return symbol_name, None, False
    return spelling.name, spelling.version, not spelling.default_only


def spell(name: str, version: str | None, hidden: bool) -> str:
    if version is None:
        return name
    return f"{name}{'@' if hidden else '@@'}{version}"


def matches(spelling: Spelling, version: str | None, hidden: bool) -> bool:
    """Does a symbol of `version` (hidden or not) answer to `spelling`?
    `name@V` accepts V whether it is the default or not, as a versioned
    reference does at dynamic link time; `name` wants the default."""
    if spelling.version is None:
        return not hidden
    return version == spelling.version and not (spelling.default_only and hidden)


def dynamic_versions(definitions: dict[int, str],
                     versym: bytes) -> list[tuple[str | None, bool]]:
    """(version, hidden) for each .dynsym index, from `.gnu.version` bytes
    and the version names by index (`version_definitions`)."""
    out = []
    for (value,) in struct.iter_unpack("<H", versym):
        index = value & ~_VERSYM_HIDDEN
        version = definitions.get(index) if index > _VER_NDX_GLOBAL else None
        out.append((version, bool(value & _VERSYM_HIDDEN) and version is not None))
    return out


_VERDEF = struct.Struct("<HHHHIII")      # vd_version flags ndx cnt hash aux next
_VERDAUX = struct.Struct("<II")          # vda_name next


def version_definitions(verdef: bytes, strings: bytes) -> dict[int, str]:
    """Version index -> name, from ELF64 `.gnu.version_d` bytes and the
    string table it links to (LSB "Version Definition Section"); the
    definition flagged VER_FLG_BASE names the file itself (its soname), not
    a version, and is left out. ValueError for bytes that do not hold a
    chain of definitions."""
    names, pos = {}, 0
    for _ in range(len(verdef) // _VERDEF.size):
        try:
            _, flags, index, count, _, aux, following = _VERDEF.unpack_from(verdef, pos)
            if not flags & _VER_FLG_BASE and count:
                name_at, _ = _VERDAUX.unpack_from(verdef, pos + aux)
                end = strings.index(b"\0", name_at)
                names[index] = strings[name_at:end].decode("utf-8", "replace")
        except struct.error as exc:
            raise ValueError(f"a version definition runs past the section: {exc}") from None
        if not following:
            return names
        pos += following
    raise ValueError("the version definitions do not end")
