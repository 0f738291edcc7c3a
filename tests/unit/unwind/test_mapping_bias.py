"""mapping_bias: which PT_LOAD segment a /proc/PID/maps line maps."""
from __future__ import annotations

from types import SimpleNamespace

from gs_cgen.dwarf.model import LoadSegment
from gs_cgen.unwind.backtrace import mapping_bias

# rustc's (lld's) layout of tests/fixtures/rust/values.rs: the code segment
# starts in the page where the read-only segment ends, one page higher in
# memory than in the file.
_LLD = SimpleNamespace(segments=(
    LoadSegment(0x0, 0x1FA0C, 0x0, 0x1FA0C, False, False),
    LoadSegment(0x20A10, 0x6D380, 0x1FA10, 0x6D380, True, False),
    LoadSegment(0x8ED90, 0x4270, 0x8CD90, 0x3A58, False, True),
))


def test_a_mapping_is_the_segment_that_starts_in_its_first_page():
    # maps: 557a27476000-557a274e4000 r-xp 0001f000 values_O0
    base = 0x557A27456000
    assert mapping_bias(_LLD, base + 0x20000, 0x1F000) == base
    assert mapping_bias(_LLD, base, 0x0) == base
    assert mapping_bias(_LLD, base + 0x8E000, 0x8C000) == base


def test_a_mapping_of_no_segment_has_no_bias():
    assert mapping_bias(_LLD, 0x1000, 0x200000) is None
