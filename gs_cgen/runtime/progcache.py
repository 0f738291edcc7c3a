"""The compiled-program cache: what BCC built and the verifier accepted,
kept so that a run of the same program loads it without clang.

Why. Compiling with BCC (clang + LLVM inside libbcc) is most of the time
from script to attached probes, and `import bcc` with its libbcc dlopen
costs ~0.1 s more. The program depends only on the inputs of `cache_key`;
when none changed, the instructions are the same, up to the map fds BCC
wrote into them.

What an entry holds (plain data, stored with cachedir.write_entry):
- every map BCC created: its C name and shape (type, key and value size,
  max entries, flags);
- every program BCC loaded: its function name, program type, load flags
  and expected attach type, its instructions, and which `ld_imm64`
  instructions (src_reg BPF_PSEUDO_MAP_FD) load which map's fd;
- or, under a sleepable key, only why the sleepable build was refused, so a
  hit goes straight to the non-sleepable entry.

A program whose instructions refer to anything else the loader would
have to fix up (map values, BTF ids, kfuncs) is not cached: it is
compiled every time (`Uncacheable`).

The loading side is runtime/progload.py. Pure functions here (key,
instruction scanning and patching) are unit-tested without root.
"""
from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from gs_cgen.cachedir import cache_root, read_entry, write_entry
from gs_cgen.lazydataclass import dataclass

_FORMAT_VERSION = 1
SWITCH_VARIABLE = "GS_CGEN_PROGRAM_CACHE"     # "off": always compile
_OFF = ("0", "off", "no", "false")

# include/uapi/linux/bpf.h
INSN_SIZE = 8
_LD_IMM64 = 0x18                     # BPF_LD | BPF_IMM | BPF_DW: two instruction slots
BPF_PSEUDO_MAP_FD = 1
_INSN = struct.Struct("<BBhi")       # opcode, dst:4 src:4, off, imm


class Uncacheable(Exception):
    """The program refers to something a cached copy could not restore."""


@dataclass(frozen=True)
class MapSpec:
    name: str            # the C name (the kernel keeps only 15 characters)
    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int


@dataclass(frozen=True)
class ProgramSpec:
    name: str                          # the C function name
    prog_type: int
    prog_flags: int                    # BPF_F_SLEEPABLE or 0
    expected_attach_type: int          # -1: none
    instructions: bytes
    map_refs: tuple[tuple[int, int], ...]   # (ld_imm64 index, index into maps)


@dataclass(frozen=True)
class CachedProgram:
    maps: tuple[MapSpec, ...] = ()
    programs: tuple[ProgramSpec, ...] = ()
    refused: str = ""        # a sleepable key's entry: why that build cannot be used


# ------------------------------------------------------------------ key
@dataclass(frozen=True)
class KeyInputs:
    """Everything the compiled instructions can depend on."""

    c_text: str
    cflags: tuple[str, ...]
    sleepable: bool
    links: bool                  # uprobe_multi links (expected attach type) or perf events
    bcc_version: str
    kernel: str                  # release and build (uname -r, -v): kernel headers, BTF, tracepoint formats
    gs_version: str
    headers_digest: str          # gs_abi.h and the emitter's prelude headers


def cache_key(inputs: KeyInputs) -> str:
    parts = (str(_FORMAT_VERSION), inputs.c_text, "\0".join(inputs.cflags),
             f"sleepable={int(inputs.sleepable)}", f"links={int(inputs.links)}",
             inputs.bcc_version, inputs.kernel, inputs.gs_version, inputs.headers_digest)
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0\1\0")          # no two different part lists join alike
    return digest.hexdigest()


def headers_digest(directories: tuple[Path, ...]) -> str:
    """Every header the generated C may include from our own directories."""
    digest = hashlib.sha256()
    for directory in directories:
        for header in sorted(directory.glob("*.h")):
            digest.update(header.name.encode() + b"\0" + header.read_bytes() + b"\0")
    return digest.hexdigest()


