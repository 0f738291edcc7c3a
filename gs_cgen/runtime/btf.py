"""Kernel struct offsets from the running kernel's BTF
(/sys/kernel/btf/vmlinux), so that generated C never depends on the
installed kernel headers' layouts (DESIGN.md "Kernel headers").

BTF is a header, a type section and a string section
(https://docs.kernel.org/bpf/btf.html): each type is a 12-byte
`struct btf_type` followed by kind-specific data of a size its kind and
vlen give, and type ids count from 1 in file order. Only what is needed to
walk struct members is decoded here.
"""
from __future__ import annotations

import functools
import os
import struct

from gs_cgen.cachedir import cache_root, read_entry, write_entry
from gs_cgen.digest import name_digest
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import PendingReturnsLayout, ThreadPointer
from gs_cgen.runtime.progcache import kernel_identity

VMLINUX_BTF = "/sys/kernel/btf/vmlinux"
_MAGIC = 0xEB9F
_HEADER = struct.Struct("<HBBIIIII")     # magic, version, flags, hdr_len, type_off/len, str_off/len

# Kinds (include/uapi/linux/btf.h) and the 32-bit words that follow the
# 3-word struct btf_type: a fixed count, or a count per vlen entry
# (btf_member, btf_enum, btf_param, btf_var_secinfo, btf_enum64...).
KIND_STRUCT, KIND_UNION = 4, 5
_KIND_TYPEDEF, _KIND_VOLATILE, _KIND_CONST, _KIND_RESTRICT, _KIND_TYPE_TAG = 8, 9, 10, 11, 18
_FIXED_WORDS = {1: 1, 2: 0, 3: 3, 7: 0, 8: 0, 9: 0, 10: 0, 11: 0, 12: 0, 14: 1, 16: 0,
                17: 1, 18: 0}
_PER_VLEN_WORDS = {4: 3, 5: 3, 6: 2, 13: 2, 15: 3, 19: 3}
_MODIFIERS = (_KIND_TYPEDEF, _KIND_VOLATILE, _KIND_CONST, _KIND_RESTRICT, _KIND_TYPE_TAG)


class BtfError(Exception):
    """BTF that cannot be read or does not describe what was asked."""


@dataclass(frozen=True)
class _Type:
    name_off: int
    kind: int
    kind_flag: bool
    vlen: int
    size_or_type: int
    extra: int                 # word index of the kind-specific data


class Btf:
    """The types of one BTF blob, decoded on demand: decoding all of
    vmlinux's ~130k types costs a second."""

    def __init__(self, data: bytes) -> None:
        if len(data) < _HEADER.size:
            raise BtfError("too short for a BTF header")
        magic, _, _, hdr_len, type_off, type_len, str_off, str_len = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise BtfError(f"not BTF (magic 0x{magic:04x})")
        if type_len % 4:
            raise BtfError("type section is not a whole number of 32-bit words")
        start = hdr_len + type_off
        # Every BTF record is made of 32-bit words (btf.h), so the section is
        # read as words: a type's info word is at index start + 1.
        self._words = memoryview(data[start:start + type_len]).cast("I")
        self._strings = data[hdr_len + str_off:hdr_len + str_off + str_len]
        self._starts: list[int] = [-1]       # by type id; id 0 (void) has none
        self._scanned = 0                    # word index of the next type to list

    def _start(self, type_id: int) -> int | None:
        """Word index of type `type_id`, None past the last type. Types
        are walked only as far as asked: vmlinux lists task_struct among
        its first few hundred of ~130k types."""
        words, starts = self._words, self._starts
        while len(starts) <= type_id and self._scanned < len(words):
            at = self._scanned
            info = words[at + 1]
            kind = (info >> 24) & 0x1F
            extra = _FIXED_WORDS.get(kind)
            if extra is None:
                per = _PER_VLEN_WORDS.get(kind)
                if per is None:
                    raise BtfError(f"type {len(starts)} has kind {kind}, unknown to this reader")
                extra = per * (info & 0xFFFF)
            starts.append(at)
            self._scanned = at + 3 + extra
        return starts[type_id] if 0 < type_id < len(starts) else None

    def _type(self, type_id: int) -> _Type | None:
        at = self._start(type_id)
        if at is None:
            return None
        name_off, info, size_or_type = self._words[at:at + 3]
        return _Type(name_off, (info >> 24) & 0x1F, bool(info >> 31), info & 0xFFFF,
                     size_or_type, at + 3)

    def _string(self, offset: int) -> str:
        end = self._strings.find(b"\0", offset)
        return self._strings[offset:end].decode("utf-8", "replace")

    def _struct_named(self, name: str, kind: int = KIND_STRUCT) -> int | None:
        """The id of the first struct (or union, by `kind`) called `name`
        (by its string offset: comparing numbers is what keeps the scan fast)."""
        wanted, pos = set(), self._strings.find(b"\0" + name.encode() + b"\0")
        while pos >= 0:
            wanted.add(pos + 1)
            pos = self._strings.find(b"\0" + name.encode() + b"\0", pos + 1)
        words, type_id = self._words, 1
        while (at := self._start(type_id)) is not None:
            if words[at] in wanted and (words[at + 1] >> 24) & 0x1F == kind:
                return type_id
            type_id += 1
        return None

    def member_offset(self, struct_name: str, path: tuple[str, ...],
                      kind: int = KIND_STRUCT) -> int:
        """Byte offset of `path` (`("thread", "fsbase")`) inside `struct
        struct_name` (or the union, by `kind`), members of anonymous structs
        and unions included."""
        type_id = self._struct_named(struct_name, kind)
        if type_id is None:
            raise BtfError(f"no struct {struct_name}")
        total = 0
        for name in path:
            found = self._member(type_id, name)
            if found is None:
                raise BtfError(f"struct {struct_name} has no member {'.'.join(path)}")
            type_id, bits = found
            if bits % 8:
                raise BtfError(f"{struct_name}.{'.'.join(path)} is a bitfield")
            total += bits // 8
        return total

    def _member(self, type_id: int, name: str) -> tuple[int, int] | None:
        """(type id, bit offset) of member `name` of struct/union `type_id`."""
        owner = self._resolved(type_id)
        if owner is None or owner.kind not in (KIND_STRUCT, KIND_UNION):
            return None
        for index in range(owner.vlen):
            name_off, member_type, offset = self._words[owner.extra + 3 * index:
                                                        owner.extra + 3 * index + 3]
            # With kind_flag, the low 24 bits are the offset, the high 8 a bitfield size.
            bits = offset & 0xFFFFFF if owner.kind_flag else offset
            member_name = self._string(name_off)
            if member_name == name:
                return member_type, bits
            if not member_name:                     # an anonymous struct or union
                inner = self._member(member_type, name)
                if inner is not None:
                    return inner[0], bits + inner[1]
        return None

    def _resolved(self, type_id: int) -> _Type | None:
        """The type itself, through typedefs and qualifiers."""
        for _ in range(16):
            found = self._type(type_id)
            if found is None or found.kind not in _MODIFIERS:
                return found
            type_id = found.size_or_type
        return None


