"""runtime/stats.py: the bpf_attr and bpf_prog_info layouts against the
running kernel's BTF, and the --stats table."""
from __future__ import annotations

from pathlib import Path

import pytest

from gs_cgen.runtime import btf, stats
from tests.prerequisites import require


@pytest.fixture(scope="module")
def kernel_btf():
    require(None if Path(btf.VMLINUX_BTF).exists() else "no kernel BTF")
    return btf.Btf(Path(btf.VMLINUX_BTF).read_bytes())


@pytest.mark.parametrize("structure, field, path", [
    (stats.EnableStatsAttr, "type", ("enable_stats", "type")),
    (stats.InfoByFdAttr, "bpf_fd", ("info", "bpf_fd")),
    (stats.InfoByFdAttr, "info_len", ("info", "info_len")),
    (stats.InfoByFdAttr, "info", ("info", "info")),
])
def test_bpf_attr_layout_is_the_kernels(kernel_btf, structure, field, path):
    assert getattr(structure, field).offset == \
        kernel_btf.member_offset("bpf_attr", path, kind=btf.KIND_UNION)


def test_prog_info_offsets_are_the_kernels(kernel_btf):
    assert stats.PROG_INFO_RUN_TIME_NS == kernel_btf.member_offset("bpf_prog_info",
                                                                   ("run_time_ns",))
    assert stats.PROG_INFO_RUN_CNT == kernel_btf.member_offset("bpf_prog_info", ("run_cnt",))


def test_table_has_one_aligned_row_per_probe():
    rows = [stats.ProbeStats("record", "app+0x1155", 10, 32420, 3, 0),
            stats.ProbeStats("spread", "app+0x1167", 0, 0, 0, 0)]
    assert stats.stats_table(rows).splitlines() == [
        "probe   where       hits  avg ns/hit  events sent  events lost",
        "record  app+0x1155    10        3242            3            0",
        "spread  app+0x1167     0           -            0            0"]