def kernel_identity() -> str:
    uname = os.uname()
    return f"{uname.release} {uname.version} {uname.machine}"


def bcc_version_without_import() -> str:
    """BCC's version read from its package's version.py, without importing
    bcc (which loads libbcc and LLVM: ~0.1 s)."""
    import importlib.util  # noqa: PLC0415
    try:
        spec = importlib.util.find_spec("bcc")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return "not installed"
    for location in spec.submodule_search_locations:
        version_file = Path(location) / "version.py"
        try:
            text = version_file.read_text()
            stat = (Path(location) / "__init__.py").stat()
        except OSError:
            continue
        return f"{text.strip()} {stat.st_size} {stat.st_mtime_ns}"
    return "unknown"


# ---------------------------------------------------------- instructions
def map_references(instructions: bytes, map_index_by_fd: dict[int, int]
                   ) -> tuple[tuple[int, int], ...]:
    """(instruction index, map index) of every ld_imm64 that loads a map fd.
    Raises Uncacheable for a reference a cached copy could not restore."""
    if len(instructions) % INSN_SIZE:
        raise Uncacheable(f"{len(instructions)} bytes of instructions is not a whole number")
    refs = []
    index, count = 0, len(instructions) // INSN_SIZE
    while index < count:
        code, registers, _off, imm = _INSN.unpack_from(instructions, index * INSN_SIZE)
        if code != _LD_IMM64:
            index += 1
            continue
        source = registers >> 4
        if source == BPF_PSEUDO_MAP_FD:
            if imm not in map_index_by_fd:
                raise Uncacheable(f"instruction {index} loads fd {imm}, not a map BCC made")
            refs.append((index, map_index_by_fd[imm]))
        elif source != 0:
            raise Uncacheable(f"instruction {index} is an ld_imm64 of kind {source}")
        index += 2                         # the second slot holds the upper 32 bits
    return tuple(refs)


def patch_map_fds(instructions: bytes, map_refs: tuple[tuple[int, int], ...],
                  map_fds: list[int]) -> bytes:
    """The instructions with each map reference loading this run's fd."""
    patched = bytearray(instructions)
    for index, map_index in map_refs:
        at = index * INSN_SIZE
        code, registers, _off, _imm = _INSN.unpack_from(patched, at)
        if code != _LD_IMM64 or registers >> 4 != BPF_PSEUDO_MAP_FD:
            raise ValueError(f"instruction {index} is not a map fd load")
        struct.pack_into("<i", patched, at + 4, map_fds[map_index])
    return bytes(patched)


# ---------------------------------------------------------------- store
def enabled(environ=os.environ) -> bool:
    return environ.get(SWITCH_VARIABLE, "").lower() not in _OFF and cache_root() is not None


def entry_path(key: str) -> str | None:
    root = cache_root()
    return None if root is None else os.path.join(root, "programs", f"{key}.marshal")


# Entries kept: the least recently used beyond this are removed on a write.
MAX_ENTRIES = 256


def read_cached(key: str) -> CachedProgram | None:
    """The entry under `key`, or None (absent, unreadable, malformed, or
    one that another user could have written)."""
    path = entry_path(key)
    if path is None or not _ours(path) or not _ours(os.path.dirname(path)):
        return None
    program = from_plain(read_entry(path, _FORMAT_VERSION, key))
    if program is not None:
        try:
            os.utime(path)                   # recently used: kept longest
        except OSError:
            pass
    return program


def _ours(path: str) -> bool:
    """Whether only we could have written `path`. Its programs are loaded
    into the kernel as root: an entry someone else could write (a sudo
    that kept the user's XDG_CACHE_HOME) would be their code."""
    try:
        stat = os.stat(path)
    except OSError:
        return False
    return stat.st_uid == os.geteuid() and not stat.st_mode & 0o022


def write_cached(key: str, program: CachedProgram) -> None:
    path = entry_path(key)
    if path is None:
        return
    write_entry(path, _FORMAT_VERSION, key, to_plain(program))
    _evict_beyond(os.path.dirname(path), MAX_ENTRIES)


