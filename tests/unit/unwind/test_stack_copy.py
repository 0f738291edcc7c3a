"""unwind/model.py StackCopy: the copied stack as the program has it."""
from __future__ import annotations

import struct

from gs_cgen.unwind.model import StackCopy


def test_redirected_returns_are_put_back_before_the_walk():
    """A uretprobe replaced the return address in the slot at base + 8 by
    the kernel's trampoline; the pending-returns list has the real one.
    Slots outside the copy are left alone."""
    trampoline, real = 0x7FFFFFFFE000, 0x401234
    stack = StackCopy(0x1000, struct.pack("<QQQ", 1, trampoline, 3))
    restored = stack.with_returns(((0x1008, real), (0x2000, 5)))
    assert restored.read_u64(0x1008) == real
    assert restored.read_u64(0x1000) == 1 and restored.read_u64(0x1010) == 3
    assert stack.with_returns(()) is stack
