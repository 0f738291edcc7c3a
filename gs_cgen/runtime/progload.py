"""Load a cached program (runtime/progcache.py) without BCC: create its
maps, patch their fds into the instructions, and pass each program
through the verifier with libbpf's low-level API (libbpf.so.1, which
BCC's libbcc depends on, so it is on every machine that has BCC).

BCC's own load does more (BTF for maps and programs, func and line info):
none of it changes what the kernel runs, only what bpftool shows.

The exec tracepoint BCC attaches by itself on compiling (TRACEPOINT_PROBE)
is attached here as BCC does: a tracepoint perf event with the program set
on it (`attach_tracepoint`).
"""
from __future__ import annotations

import ctypes
import fcntl
import functools
import os
from dataclasses import field

from gs_cgen.lazydataclass import dataclass
from gs_cgen.runtime.bpfmaps import BpfMap, libbpf
from gs_cgen.runtime.progcache import CachedProgram, patch_map_fds
from gs_cgen.runtime.sleepable import verifier_reason

BPF_PROG_TYPE_TRACEPOINT = 5
_LOG_SIZE = 1 << 16
_TRACEPOINT_PREFIX = "tracepoint__"
# include/uapi/linux/perf_event.h
_PERF_TYPE_TRACEPOINT = 2
_PERF_FLAG_FD_CLOEXEC = 8
_PERF_EVENT_IOC_ENABLE = 0x2400
_PERF_EVENT_IOC_SET_BPF = 0x40042408
_SYS_PERF_EVENT_OPEN = 298            # x86_64
_TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")


class CachedLoadFailed(Exception):
    """A cached program could not be loaded: compile instead."""


class _MapCreateOpts(ctypes.Structure):
    """struct bpf_map_create_opts (libbpf 1.x; `sz` says how much we pass)."""

    _fields_ = [("sz", ctypes.c_size_t), ("btf_fd", ctypes.c_uint32),
                ("btf_key_type_id", ctypes.c_uint32), ("btf_value_type_id", ctypes.c_uint32),
                ("btf_vmlinux_value_type_id", ctypes.c_uint32),
                ("inner_map_fd", ctypes.c_uint32), ("map_flags", ctypes.c_uint32),
                ("map_extra", ctypes.c_uint64), ("numa_node", ctypes.c_uint32),
                ("map_ifindex", ctypes.c_uint32)]


class _ProgLoadOpts(ctypes.Structure):
    """struct bpf_prog_load_opts (libbpf 1.x) up to log_buf."""

    _fields_ = [("sz", ctypes.c_size_t), ("attempts", ctypes.c_int),
                ("expected_attach_type", ctypes.c_int), ("prog_btf_fd", ctypes.c_uint32),
                ("prog_flags", ctypes.c_uint32), ("prog_ifindex", ctypes.c_uint32),
                ("kern_version", ctypes.c_uint32), ("attach_btf_id", ctypes.c_uint32),
                ("attach_prog_fd", ctypes.c_uint32), ("attach_btf_obj_fd", ctypes.c_uint32),
                ("fd_array", ctypes.c_void_p), ("func_info", ctypes.c_void_p),
                ("func_info_cnt", ctypes.c_uint32), ("func_info_rec_size", ctypes.c_uint32),
                ("line_info", ctypes.c_void_p), ("line_info_cnt", ctypes.c_uint32),
                ("line_info_rec_size", ctypes.c_uint32), ("log_level", ctypes.c_uint32),
                ("log_size", ctypes.c_uint32), ("log_buf", ctypes.c_void_p)]


@functools.cache
def _loader() -> ctypes.CDLL:
    lib = libbpf()
    lib.bpf_map_create.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32,
                                   ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p]
    lib.bpf_prog_load.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                                  ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    return lib


@dataclass
class LoadedProgram:
    """A cached program's maps and programs; it owns their fds."""

    maps: dict[str, BpfMap] = field(default_factory=dict)
    programs: dict[str, int] = field(default_factory=dict)     # function name -> prog fd
    events: list[int] = field(default_factory=list)            # tracepoint perf event fds

    def attach_tracepoints(self) -> None:
        """What BCC attaches by itself: every TRACEPOINT_PROBE."""
        for name, fd in self.programs.items():
            if name.startswith(_TRACEPOINT_PREFIX):
                self.events.append(attach_tracepoint(fd, name))

    def close(self) -> None:
        for fd in [*self.events, *self.programs.values(), *(m.fd for m in self.maps.values())]:
            try:
                os.close(fd)
            except OSError:
                pass
        self.events.clear()
        self.programs.clear()
        self.maps.clear()