def _evict_beyond(directory: str, keep: int) -> None:
    try:
        entries = [entry for entry in os.scandir(directory) if entry.name.endswith(".marshal")]
        if len(entries) <= keep:
            return
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
        for entry in entries[keep:]:
            os.unlink(entry.path)
    except OSError:
        pass                                 # best effort, as the cache itself


def to_plain(program: CachedProgram) -> tuple:
    maps = tuple((m.name, m.map_type, m.key_size, m.value_size, m.max_entries, m.flags)
                 for m in program.maps)
    programs = tuple((p.name, p.prog_type, p.prog_flags, p.expected_attach_type,
                      p.instructions, p.map_refs) for p in program.programs)
    return maps, programs, program.refused


def from_plain(plain) -> CachedProgram | None:
    """None for anything of the wrong shape: a bad entry is an absent one."""
    try:
        maps_plain, programs_plain, refused = plain
        maps = tuple(MapSpec(str(n), *(int(v) for v in rest)) for n, *rest in maps_plain)
        programs = []
        for name, prog_type, flags, attach_type, instructions, refs in programs_plain:
            refs = tuple((int(i), int(m)) for i, m in refs)
            if not isinstance(instructions, bytes) or len(instructions) % INSN_SIZE or \
                    any(m >= len(maps) or i * INSN_SIZE >= len(instructions) for i, m in refs):
                return None
            programs.append(ProgramSpec(str(name), int(prog_type), int(flags), int(attach_type),
                                        instructions, refs))
        return CachedProgram(maps, tuple(programs), str(refused))
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------- from BCC's build
@dataclass(frozen=True)
class LoadedAs:
    """How one function was passed to the verifier."""

    prog_type: int
    prog_flags: int
    expected_attach_type: int


def record_bcc_module(lib, module: int, tables: dict[str, int],
                      loaded: dict[str, LoadedAs]) -> CachedProgram:
    """What a hit needs to rebuild BCC's module `module`: its maps
    (`tables`: C name -> fd) and every function `loaded` (name -> how).
    `lib` is libbcc (bcc.libbcc.lib)."""
    from gs_cgen.runtime.bpfmaps import BpfMap  # noqa: PLC0415
    maps = []
    for name, fd in tables.items():
        shape = BpfMap.from_fd(fd, name)
        maps.append(MapSpec(name, shape.map_type, shape.key_size, shape.value_size,
                            shape.max_entries, shape.flags))
    index_by_fd = {fd: index for index, fd in enumerate(tables.values())}
    programs = []
    for name, how in loaded.items():
        start = lib.bpf_function_start(module, name.encode())
        size = lib.bpf_function_size(module, name.encode())
        if not start or not size:
            raise Uncacheable(f"BCC has no instructions for {name}")
        instructions = _string_at(start, size)
        programs.append(ProgramSpec(name, how.prog_type, how.prog_flags,
                                    how.expected_attach_type, instructions,
                                    map_references(instructions, index_by_fd)))
    return CachedProgram(tuple(maps), tuple(programs))


def bcc_tables(lib, module: int) -> dict[str, int]:
    """Every map of BCC's module: C name -> fd."""
    import ctypes  # noqa: PLC0415
    lib.bpf_num_tables.restype = ctypes.c_size_t
    lib.bpf_num_tables.argtypes = [ctypes.c_void_p]
    lib.bpf_table_name.restype = ctypes.c_char_p
    lib.bpf_table_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.bpf_table_fd_id.restype = ctypes.c_int
    lib.bpf_table_fd_id.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return {lib.bpf_table_name(module, i).decode(): lib.bpf_table_fd_id(module, i)
            for i in range(lib.bpf_num_tables(module))}


def _string_at(address: int, size: int) -> bytes:
    import ctypes  # noqa: PLC0415
    return ctypes.string_at(address, size)
