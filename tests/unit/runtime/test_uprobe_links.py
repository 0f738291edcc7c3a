"""runtime/uprobe_links.py: the BPF_LINK_CREATE layout against the running
kernel's BTF, and concurrent closing."""
from __future__ import annotations

import ctypes
import threading
import time
from pathlib import Path

import pytest

from gs_cgen.runtime import btf
from gs_cgen.runtime.uprobe_links import (LinkCreateAttr, MAX_CONCURRENT_CLOSES,
                                          close_concurrently, links_refusal)
from tests.prerequisites import require


@pytest.fixture(scope="module")
def kernel_btf():
    require(None if Path(btf.VMLINUX_BTF).exists() else "no kernel BTF")
    return btf.Btf(Path(btf.VMLINUX_BTF).read_bytes())


@pytest.mark.parametrize("field, path", [
    ("prog_fd", ("link_create", "prog_fd")),
    ("target_fd", ("link_create", "target_fd")),
    ("attach_type", ("link_create", "attach_type")),
    ("flags", ("link_create", "flags")),
    ("path", ("link_create", "uprobe_multi", "path")),
    ("offsets", ("link_create", "uprobe_multi", "offsets")),
    ("ref_ctr_offsets", ("link_create", "uprobe_multi", "ref_ctr_offsets")),
    ("cookies", ("link_create", "uprobe_multi", "cookies")),
    ("cnt", ("link_create", "uprobe_multi", "cnt")),
    ("multi_flags", ("link_create", "uprobe_multi", "flags")),
    ("pid", ("link_create", "uprobe_multi", "pid")),
])
def test_link_create_layout_is_the_kernels(kernel_btf, field, path):
    try:
        expected = kernel_btf.member_offset("bpf_attr", path, kind=btf.KIND_UNION)
    except btf.BtfError as exc:
        pytest.skip(f"this kernel has no uprobe_multi links: {exc}")
    assert getattr(LinkCreateAttr, field).offset == expected


def test_links_can_be_switched_off():
    assert links_refusal({"GS_CGEN_UPROBE_MULTI": "off"}) == "GS_CGEN_UPROBE_MULTI=off"


def test_every_fd_is_closed_and_the_closes_overlap():
    closed, running, most = [], [0], [0]
    lock = threading.Lock()

    def slow_close(fd):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)                  # a close waiting for a grace period
        with lock:
            running[0] -= 1
            closed.append(fd)

    started = time.monotonic()
    close_concurrently(range(200), close=slow_close)
    assert sorted(closed) == list(range(200))
    assert most[0] == MAX_CONCURRENT_CLOSES
    assert time.monotonic() - started < 200 * 0.05 / 4


def test_one_fd_is_closed_in_the_callers_thread():
    seen = []
    close_concurrently([5], close=lambda fd: seen.append((fd, threading.current_thread())))
    assert seen == [(5, threading.main_thread())]


def test_the_attr_is_as_long_as_the_kernel_reads():
    assert ctypes.sizeof(LinkCreateAttr) == 64