def load_cached(cached: CachedProgram) -> LoadedProgram:
    """Every map made and every program loaded, or CachedLoadFailed (with
    nothing left open)."""
    loaded = LoadedProgram()
    try:
        fds = []
        for spec in cached.maps:
            fd = _create_map(spec)
            fds.append(fd)
            loaded.maps[spec.name] = BpfMap(fd, spec.map_type, spec.key_size, spec.value_size,
                                            spec.max_entries, spec.name, spec.flags)
        for program in cached.programs:
            loaded.programs[program.name] = _load_program(
                program, patch_map_fds(program.instructions, program.map_refs, fds))
    except BaseException:
        loaded.close()
        raise
    return loaded


def _create_map(spec) -> int:
    opts = _MapCreateOpts(sz=ctypes.sizeof(_MapCreateOpts), map_flags=spec.flags)
    fd = _loader().bpf_map_create(spec.map_type, spec.name[:15].encode(), spec.key_size,
                                  spec.value_size, spec.max_entries, ctypes.byref(opts))
    if fd < 0:
        raise CachedLoadFailed(f"cannot create map {spec.name}: {os.strerror(-fd)}")
    return fd


def _load_program(program, instructions: bytes) -> int:
    log = ctypes.create_string_buffer(_LOG_SIZE)
    # log_level 0 with a buffer: libbpf loads once and, only on failure,
    # again with the verifier log on (the reason we report).
    opts = _ProgLoadOpts(sz=ctypes.sizeof(_ProgLoadOpts), prog_flags=program.prog_flags,
                         expected_attach_type=max(program.expected_attach_type, 0),
                         log_size=_LOG_SIZE, log_buf=ctypes.addressof(log))
    insns = ctypes.create_string_buffer(instructions, len(instructions))
    fd = _loader().bpf_prog_load(program.prog_type, program.name[:15].encode(), b"GPL", insns,
                                 len(instructions) // 8, ctypes.byref(opts))
    if fd < 0:
        said = verifier_reason(log.value.decode(errors="replace"))
        raise CachedLoadFailed(f"the verifier refused cached {program.name}: "
                               f"{said or os.strerror(-fd)}")
    return fd


def attach_tracepoint(prog_fd: int, function_name: str) -> int:
    """Run `prog_fd` on the tracepoint BCC names `tracepoint__CATEGORY__EVENT`:
    the perf event's fd (closing it detaches)."""
    category, _, event = function_name[len(_TRACEPOINT_PREFIX):].partition("__")
    tracepoint_id = _tracepoint_id(category, event)
    attr = (ctypes.c_uint8 * 128)()            # struct perf_event_attr, zeroed
    ctypes.c_uint32.from_buffer(attr, 0).value = _PERF_TYPE_TRACEPOINT
    ctypes.c_uint32.from_buffer(attr, 4).value = len(attr)
    ctypes.c_uint64.from_buffer(attr, 8).value = tracepoint_id
    ctypes.c_uint64.from_buffer(attr, 16).value = 1            # sample_period
    ctypes.c_uint32.from_buffer(attr, 48).value = 1            # wakeup_events
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(_SYS_PERF_EVENT_OPEN, attr, -1, 0, -1, _PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        raise CachedLoadFailed(f"cannot open tracepoint {category}:{event}: "
                               f"{os.strerror(ctypes.get_errno())}")
    try:
        fcntl.ioctl(fd, _PERF_EVENT_IOC_SET_BPF, prog_fd)
        fcntl.ioctl(fd, _PERF_EVENT_IOC_ENABLE, 0)
    except OSError as exc:
        os.close(fd)
        raise CachedLoadFailed(f"cannot attach tracepoint {category}:{event}: "
                               f"{exc.strerror}") from None
    return fd


def _tracepoint_id(category: str, event: str) -> int:
    for tracefs in _TRACEFS:
        try:
            with open(f"{tracefs}/events/{category}/{event}/id", encoding="ascii") as f:
                return int(f.read())
        except (OSError, ValueError):
            continue
    raise CachedLoadFailed(f"no tracefs id for tracepoint {category}:{event}")
