"""runtime/btf.py: struct member offsets from BTF. The running kernel's
task_struct.thread.fsbase is checked against bpftool's dump of the same
BTF (scripts/setup.sh installs bpftool); the reader's corners (anonymous
unions, typedefs, kind_flag bitfield offsets, skipping kinds it does not
walk) on a blob built here, following the kernel's btf.h."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from gs_cgen.runtime import btf
from gs_cgen.runtime.btf import (VMLINUX_BTF, Btf, BtfError, pending_returns, task_member_offset,
                                thread_pointer)
from tests.prerequisites import require


def _bpftool() -> str | None:
    # Debian installs it in /usr/sbin, which a non-root PATH may lack.
    return shutil.which("bpftool") or shutil.which("bpftool", path="/usr/sbin:/sbin")


def _bpftool_member_bits(struct_name: str, member: str) -> tuple[int, int]:
    """(bits_offset, type_id) of `member` in `bpftool btf dump ... format raw`."""
    dump = subprocess.run([_bpftool(), "btf", "dump", "file", VMLINUX_BTF, "format", "raw"],
                          capture_output=True, text=True, check=True).stdout
    block = re.search(rf"^\[\d+\] STRUCT '{struct_name}' .*?\n((?:\t.*\n)+)", dump, re.MULTILINE)
    assert block, struct_name
    found = re.search(rf"^\t'{member}' type_id=(\d+) bits_offset=(\d+)", block.group(1),
                      re.MULTILINE)
    assert found, (struct_name, member)
    return int(found.group(2)), int(found.group(1))


def test_task_struct_fsbase_offset_is_bpftools(tmp_path, monkeypatch):
    if not Path(VMLINUX_BTF).exists():
        require(f"{VMLINUX_BTF} is missing (kernel without CONFIG_DEBUG_INFO_BTF)")
    if _bpftool() is None:
        require("bpftool is not installed")
    thread_bits, _ = _bpftool_member_bits("task_struct", "thread")
    fsbase_bits, _ = _bpftool_member_bits("thread_struct", "fsbase")
    expected = (thread_bits + fsbase_bits) // 8
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    assert thread_pointer().fsbase_offset == expected          # read from the BTF, then kept
    assert len(list((tmp_path / "gs-cgen" / "kernel").iterdir())) == 1

    def unread(*_):
        raise AssertionError("the BTF was read again")
    monkeypatch.setattr(btf, "_kernel_btf", unread)
    assert task_member_offset(("thread", "fsbase")) == expected   # from the cache
    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    with pytest.raises(AssertionError):
        task_member_offset(("thread", "fsbase"))


def test_pending_returns_layout_is_bpftools(tmp_path, monkeypatch):
    """The uretprobe list a `bt` probe walks: task_struct.utask ->
    uprobe_task.return_instances -> return_instance {stack,
    orig_ret_vaddr, next}, each offset as bpftool reads the same BTF."""
    if not Path(VMLINUX_BTF).exists():
        require(f"{VMLINUX_BTF} is missing (kernel without CONFIG_DEBUG_INFO_BTF)")
    if _bpftool() is None:
        require("bpftool is not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    layout = pending_returns()
    expected = [_bpftool_member_bits(owner, member)[0] // 8 for owner, member in (
        ("task_struct", "utask"), ("uprobe_task", "return_instances"),
        ("return_instance", "stack"), ("return_instance", "orig_ret_vaddr"),
        ("return_instance", "next"))]
    assert layout.known and [layout.utask, layout.return_instances, layout.stack,
                             layout.orig_ret_vaddr, layout.next] == expected
    assert pending_returns() == layout                        # from the cache
    missing = pending_returns(str(tmp_path / "vmlinux"))
    assert not missing.known and "No such file" in missing.unknown_reason


def test_unreadable_btf_is_a_reason_not_an_error(tmp_path):
    missing = thread_pointer(str(tmp_path / "vmlinux"))
    assert missing.fsbase_offset is None
    assert "No such file" in missing.unknown_reason and "fsbase" in missing.unknown_reason
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00" * 64)
    assert "not BTF" in thread_pointer(str(garbage)).unknown_reason


# ------------------------------------------------------ a hand-made blob

def _blob() -> bytes:
    names = ["", "long", "inner", "a", "b", "inner_t", "u1", "nested", "outer", "flags", "tail",
             "E", "V", "task_struct", "thread", "thread_struct", "fsbase", "odd"]
    strings = b"".join(n.encode() + b"\0" for n in names)
    at = {}
    pos = 0
    for n in names:
        at.setdefault(n, pos)
        pos += len(n) + 1

    def btf_type(name, kind, vlen, size_or_type, kind_flag=0):
        return struct.pack("<III", at[name], (kind_flag << 31) | (kind << 24) | vlen, size_or_type)

    def member(name, type_id, offset):
        return struct.pack("<III", at[name], type_id, offset)

    types = b"".join([
        btf_type("long", 1, 0, 8) + struct.pack("<I", 64),                   # 1 INT
        btf_type("inner", 4, 2, 16) + member("a", 1, 0) + member("b", 1, 64),  # 2
        btf_type("inner_t", 8, 0, 2),                                          # 3 TYPEDEF
        btf_type("", 5, 2, 16) + member("u1", 1, 0) + member("nested", 3, 0),  # 4 anon UNION
        btf_type("outer", 4, 4, 48, kind_flag=1)                               # 5 STRUCT
        + member("flags", 1, (3 << 24) | 0) + member("", 4, 64)
        + member("tail", 1, 256) + member("odd", 1, (2 << 24) | 323),
        btf_type("E", 19, 1, 8) + struct.pack("<III", at["V"], 1, 0),         # 6 ENUM64
        btf_type("task_struct", 4, 1, 64) + member("thread", 9, 128),          # 7
        btf_type("", 10, 0, 8),                                                # 8 CONST
        btf_type("thread_struct", 4, 1, 16) + member("fsbase", 1, 64),        # 9
    ])
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


def test_members_through_anonymous_unions_and_typedefs():
    btf = Btf(_blob())
    assert btf.member_offset("outer", ("u1",)) == 8
    assert btf.member_offset("outer", ("nested", "b")) == 16
    assert btf.member_offset("outer", ("tail",)) == 32          # kind_flag: low 24 bits
    assert btf.member_offset("task_struct", ("thread", "fsbase")) == 24   # through CONST


def test_what_cannot_be_answered_raises_btf_error():
    btf = Btf(_blob())
    with pytest.raises(BtfError, match="no member"):
        btf.member_offset("outer", ("nope",))
    with pytest.raises(BtfError, match="bitfield"):
        btf.member_offset("outer", ("odd",))
    with pytest.raises(BtfError, match="no struct"):
        btf.member_offset("missing", ("a",))
    unknown_kind = bytearray(_blob())
    unknown_kind[24 + 7] = 31                # type 1's kind byte: 31 is no kind
    with pytest.raises(BtfError, match="kind 31"):
        Btf(bytes(unknown_kind)).member_offset("outer", ("u1",))
