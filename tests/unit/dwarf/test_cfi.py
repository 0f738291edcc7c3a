"""The .eh_frame_hdr binary search agrees with a full parse of .eh_frame."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.cfi import CallFrames, CfaRule, CfaUnavailable


@pytest.mark.parametrize("build", ("O0", "O2"))
def test_header_lookup_matches_full_scan(binaries, build):
    module = open_module(binaries[build])
    fast = module._frames
    slow = CallFrames(fast._dwarfinfo, b"", 0)          # no header: parses every FDE
    for name in ("add", "scale", "sum_array", "move_point", "main", "util_a"):
        (site,) = module.find_functions(name)
        for pc in range(site.low_pc, site.high_pc):
            assert fast.cfa_at(pc) == slow.cfa_at(pc), (name, hex(pc))


def test_entry_and_frame_pointer_rules(binaries):
    module = open_module(binaries["O0"])
    (site,) = module.find_functions("add")
    assert module._frames.cfa_at(site.low_pc) == CfaRule(7, 8)        # rsp+8
    assert module._frames.cfa_at(site.probe_address) == CfaRule(6, 16)  # rbp+16


def test_pc_without_fde(binaries):
    with pytest.raises(CfaUnavailable):
        open_module(binaries["O0"])._frames.cfa_at(0x10)
