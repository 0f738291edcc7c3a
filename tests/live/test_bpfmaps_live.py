"""runtime/bpfmaps.py on real kernel maps (made with libbpf's
bpf_map_create): every operation's bytes, per-CPU slots, missing keys."""
from __future__ import annotations

import ctypes
import os
import struct

import pytest

from gs_cgen.runtime.bpfmaps import BpfMap, libbpf, possible_cpus

BPF_MAP_TYPE_HASH = 1
BPF_MAP_TYPE_PERCPU_ARRAY = 6


@pytest.fixture
def make_map():
    created = []

    def make(map_type: int, key_size: int, value_size: int, entries: int) -> BpfMap:
        create = libbpf().bpf_map_create
        create.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                           ctypes.c_uint32, ctypes.c_void_p]
        fd = create(map_type, b"gs_test_map", key_size, value_size, entries, None)
        assert fd >= 0, os.strerror(ctypes.get_errno())
        created.append(fd)
        return BpfMap.from_fd(fd)

    yield make
    for fd in created:
        os.close(fd)


def test_hash_map_round_trip(make_map):
    table = make_map(BPF_MAP_TYPE_HASH, 8, 4, 16)
    assert (table.map_type, table.key_size, table.value_size, table.max_entries,
            table.name) == (BPF_MAP_TYPE_HASH, 8, 4, 16, "gs_test_map")
    assert not table.per_cpu
    key = struct.pack("<Q", 42)
    assert table.lookup(key) is None
    assert table.delete(key) is False
    table.update(key, struct.pack("<i", -7))
    table.update(struct.pack("<Q", 43), struct.pack("<i", 9))
    assert struct.unpack("<i", table.lookup(key)) == (-7,)
    assert sorted(struct.unpack("<Q", k)[0] for k in table.keys()) == [42, 43]
    assert dict(table.items())[struct.pack("<Q", 43)] == struct.pack("<i", 9)
    assert table.delete(key) is True
    assert [struct.unpack("<Q", k)[0] for k in table.keys()] == [43]


def test_per_cpu_values_are_one_slot_per_possible_cpu(make_map):
    table = make_map(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 12, 2)
    assert table.per_cpu
    cpus = possible_cpus()
    # each CPU's slot is rounded up to 8 bytes: 16 per CPU here
    stored = b"".join(struct.pack("<iii", cpu, cpu * 2, cpu * 3) + b"\0" * 4
                      for cpu in range(cpus))
    table.update(struct.pack("<I", 1), stored)
    values = table.per_cpu_values(table.lookup(struct.pack("<I", 1)))
    assert [struct.unpack("<iii", v) for v in values] == \
        [(cpu, cpu * 2, cpu * 3) for cpu in range(cpus)]


def test_a_key_of_the_wrong_size_is_refused(make_map):
    table = make_map(BPF_MAP_TYPE_HASH, 8, 4, 4)
    with pytest.raises(ValueError, match="key of 4 bytes, its keys have 8"):
        table.lookup(b"\0" * 4)
