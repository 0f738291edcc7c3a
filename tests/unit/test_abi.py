"""gs_abi.h is read by pycparser; layouts follow the x86-64 ABI."""
from gs_cgen.abi import abi


def test_event_header_layout():
    hdr = abi().structs["gs_event_hdr"]
    assert hdr.size == 40
    assert [(f.name, f.offset) for f in hdr.fields][:3] == [
        ("timestamp_ns", 0), ("probe_id", 8), ("kind", 12)]


def test_key_and_offsets_value():
    key = abi().structs["proc_module_key"]
    assert (key.size, key.field("module_cookie").offset) == (16, 8)
    assert abi().structs["proc_module_offsets_value"].size == 32


def test_constants_and_map_names():
    a = abi()
    assert a.constants["GS_STATUS_OK"] == 0
    assert a.constants["GS_STATUS_OFFSETS_UNAVAILABLE"] == 5
    assert a.map_names["GS_MAP_OFFSETS"] == "proc_module_offsets"


def test_pack_unpack_round_trip():
    hdr = abi().structs["gs_event_hdr"]
    raw = hdr.pack(timestamp_ns=5, probe_id=2, pid=10, tid=11)
    assert hdr.unpack(raw)["probe_id"] == 2 and hdr.unpack(raw)["tid"] == 11
