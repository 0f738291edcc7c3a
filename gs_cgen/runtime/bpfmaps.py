"""BPF maps by file descriptor: look-up, update, delete, iteration.

Why not BCC's tables. A `bcc.BPF` table needs the BPF object BCC compiled
(its key and leaf types come from clang's parse of the C); maps the tracer
creates or receives any other way (a cached program, aggregations read at
exit) have only an fd. libbpf's low-level API (libbpf.so.1, which BCC's
own libbcc depends on, so it is on every machine that has BCC) works on
fds and bytes: the callers lay the bytes out with the ABI's layouts
(gs_cgen/abi.py) or `struct`.

libbpf 1.x returns a negative errno from these calls and sets errno.
"""
from __future__ import annotations

import ctypes
import errno
import functools
import os
from collections.abc import Iterator

from gs_cgen.errors import RuntimeTraceError
from gs_cgen.lazydataclass import dataclass

# include/uapi/linux/bpf.h enum bpf_map_type: the per-CPU kinds, whose
# values are one slot per possible CPU, each rounded up to 8 bytes.
_PER_CPU_TYPES = frozenset({
    5,    # BPF_MAP_TYPE_PERCPU_HASH
    6,    # BPF_MAP_TYPE_PERCPU_ARRAY
    10,   # BPF_MAP_TYPE_LRU_PERCPU_HASH
    21,   # BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE
})
BPF_ANY = 0


class _MapInfo(ctypes.Structure):
    """struct bpf_map_info up to its name (the kernel fills what we ask)."""

    _fields_ = [("type", ctypes.c_uint32), ("id", ctypes.c_uint32),
                ("key_size", ctypes.c_uint32), ("value_size", ctypes.c_uint32),
                ("max_entries", ctypes.c_uint32), ("map_flags", ctypes.c_uint32),
                ("name", ctypes.c_char * 16)]


@functools.cache
def libbpf() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
    except OSError as exc:
        raise RuntimeTraceError(
            f"libbpf is not loadable ({exc}); install Debian's libbpf1 "
            "(python3-bpfcc depends on it)") from None
    for name in ("bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem",
                 "bpf_map_get_next_key"):
        getattr(lib, name).argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p] + \
            ([ctypes.c_uint64] if name == "bpf_map_update_elem" else [])
    lib.bpf_map_delete_elem.argtypes = [ctypes.c_int, ctypes.c_void_p]
    lib.bpf_obj_get_info_by_fd.argtypes = [ctypes.c_int, ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_uint32)]
    return lib


@functools.cache
def possible_cpus() -> int:
    """How many value slots a per-CPU map has (the kernel's possible CPUs,
    not the online ones)."""
    with open("/sys/devices/system/cpu/possible", encoding="ascii") as possible:
        spans = possible.read().strip().split(",")
    return sum(int(hi) - int(lo) + 1 for lo, _, hi in
               (span.partition("-") if "-" in span else (span, "", span) for span in spans))


@dataclass(frozen=True)
class BpfMap:
    """One map: its fd and shape. It does not own the fd."""

    fd: int
    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    name: str
    flags: int = 0

    @classmethod
    def from_fd(cls, fd: int, name: str | None = None) -> "BpfMap":
        """The map behind `fd`; `name` its full C name (the kernel keeps 15
        characters of it)."""
        info = _MapInfo()
        length = ctypes.c_uint32(ctypes.sizeof(info))
        if libbpf().bpf_obj_get_info_by_fd(fd, ctypes.byref(info), ctypes.byref(length)) < 0:
            raise RuntimeTraceError(f"cannot read BPF map {fd}'s shape: "
                                    f"{os.strerror(ctypes.get_errno())}")
        return cls(fd, info.type, info.key_size, info.value_size, info.max_entries,
                   name if name is not None else info.name.decode(errors="replace"),
                   info.map_flags)

    @property
    def per_cpu(self) -> bool:
        return self.map_type in _PER_CPU_TYPES

    @property
    def _slot_size(self) -> int:
        return (self.value_size + 7) & ~7

    @property
    def _stored_size(self) -> int:
        return self._slot_size * possible_cpus() if self.per_cpu else self.value_size

    def lookup(self, key: bytes) -> bytes | None:
        """The value at `key` (per-CPU maps: every CPU's slot, joined), or
        None when there is none."""
        value = ctypes.create_string_buffer(self._stored_size)
        if libbpf().bpf_map_lookup_elem(self.fd, self._key(key), value) < 0:
            if ctypes.get_errno() == errno.ENOENT:
                return None
            self._fail("look up a key in")
        return value.raw

    def per_cpu_values(self, stored: bytes) -> list[bytes]:
        """A per-CPU map's value split into each CPU's `value_size` bytes."""
        slot = self._slot_size
        return [stored[i:i + self.value_size] for i in range(0, len(stored), slot)]

    def update(self, key: bytes, value: bytes) -> None:
        if libbpf().bpf_map_update_elem(self.fd, self._key(key), value, BPF_ANY) < 0:
            self._fail("update")

    def delete(self, key: bytes) -> bool:
        """Remove `key`; False when it was not there."""
        if libbpf().bpf_map_delete_elem(self.fd, self._key(key)) < 0:
            if ctypes.get_errno() == errno.ENOENT:
                return False
            self._fail("delete a key from")
        return True

    def keys(self) -> Iterator[bytes]:
        """Every key (a hash map changed meanwhile may repeat or skip a
        key, as with any get_next_key walk)."""
        key = None
        following = ctypes.create_string_buffer(self.key_size)
        while libbpf().bpf_map_get_next_key(self.fd, key, following) == 0:
            key = following.raw
            yield key

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        for key in self.keys():
            value = self.lookup(key)
            if value is not None:       # deleted since get_next_key
                yield key, value

    def _key(self, key: bytes) -> bytes:
        if len(key) != self.key_size:
            raise ValueError(f"map {self.name}: key of {len(key)} bytes, "
                             f"its keys have {self.key_size}")
        return key

    def _fail(self, action: str):
        raise RuntimeTraceError(f"cannot {action} BPF map {self.name}: "
                                f"{os.strerror(ctypes.get_errno())}")