_CACHE_VERSION = 2         # of the offsets kept by kernel build (member_offsets)


@functools.lru_cache(maxsize=4)
def _kernel_btf(path: str, _mtime_ns: int, _size: int) -> Btf:
    with open(path, "rb") as f:
        return Btf(f.read())


def task_member_offset(member_path: tuple[str, ...], path: str = VMLINUX_BTF) -> int:
    """Offset of a task_struct member in the running kernel; raises
    OSError or BtfError."""
    (offset,) = member_offsets((("task_struct", member_path),), path)
    return offset


def member_offsets(members, path: str = VMLINUX_BTF) -> tuple[int, ...]:
    """Offsets of (struct name, member path) pairs in the running kernel;
    raises OSError or BtfError. The running kernel's answer is kept in the
    cache directory by kernel build: reading and scanning its 5 MB of BTF
    took ~15 ms of every trace start."""
    st = os.stat(path)
    spelled = " ".join(f"{name}.{'.'.join(member)}" for name, member in members)
    key = f"{kernel_identity()} btf {st.st_size} {spelled}"
    entry = _cache_entry(key) if path == VMLINUX_BTF else None
    cached = read_entry(entry, _CACHE_VERSION, key) if entry else None
    if isinstance(cached, tuple) and len(cached) == len(members) and \
            all(isinstance(n, int) for n in cached):
        return cached
    btf = _kernel_btf(path, st.st_mtime_ns, st.st_size)
    offsets = tuple(btf.member_offset(name, member) for name, member in members)
    if entry:
        write_entry(entry, _CACHE_VERSION, key, offsets)
    return offsets


def _cache_entry(key: str) -> str | None:
    root = cache_root()
    return os.path.join(root, "kernel", f"{name_digest(key)}.marshal") if root else None



_RETURN_LIST = (("task_struct", ("utask",)), ("uprobe_task", ("return_instances",)),
                ("return_instance", ("stack",)), ("return_instance", ("orig_ret_vaddr",)),
                ("return_instance", ("next",)))


def pending_returns(path: str = VMLINUX_BTF) -> PendingReturnsLayout:
    """Where a probe finds the return addresses the kernel's uretprobes
    replaced (task_struct.utask->return_instances), or why it cannot."""
    try:
        return PendingReturnsLayout(*member_offsets(_RETURN_LIST, path))
    except OSError as exc:
        return PendingReturnsLayout(unknown_reason=f"cannot read {path} ({exc.strerror})")
    except BtfError as exc:
        return PendingReturnsLayout(unknown_reason=f"{path}: {exc}")


def thread_pointer(path: str = VMLINUX_BTF) -> ThreadPointer:
    """Where probes find the thread pointer: task_struct.thread.fsbase,
    or why its offset is unknown (then TLS values say so)."""
    try:
        return ThreadPointer(task_member_offset(("thread", "fsbase"), path))
    except OSError as exc:
        return ThreadPointer(None, f"cannot read {path} ({exc.strerror}) for the offset of "
                                   "task_struct.thread.fsbase")
    except BtfError as exc:
        return ThreadPointer(None, f"{path}: {exc}")
