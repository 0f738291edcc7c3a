"""--stats: what each probe costs the target (CONTRACT.md "Statistics").

The kernel counts, per BPF program, how often it ran and the ns it spent
(struct bpf_prog_info run_cnt / run_time_ns) only while someone holds a
BPF_ENABLE_STATS(BPF_STATS_RUN_TIME) fd: the session opens one before it
attaches and closes it at the end. Under --stats (and --metrics) each probe has its own
program (no shared programs: cli.py), so a program's numbers are its probe's. Events sent and lost
come from the probes' own per-probe, per-CPU counters (GS_MAP_COUNTS).

The layouts below are include/uapi/linux/bpf.h's; tests/unit/runtime/
test_stats.py checks them against the running kernel's BTF.
"""
from __future__ import annotations

import ctypes
import os

from gs_cgen.errors import RuntimeTraceError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.runtime.bpfcall import bpf

BPF_OBJ_GET_INFO_BY_FD = 15
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0


class EnableStatsAttr(ctypes.Structure):
    """union bpf_attr, BPF_ENABLE_STATS: `enable_stats.type`."""

    _fields_ = [("type", ctypes.c_uint32)]


class InfoByFdAttr(ctypes.Structure):
    """union bpf_attr, BPF_OBJ_GET_INFO_BY_FD: `info.bpf_fd/info_len/info`."""

    _fields_ = [("bpf_fd", ctypes.c_uint32), ("info_len", ctypes.c_uint32),
                ("info", ctypes.c_uint64)]


# struct bpf_prog_info: byte offsets of the members read (the kernel fills
# as much as info_len asks, so a buffer up to run_cnt is enough).
PROG_INFO_RUN_TIME_NS = 192
PROG_INFO_RUN_CNT = 200
_PROG_INFO_SIZE = PROG_INFO_RUN_CNT + 8


def enable_run_time_stats() -> int:
    """The fd that keeps the kernel's BPF run-time statistics on (close it
    to turn them off again, unless someone else holds one too)."""
    fd, err = bpf(BPF_ENABLE_STATS, EnableStatsAttr(BPF_STATS_RUN_TIME))
    if fd < 0:
        raise RuntimeTraceError(f"--stats/--metrics: the kernel refused BPF_ENABLE_STATS: "
                                f"{os.strerror(err)}",
                                hints=("it needs Linux 5.8+ and CAP_SYS_ADMIN",))
    return fd


@dataclass(frozen=True)
class ProgramRunTime:
    run_count: int
    run_time_ns: int


def program_run_time(prog_fd: int) -> ProgramRunTime:
    """run_cnt and run_time_ns of one loaded program."""
    info = ctypes.create_string_buffer(_PROG_INFO_SIZE)
    attr = InfoByFdAttr(prog_fd, _PROG_INFO_SIZE, ctypes.addressof(info))
    result, err = bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    if result < 0:
        raise RuntimeTraceError(f"--stats/--metrics: cannot read BPF program {prog_fd}'s statistics: "
                                f"{os.strerror(err)}")
    raw = info.raw
    return ProgramRunTime(int.from_bytes(raw[PROG_INFO_RUN_CNT:PROG_INFO_RUN_CNT + 8], "little"),
                          int.from_bytes(raw[PROG_INFO_RUN_TIME_NS:PROG_INFO_RUN_TIME_NS + 8],
                                         "little"))


@dataclass(frozen=True)
class ProbeStats:
    pattern: str
    where: str            # module+0xADDR
    hits: int
    run_time_ns: int
    sent: int
    lost: int

    @property
    def average_ns(self) -> int | None:
        return self.run_time_ns // self.hits if self.hits else None


def stats_table(rows: list[ProbeStats]) -> str:
    """The --stats report: one row per probe, aligned columns."""
    header = ("probe", "where", "hits", "avg ns/hit", "events sent", "events lost")
    cells = [header] + [(r.pattern, r.where, str(r.hits),
                         "-" if r.average_ns is None else str(r.average_ns),
                         str(r.sent), str(r.lost)) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        left = [row[i].ljust(widths[i]) for i in range(2)]
        right = [row[i].rjust(widths[i]) for i in range(2, len(header))]
        lines.append("  ".join(left + right).rstrip())
    return "\n".join(lines)
