"""Backtraces by DWARF CFI: pure functions over a copied stack.

The probe copies the user registers and a window of the stack above sp
(emit/, render/decode.py); `unwind` (walk.py) walks that copy with each
module's CFI rows, innermost frame first, and says why it stopped. It
touches no process: the caller passes a function that finds the CFI row
for a run-time address (runtime/backtrace.py looks up the process's
modules), so unit tests can feed it recorded stacks."""
from gs_cgen.unwind.model import PhysicalFrame, Registers, StackCopy, StopReason, UnwindResult
from gs_cgen.unwind.walk import unwind

__all__ = ["PhysicalFrame", "Registers", "StackCopy", "StopReason", "UnwindResult", "unwind"]
