"""Uprobes as BPF links (BPF_LINK_CREATE, BPF_TRACE_UPROBE_MULTI; Linux 6.6+).

Why not BCC's perf-event uprobes. Closing a uprobe perf event costs
~110 ms on this kernel: perf_uprobe_destroy waits for several RCU grace
periods (uprobe_unregister_sync, the BPF program's detach) under the
global event_mutex, so closes queue up even from many threads, and 100
probes took 12 s to detach. A uprobe_multi link's release waits for the
same grace periods, but under no global lock: closing every link from its
own thread lets the kernel share the grace periods (100 links: 0.09 s).

Links keep the guarantee the perf events gave (DESIGN.md "Probes that
clean themselves up"): a link lives as long as its fd, so the kernel
removes the uprobe when the tracer exits, even on SIGKILL.

A program attached by a uprobe_multi link must be loaded with expected
attach type BPF_TRACE_UPROBE_MULTI (and then cannot be attached through
a perf event), so the choice is made once, before loading: support is
asked of the kernel with a two-instruction program and a link request on
a path that does not exist (ENOENT: the kernel knows the link type and
got as far as the path; no uprobe is made). `GS_CGEN_UPROBE_MULTI=off`
turns links off (tests force the perf-event path with it).
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Callable, Iterable, Sequence

from gs_cgen.runtime.bpfcall import BPF_PROG_LOAD, ProgLoadAttr, bpf

# include/uapi/linux/bpf.h (checked against this kernel's BTF, see tests)
BPF_LINK_CREATE = 28
BPF_PROG_TYPE_KPROBE = 2
BPF_TRACE_UPROBE_MULTI = 48
BPF_F_UPROBE_MULTI_RETURN = 1       # uprobe_multi.flags: a uretprobe
SWITCH_VARIABLE = "GS_CGEN_UPROBE_MULTI"
_OFF = ("0", "off", "no", "false")
_MISSING_PATH = b"/nonexistent/gs-cgen/uprobe-multi-probe"


class LinkCreateAttr(ctypes.Structure):
    """The BPF_LINK_CREATE part of union bpf_attr with its uprobe_multi
    member (the kernel zeroes what a shorter attr leaves out)."""

    _fields_ = [("prog_fd", ctypes.c_uint32), ("target_fd", ctypes.c_uint32),
                ("attach_type", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("path", ctypes.c_uint64), ("offsets", ctypes.c_uint64),
                ("ref_ctr_offsets", ctypes.c_uint64), ("cookies", ctypes.c_uint64),
                ("cnt", ctypes.c_uint32), ("multi_flags", ctypes.c_uint32),
                ("pid", ctypes.c_uint32), ("_pad", ctypes.c_uint32)]


_RETURN_ZERO = bytes([0xb7, 0, 0, 0, 0, 0, 0, 0,      # mov64 r0, 0
                      0x95, 0, 0, 0, 0, 0, 0, 0])     # exit


def links_refusal(environ=os.environ) -> str:
    """Why uprobes cannot be BPF links here ('' when they can)."""
    setting = environ.get(SWITCH_VARIABLE, "")
    if setting.lower() in _OFF:
        return f"{SWITCH_VARIABLE}={setting}"
    return kernel_refusal()


@functools.cache
def kernel_refusal() -> str:
    """Asked of the kernel once per process."""
    insns = ctypes.create_string_buffer(_RETURN_ZERO, len(_RETURN_ZERO))
    license_ = ctypes.create_string_buffer(b"GPL")
    load = ProgLoadAttr(prog_type=BPF_PROG_TYPE_KPROBE, insn_cnt=len(_RETURN_ZERO) // 8,
                         insns=ctypes.addressof(insns), license=ctypes.addressof(license_),
                         prog_name=b"gs_link_probe", expected_attach_type=BPF_TRACE_UPROBE_MULTI)
    prog_fd, err = bpf(BPF_PROG_LOAD, load)
    if prog_fd < 0:
        return f"cannot load a uprobe_multi program: {os.strerror(err)}"
    try:
        fd, err = attach_link(prog_fd, _MISSING_PATH, [(0, 0)], None)
    finally:
        os.close(prog_fd)
    if fd >= 0:                               # cannot happen: the path does not exist
        os.close(fd)
        return ""
    if err == 2:                              # ENOENT: the kernel looked the path up
        return ""
    return f"the kernel has no uprobe_multi links ({os.strerror(err)})"


def attach_link(prog_fd: int, path: bytes, uprobes: Sequence[tuple[int, int]],
                pid: int | None, at_return: bool = False) -> tuple[int, int]:
    """One link: a uprobe at each (file offset, cookie) of `path`, running
    program `prog_fd`, for process `pid` only (None: every process): (link
    fd, 0) or (-1, errno). The cookie is what bpf_get_attach_cookie() gives
    the program at that uprobe. `at_return`: uretprobes (at a function's
    first instruction; the program runs when the call returns)."""
    path_buffer = ctypes.create_string_buffer(path)
    offsets = (ctypes.c_uint64 * len(uprobes))(*(offset for offset, _ in uprobes))
    cookies = (ctypes.c_uint64 * len(uprobes))(*(cookie for _, cookie in uprobes))
    attr = LinkCreateAttr(prog_fd=prog_fd, attach_type=BPF_TRACE_UPROBE_MULTI,
                          path=ctypes.addressof(path_buffer), offsets=ctypes.addressof(offsets),
                          cookies=ctypes.addressof(cookies),
                          cnt=len(uprobes), pid=0 if pid is None else pid,
                          multi_flags=BPF_F_UPROBE_MULTI_RETURN if at_return else 0)
    return bpf(BPF_LINK_CREATE, attr)


# Closes in flight at once: enough for the grace periods to be shared by
# hundreds of probes, few enough threads for any machine.
MAX_CONCURRENT_CLOSES = 64


def close_concurrently(fds: Iterable[int], close: Callable[[int], object] = os.close) -> None:
    """Close every fd, up to MAX_CONCURRENT_CLOSES at once: each close of
    a uprobe waits for RCU grace periods, which concurrent closes share
    (ctypes calls and os.close release the GIL while they wait)."""
    fds = list(fds)
    workers = min(len(fds), MAX_CONCURRENT_CLOSES)
    if workers <= 1:
        for fd in fds:
            close(fd)
        return

    def close_share(share: list[int]) -> None:
        for fd in share:
            close(fd)

    threads = [threading.Thread(target=close_share, args=(fds[i::workers],), daemon=True)
               for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
