"""Read the aggregation maps (and --stats' per-probe numbers) out of a
live session: bytes only, summed over CPUs; render/aggregations.py and
runtime/stats.py's table turn them into text."""
from __future__ import annotations

import os
import struct

from gs_cgen.abi import abi
from gs_cgen.emit.aggregations import map_name
from gs_cgen.plan.model import AggregationPlan
from gs_cgen.render.aggregations import AggregationSnapshot
from gs_cgen.runtime.stats import ProbeStats, program_run_time

_U64 = (1 << 64) - 1


def read_aggregations(session, aggregations: tuple[AggregationPlan, ...]
                      ) -> list[AggregationSnapshot]:
    """Every aggregation's keys and values (summed over CPUs), and how many
    hits each dropped for want of room."""
    if not aggregations:
        return []
    dropped = session.aggregation_map(abi().map_names["GS_MAP_AGG_DROPPED"])
    snapshots = []
    for aggregation in aggregations:
        bpf_map = session.aggregation_map(map_name(aggregation))
        entries = tuple((key, _summed(bpf_map.per_cpu_values(stored)))
                        for key, stored in bpf_map.items())
        lost = dropped.lookup(struct.pack("<I", aggregation.index))
        lost_total = sum(_summed(dropped.per_cpu_values(lost))) if lost else 0
        snapshots.append(AggregationSnapshot(aggregation, entries, lost_total))
    return snapshots


def _summed(per_cpu: list[bytes]) -> tuple[int, ...]:
    """Word-wise sum over CPUs, mod 2^64 (a sum of negative values wraps)."""
    words = len(per_cpu[0]) // 8
    totals = [0] * words
    for value in per_cpu:
        for i, word in enumerate(struct.unpack(f"<{words}Q", value[:8 * words])):
            totals[i] = (totals[i] + word) & _U64
    return tuple(totals)


def read_probe_stats(session) -> list[ProbeStats]:
    """--stats rows, one per probe, in probe order."""
    counts = session.probe_event_counts()
    rows = []
    for probe in session.plan.probes:
        site = probe.site
        run = program_run_time(session.program_fd(site.probe_id))
        # A return probe's hits are its returns; its cost per hit includes
        # the entry probes that timed and recorded the call.
        helpers_ns = sum(program_run_time(fd).run_time_ns
                         for fd in session.helper_program_fds(site.probe_id))
        sent, failed = counts.get(site.probe_id, (0, 0))
        where = f"{os.path.basename(site.module_path)}+0x{site.address:x}"
        rows.append(ProbeStats(site.pattern_text, where, run.run_count,
                               run.run_time_ns + helpers_ns, sent, failed))
    return rows
