"""How large one event may be, and why: it depends on where the probe
builds it and how it reaches the tracer (bpf_headers/gs_abi.h).

  - Over the BPF ring buffer, an event larger than the per-CPU scratch,
    and every event of a sleepable probe, is built in its own ring
    reservation (bpf_ringbuf_reserve). The kernel grants a reservation up
    to the ring's size; gs-cgen allows an eighth of its GS_RINGBUF_PAGES
    pages (8 MiB: 1 MiB), so that eight such events can wait for the
    reader at once instead of one event filling the ring.
  - Over perf event arrays, the event is built in the per-CPU scratch map
    and copied out with bpf_perf_event_output. A per-CPU map value is at
    most PCPU_MIN_UNIT_SIZE (32 KiB; kernel/bpf/arraymap.c
    array_map_alloc_check refuses more with E2BIG), and the probe's work
    area for comparisons follows the event in it.

A value is read whole up to OBJECT_CAP bytes, or half the event limit
when that is smaller; beyond, its first bytes print, then `<truncated>`.
"""
from __future__ import annotations


from gs_cgen.abi import abi
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import EventTransport

OBJECT_CAP = 64 * 1024


@dataclass(frozen=True)
class EventLimit:
    size: int                 # bytes one event may take
    reason: str               # why, for the error that names it
    hint: str                 # what a user can change


def event_limit(transport: EventTransport) -> EventLimit:
    constants = abi().constants
    if transport is EventTransport.PERF:
        return EventLimit(
            constants["GS_MAX_SCRATCH_EVENT"],
            f"over perf event arrays an event is built in a per-CPU map value, which the "
            f"kernel caps at {constants['GS_SCRATCH_SIZE'] // 1024} KiB with the probe's "
            f"{constants['GS_WORK_SIZE']}-byte work area",
            "use --event-map ringbuf (1 MiB events), split the trace block or lower "
            "--mem-dump-cap")
    ring = constants["GS_RINGBUF_PAGES"] * constants["GS_PAGE_SIZE"]
    return EventLimit(
        constants["GS_MAX_EVENT_SIZE"],
        f"one event may take an eighth of the {ring // (1024 * 1024)} MiB BPF ring buffer",
        "split the trace block or lower --mem-dump-cap")


def object_cap(transport: EventTransport) -> int:
    return min(OBJECT_CAP, event_limit(transport).size // 2)
