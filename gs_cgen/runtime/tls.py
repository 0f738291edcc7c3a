"""Where each module's thread-local storage block is in a process, read
from the dynamic loader's own records (DESIGN.md "Static TLS").

glibc's ld.so keeps one `struct link_map` per loaded module, listed from
`_r_debug.r_map` (<link.h>: r_map at offset 8; l_addr, l_name, l_ld,
l_next at 0, 8, 16, 24 — the public, stable head of the struct). A module
is found in that list by its load bias and the run-time address of its
PT_DYNAMIC (l_addr, l_ld), as gdb's solib-svr4 does: never by path. Its
private fields say where its TLS block is: `l_tls_offset` (x86-64 variant
II: the block starts at thread pointer - l_tls_offset) and `l_tls_modid`
(its index in each thread's DTV). A module dlopen()ed after start-up has
no static offset (NO_TLS_OFFSET 0, FORCED_DYNAMIC_TLS_OFFSET -1): its
blocks are reached through the DTV (gs_prelude.h gs_tls_block).

Where those private fields are inside struct link_map comes from ld.so's
DWARF (libc6-dbg). Without it, from the module's own PT_TLS: glibc stores
l_tls_initimage, l_tls_initimage_size, l_tls_blocksize, l_tls_align and
l_tls_firstbyte_offset just before l_tls_offset and l_tls_modid (elf/
dl-load.c fills them from PT_TLS, include/link.h declares them in that
order since glibc 2.3), so the five words PT_TLS determines are looked for
in the link_map and the two fields taken after them; no match, no value.
A static executable has no ld.so: its block offset is the one
csu/libc-tls.c gives it, roundup(p_memsz, p_align).
"""
from __future__ import annotations

import os
import struct

from gs_cgen.dwarf import open_module
from gs_cgen.errors import GsError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import ModuleRef
from gs_cgen.runtime import target as proc

_R_MAP = 8                          # struct r_debug (<link.h>)
_L_ADDR, _L_LD, _L_NEXT = 0, 16, 24  # struct link_map, public part (<link.h>)
_MAX_MODULES = 4096                 # a bound on the walk of a corrupt list
_SIGNATURE_SEARCH = 4096            # bytes of a link_map searched for the PT_TLS words
_FIELDS = ("l_tls_offset", "l_tls_modid")
_FORCED_DYNAMIC_TLS_OFFSET = -1     # glibc sysdeps/generic/ldsodefs.h (NO_TLS_OFFSET is 0)


@dataclass(frozen=True)
class TlsBlock:
    """gs_abi.h proc_module_tls_value: block_offset > 0 for a block in the
    static TLS area (thread pointer - block_offset), else 0: through
    dtv[modid]."""

    block_offset: int
    modid: int


@dataclass(frozen=True)
class LinkMapLayout:
    """Offsets of l_tls_offset and l_tls_modid in ld.so's struct link_map."""

    tls_offset: int
    tls_modid: int


