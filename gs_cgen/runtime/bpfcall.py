"""bpf(2) called directly, for the commands gs-cgen issues without a
library in between: probing the kernel with tiny programs, uprobe_multi
links (libbpf 1.1, Debian's, predates them), run-time statistics."""
from __future__ import annotations

import ctypes

SYS_BPF = 321                       # x86_64 (arch/x86/entry/syscalls/syscall_64.tbl)
BPF_PROG_LOAD = 5


class ProgLoadAttr(ctypes.Structure):
    """The BPF_PROG_LOAD part of union bpf_attr, up to expected_attach_type
    (the kernel takes a shorter attr and zeroes the rest)."""

    _fields_ = [("prog_type", ctypes.c_uint32), ("insn_cnt", ctypes.c_uint32),
                ("insns", ctypes.c_uint64), ("license", ctypes.c_uint64),
                ("log_level", ctypes.c_uint32), ("log_size", ctypes.c_uint32),
                ("log_buf", ctypes.c_uint64), ("kern_version", ctypes.c_uint32),
                ("prog_flags", ctypes.c_uint32), ("prog_name", ctypes.c_char * 16),
                ("prog_ifindex", ctypes.c_uint32), ("expected_attach_type", ctypes.c_uint32)]


def bpf(command: int, attr: ctypes.Structure) -> tuple[int, int]:
    """bpf(2): (result, errno)."""
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(SYS_BPF, command, ctypes.byref(attr), ctypes.sizeof(attr))
    return result, (ctypes.get_errno() if result < 0 else 0)
