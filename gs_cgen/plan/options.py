"""What the command line asks of a plan (PlanOptions)."""
from __future__ import annotations

from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.backtrace import DEFAULT_BACKTRACE_DEPTH, DEFAULT_BACKTRACE_STACK
from gs_cgen.plan.model import (THREAD_POINTER_NOT_READ, EventTransport, PendingReturnsLayout,
                                PidNamespace, ThreadPointer)


@dataclass(frozen=True)
class PlanOptions:
    script_name: str
    pid_namespace: PidNamespace
    transport: EventTransport = EventTransport.RINGBUF
    input_pid: int | None = None
    mem_dump_cap: int = 256
    backtrace_depth: int = DEFAULT_BACKTRACE_DEPTH
    backtrace_stack: int = DEFAULT_BACKTRACE_STACK
    max_elements: int = 200           # of each collection / string a std value shows
    watch_exec: bool = False
    thread_pointer: ThreadPointer = THREAD_POINTER_NOT_READ
    pending_returns: PendingReturnsLayout = PendingReturnsLayout()
    shared_programs: bool = False      # uprobes attach with cookies (BPF links)