class TlsReader:
    """Reads modules' TLS blocks out of processes. What it cannot read is
    None, with the reason in `problems` (by module path), for the tracer to
    tell the user once."""

    def __init__(self) -> None:
        self._layouts: dict[tuple[int, int], LinkMapLayout | None] = {}
        self.problems: dict[str, str] = {}

    def block(self, target: proc.ProcessTarget, module: ModuleRef, bias: int) -> TlsBlock | None:
        """Where `module` (loaded with load bias `bias`) has its TLS block in
        `target`, or None when not known (yet)."""
        self.problems.pop(module.path, None)
        try:
            with _Memory(target.pid) as memory:
                return self._block(target, memory, module, bias)
        except (OSError, GsError) as exc:
            self.problems[module.path] = str(getattr(exc, "strerror", None) or exc)
            return None

    def _block(self, target, memory: "_Memory", module: ModuleRef, bias: int) -> TlsBlock | None:
        base = proc.interpreter_base(target.pid)
        if base is None:
            raise GsError(f"cannot read /proc/{target.pid}/auxv")
        if base == 0:                        # the kernel's AT_BASE for a program without ld.so
            return self._static_executable(target, module)
        ld_so = self._interpreter(target, base)
        r_debug = ld_so.symbol_address("_r_debug")
        if r_debug is None:
            self.problems[module.path] = f"{ld_so.path} has no _r_debug symbol"
            return None
        entry = _find_link_map(memory, memory.u64(base + r_debug + _R_MAP), bias,
                               bias + (module.dynamic_vaddr or 0))
        if entry is None:
            return None                      # not listed yet (ld.so is still loading)
        layout = self._layout(target, ld_so) or _layout_by_signature(memory, entry, module, bias)
        if layout is None:
            self.problems[module.path] = (
                f"where {ld_so.path} keeps TLS offsets in its struct link_map is unknown: it has "
                "no debug info (install libc6-dbg) and the link_map does not match the "
                "module's PT_TLS")
            return None
        return _tls_block(memory.s64(entry + layout.tls_offset),
                          memory.u64(entry + layout.tls_modid))

    def _interpreter(self, target: proc.ProcessTarget, base: int):
        mapping = next((m for m in target.mappings if m.start == base and m.is_file), None)
        if mapping is None:
            raise GsError(f"no file is mapped at the interpreter's base 0x{base:x}")
        file = proc.module_file(target, mapping)
        return open_module(file.open_path, file.display_path, file.root)

    def _layout(self, target, ld_so) -> LinkMapLayout | None:
        """From ld.so's DWARF, once per ld.so file."""
        st = os.stat(ld_so.open_path)
        key = (st.st_dev, st.st_ino)
        if key not in self._layouts:
            found = ld_so.struct_member_offsets("link_map", _FIELDS) \
                if ld_so.has_debug_info else None
            self._layouts[key] = None if found is None else \
                LinkMapLayout(found["l_tls_offset"], found["l_tls_modid"])
        return self._layouts[key]

    def _static_executable(self, target: proc.ProcessTarget, module: ModuleRef) -> TlsBlock | None:
        exe = target.executable()
        if not exe.same_file(module.file.dev, module.file.inode) or module.tls is None:
            self.problems[module.path] = f"process {target.pid} has no dynamic loader"
            return None
        return TlsBlock(_round_up(module.tls.memsz, module.tls.align), 1)


def _tls_block(offset: int, modid: int) -> TlsBlock | None:
    if modid == 0:
        return None                          # ld.so has not numbered it yet
    if offset in (0, _FORCED_DYNAMIC_TLS_OFFSET) or offset < 0:
        return TlsBlock(0, modid)
    return TlsBlock(offset, modid)


def _find_link_map(memory: "_Memory", entry: int, bias: int, dynamic: int) -> int | None:
    """The link_map whose l_addr and l_ld are the module's."""
    for _ in range(_MAX_MODULES):
        if entry == 0:
            return None
        if memory.u64(entry + _L_ADDR) == bias and memory.u64(entry + _L_LD) == dynamic:
            return entry
        entry = memory.u64(entry + _L_NEXT)
    return None


def _layout_by_signature(memory: "_Memory", entry: int, module: ModuleRef,
                         bias: int) -> LinkMapLayout | None:
    """The fields after the five PT_TLS words (see the module docstring)."""
    tls = module.tls
    if tls is None:
        return None
    firstbyte = tls.vaddr & (tls.align - 1)
    words = struct.pack("<5Q", bias + tls.vaddr, tls.filesz, tls.memsz, tls.align, firstbyte)
    data = memory.read(entry, _SIGNATURE_SEARCH)
    hits = [at for at in range(0, len(data) - len(words) + 1, 8) if data[at:at + 40] == words]
    if len(hits) != 1:
        return None
    return LinkMapLayout(hits[0] + 40, hits[0] + 48)


def _round_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


class _Memory:
    """/proc/PID/mem, read by address."""

    def __init__(self, pid: int) -> None:
        self._fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)

    def __enter__(self) -> "_Memory":
        return self

    def __exit__(self, *_exc) -> None:
        os.close(self._fd)

    def read(self, address: int, size: int) -> bytes:
        """Up to `size` bytes: fewer where the mapping ends."""
        data = b""
        while len(data) < size:
            try:
                chunk = os.pread(self._fd, size - len(data), address + len(data))
            except OSError:
                chunk = b""
            if not chunk:
                break
            data += chunk
        return data

    def u64(self, address: int) -> int:
        data = self.read(address, 8)
        if len(data) != 8:
            raise GsError(f"cannot read process memory at 0x{address:x}")
        return int.from_bytes(data, "little")

    def s64(self, address: int) -> int:
        value = self.u64(address)
        return value - (1 << 64) if value >> 63 else value
