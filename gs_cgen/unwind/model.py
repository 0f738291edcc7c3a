"""What the unwinder reads and returns."""
from __future__ import annotations

import enum
import struct
from dataclasses import field

from gs_cgen.lazydataclass import dataclass

# DWARF register numbers of x86-64 (psABI 3.6.2, table 3.36).
RAX, RDX, RCX, RBX, RSI, RDI, RBP, RSP = range(8)
R12, R13, R14, R15 = 12, 13, 14, 15
RIP = 16
# Registers a call preserves (psABI 3.2.1): without a CFI rule, the
# caller's value is the callee's. Every other register is unknown in a
# caller's frame, never assumed.
CALLEE_SAVED = (RBX, RBP, R12, R13, R14, R15)

Registers = dict[int, int]          # DWARF register number -> value; absent: unknown


class StopReason(enum.Enum):
    """Why a walk ended (CONTRACT.md "bt")."""

    COMPLETE = "complete"                       # reached the outermost frame
    DEPTH_LIMIT = "depth limit"
    STACK_EXHAUSTED = "stack copy exhausted"    # a saved value lies outside the copy
    NO_UNWIND_INFO = "no unwind info"           # no module or no FDE covers the PC
    UNREADABLE = "unreadable"                   # the CFI asks for a value nobody has


@dataclass(frozen=True)
class StackCopy:
    """`data` is the target's memory at [base, base + len(data))."""

    base: int
    data: bytes

    def read_u64(self, address: int) -> int | None:
        offset = address - self.base
        if offset < 0 or offset + 8 > len(self.data):
            return None
        return struct.unpack_from("<Q", self.data, offset)[0]

    def read(self, address: int, size: int) -> bytes | None:
        offset = address - self.base
        if offset < 0 or offset + size > len(self.data):
            return None
        return self.data[offset:offset + size]

    def with_returns(self, pending: tuple[tuple[int, int], ...]) -> "StackCopy":
        """The stack as the program has it: each (slot, address) of a call
        whose return a uretprobe redirected to the kernel's trampoline puts
        the real return address back in its slot."""
        data = bytearray(self.data)
        for slot, address in pending:
            offset = slot - self.base
            if 0 <= offset <= len(data) - 8:
                struct.pack_into("<Q", data, offset, address)
        return StackCopy(self.base, bytes(data)) if pending else self


@dataclass(frozen=True)
class PhysicalFrame:
    """One machine frame. `pc` is where it is executing (a return address
    for callers); `lookup_pc` is the address to describe it by: pc - 1 in
    a caller (inside the call instruction, as gdb's
    get_frame_address_in_block), pc itself in the innermost frame and in a
    frame a signal interrupted. `registers` holds only values the CFI (or
    the call convention) recovers; `cfa` is None where it is unknown.
    `signal_trampoline`: this frame is the kernel's signal return
    (__restore_rt), gdb's `<signal handler called>`."""

    pc: int
    lookup_pc: int
    cfa: int | None
    registers: Registers = field(default_factory=dict)
    signal_trampoline: bool = False


@dataclass(frozen=True)
class UnwindResult:
    frames: tuple[PhysicalFrame, ...]
    stop: StopReason
    stop_address: int | None = None         # the PC without unwind info
