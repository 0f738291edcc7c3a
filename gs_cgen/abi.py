"""The BPF/Python ABI, read from bpf_headers/gs_abi.h with pycparser.

Python never restates an offset: struct layouts, enum constants and map
names all come from the header, so the two sides cannot drift. pycparser
parses but does not lay out, so `_layout_struct` applies the x86-64 SysV
rules (natural alignment, size rounded to the largest member alignment).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import struct
from functools import lru_cache
from pathlib import Path

from gs_cgen.cachedir import cache_root, read_entry, write_entry
from gs_cgen.errors import GsError
from gs_cgen.lazydataclass import dataclass

# gs_cgen/bpf_headers links to the repository's bpf_headers/ and is package data.
HEADER_PATH = Path(__file__).resolve().parent / "bpf_headers" / "gs_abi.h"

# The kernel's fixed-width types, so pycparser knows their sizes.
_PRELUDE = """
typedef unsigned char __u8; typedef signed char __s8;
typedef unsigned short __u16; typedef short __s16;
typedef unsigned int __u32; typedef int __s32;
typedef unsigned long long __u64; typedef long long __s64;
# 1 "gs_abi.h"
"""
_SCALARS = {"__u8": (1, "B"), "__s8": (1, "b"), "__u16": (2, "H"), "__s16": (2, "h"),
            "__u32": (4, "I"), "__s32": (4, "i"), "__u64": (8, "Q"), "__s64": (8, "q")}
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_DEFINE = re.compile(r"^\s*#define\s+(GS_MAP_\w+)\s+(\w+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class FieldLayout:
    name: str
    offset: int
    size: int
    format: str          # struct-module format of one element
    count: int = 1       # array length (1 for scalars)


@dataclass(frozen=True, eq=False)
class StructLayout:
    name: str
    size: int
    fields: tuple[FieldLayout, ...]

    def field(self, name: str) -> FieldLayout:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"struct {self.name} has no field {name}")

    def unpack(self, data: bytes, offset: int = 0) -> dict[str, int]:
        """Scalar fields of one instance at `offset` of `data`."""
        return {f.name: struct.unpack_from("<" + f.format, data, offset + f.offset)[0]
                for f in self.fields if f.count == 1}

    @functools.cached_property
    def reader(self) -> tuple[struct.Struct, tuple[str, ...]]:
        """A compiled struct.Struct over the scalar fields, for hot paths."""
        fmt, at, names = "<", 0, []
        for f in self.fields:
            if f.count != 1:
                continue
            fmt += "x" * (f.offset - at) + f.format
            at = f.offset + f.size
            names.append(f.name)
        return struct.Struct(fmt), tuple(names)

    def unpack_fast(self, data: bytes) -> dict[str, int]:
        compiled, names = self.reader
        return dict(zip(names, compiled.unpack_from(data)))

    def pack(self, **values: int) -> bytes:
        buf = bytearray(self.size)
        for f in self.fields:
            if f.count == 1:
                struct.pack_into("<" + f.format, buf, f.offset, values.get(f.name, 0))
        return bytes(buf)


@dataclass(frozen=True)
class Abi:
    structs: dict[str, StructLayout]
    constants: dict[str, int]
    map_names: dict[str, str]


@lru_cache(maxsize=1)
def load_abi(path: Path = HEADER_PATH) -> Abi:
    """The ABI of the header at `path`: from the cache when this header and
    this module (the layout rules) are the ones it was derived from, else
    parsed with pycparser (whose import alone takes ~15 ms)."""
    text = path.read_text()
    key = _cache_key(text)
    root = cache_root()
    entry = os.path.join(root, "abi", f"{key}.marshal") if root is not None else None
    cached = _abi_from_plain(read_entry(entry, _CACHE_VERSION, key)) if entry else None
    if cached is not None:
        return cached
    parsed = _parse_abi(path, text)
    if entry is not None:
        write_entry(entry, _CACHE_VERSION, key, _abi_plain(parsed))
    return parsed


_CACHE_VERSION = 1


def _cache_key(header_text: str) -> str:
    rules = Path(__file__).read_bytes()          # _layout_struct and friends
    return hashlib.sha256(header_text.encode() + b"\0" + rules).hexdigest()[:32]


def _abi_plain(abi: Abi) -> tuple:
    structs = {name: (layout.size, tuple((f.name, f.offset, f.size, f.format, f.count)
                                         for f in layout.fields))
               for name, layout in abi.structs.items()}
    return structs, abi.constants, abi.map_names


def _abi_from_plain(plain) -> Abi | None:
    """None for anything of the wrong shape (cachedir.py: a bad entry is absent)."""
    try:
        structs, constants, map_names = plain
        layouts = {name: StructLayout(name, size, tuple(FieldLayout(*f) for f in fields))
                   for name, (size, fields) in structs.items()}
        if not all(isinstance(v, int) for v in constants.values()) or \
                not all(isinstance(v, str) for v in map_names.values()):
            return None
        return Abi(layouts, dict(constants), dict(map_names))
    except (TypeError, ValueError, AttributeError):
        return None


def _parse_abi(path: Path, text: str) -> Abi:
    from pycparser import c_ast, c_parser  # noqa: PLC0415 - only when not cached
    from pycparser.c_parser import ParseError  # noqa: PLC0415 - 2.x and 3.x export it here
    # pycparser takes preprocessed C: drop comments (keeping line count) and
    # directives; the GS_MAP_* defines are read separately.
    uncommented = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    body = "\n".join("" if line.lstrip().startswith("#") else line
                     for line in uncommented.splitlines())
    try:
        ast = c_parser.CParser().parse(_PRELUDE + body, filename="gs_abi.h")
    except ParseError as exc:
        raise GsError(f"cannot parse {path}: {exc}") from exc
    constants: dict[str, int] = {}
    structs: dict[str, StructLayout] = {}
    for node in ast.ext:
        _collect(node.type if isinstance(node, c_ast.Decl) else node, constants, structs, c_ast)
    return Abi(structs, constants, dict(_DEFINE.findall(text)))


def _collect(node, constants: dict[str, int], structs: dict[str, StructLayout], c_ast) -> None:
    if isinstance(node, c_ast.Enum) and node.values:
        for item in node.values.enumerators:
            constants[item.name] = _const_value(item.value, constants, c_ast)
    elif isinstance(node, c_ast.Struct) and node.decls:
        structs[node.name] = _layout_struct(node, constants, c_ast)


def _const_value(expr, constants: dict[str, int], c_ast) -> int:
    if isinstance(expr, c_ast.Constant):
        return int(expr.value, 0)
    if isinstance(expr, c_ast.ID):
        return constants[expr.name]
    raise GsError(f"gs_abi.h: unsupported constant expression {expr!r}")


def _layout_struct(node, constants: dict[str, int], c_ast) -> StructLayout:
    offset, max_align, fields = 0, 1, []
    for decl in node.decls:
        elem_type, count = decl.type, 1
        if isinstance(elem_type, c_ast.ArrayDecl):
            count = _const_value(elem_type.dim, constants, c_ast)
            elem_type = elem_type.type
        type_name = elem_type.type.names[0]
        size, fmt = _SCALARS[type_name]
        offset = (offset + size - 1) // size * size
        fields.append(FieldLayout(decl.name, offset, size, fmt, count))
        offset += size * count
        max_align = max(max_align, size)
    total = (offset + max_align - 1) // max_align * max_align
    return StructLayout(node.name, total, tuple(fields))


def abi() -> Abi:
    return load_abi()
