"""The walk: from the probed registers outward, one CFI row per frame
(DWARF 5 section 6.4; the x86-64 psABI's CFA is the caller's sp)."""
from __future__ import annotations

from collections.abc import Callable

from gs_cgen.dwarf.cfi import RuleKind, UnwindRow
from gs_cgen.unwind.expression import OutsideCopy, UnsupportedOperation, ValueUnknown, evaluate
from gs_cgen.unwind.model import (CALLEE_SAVED, RIP, RSP, PhysicalFrame, Registers, StackCopy,
                                  StopReason, UnwindResult)

RowLookup = Callable[[int], "UnwindRow | None"]     # run-time address -> its CFI row


class _Stop(Exception):
    def __init__(self, reason: StopReason, address: int | None = None) -> None:
        super().__init__(reason.value)
        self.reason, self.address = reason, address


Visit = Callable[[PhysicalFrame], "StopReason | None"]


def unwind(registers: Registers, stack: StackCopy, row_at: RowLookup,
           max_frames: int, visit: Visit | None = None) -> UnwindResult:
    """Frames innermost first, at most `max_frames` of them, and why the
    walk stopped. `registers` are the probed thread's (rip and rsp at
    least); `row_at` gives the CFI row for a run-time address, None where
    no module or FDE covers it. `visit(frame)`, called on each frame as it
    is found, may end the walk there with its own reason (the caller
    that names frames stops at `main`, as gdb, without unwinding libc's
    start-up frames above it)."""
    pc = registers.get(RIP)
    if pc is None or RSP not in registers:
        return UnwindResult((), StopReason.UNREADABLE)
    frames: list[PhysicalFrame] = []

    def found(frame: PhysicalFrame, reason: StopReason | None,
              address: int | None = None) -> UnwindResult | None:
        frames.append(frame)
        verdict = visit(frame) if visit is not None else None
        if verdict is not None:
            return UnwindResult(tuple(frames), verdict)
        return UnwindResult(tuple(frames), reason, address) if reason is not None else None

    current, exact_pc = dict(registers), True
    while True:
        lookup_pc = pc if exact_pc else pc - 1
        row = row_at(lookup_pc)
        if row is None:
            return found(PhysicalFrame(pc, lookup_pc, None, current), StopReason.NO_UNWIND_INFO, pc)
        try:
            cfa, caller = _caller_registers(row, current, stack)
        except _Stop as stop:
            return found(PhysicalFrame(pc, lookup_pc, None, current, row.signal_frame),
                         stop.reason, stop.address)
        return_address = caller.get(RIP)
        if return_address is None or return_address == 0:
            reason = StopReason.COMPLETE                                # the outermost frame
        elif not row.signal_frame and caller[RSP] <= current[RSP]:
            # gdb: "previous frame inner to this frame (corrupt stack?)"
            reason = StopReason.UNREADABLE
        elif len(frames) + 1 == max_frames:
            reason = StopReason.DEPTH_LIMIT
        else:
            reason = None
        result = found(PhysicalFrame(pc, lookup_pc, cfa, current, row.signal_frame), reason)
        if result is not None:
            return result
        # A signal frame's caller was interrupted at `pc`, not called from it.
        pc, current, exact_pc = return_address, caller, row.signal_frame


def _caller_registers(row: UnwindRow, current: Registers, stack: StackCopy) -> tuple[int, Registers]:
    """(this frame's CFA, the caller's registers) by the row's rules; the
    return address is the caller's rip, the CFA its rsp."""
    cfa = _cfa(row, current, stack)
    caller: Registers = {n: current[n] for n in CALLEE_SAVED if n in current}
    for number, rule in row.registers.items():
        caller.pop(number, None)
        value = _apply(rule, number, cfa, current, stack)
        if value is not None:
            caller[number] = value
    ra = row.return_address_register
    if ra != RIP:
        caller.pop(RIP, None)
        if ra in caller:
            caller[RIP] = caller[ra]
    elif RIP not in row.registers:
        caller.pop(RIP, None)          # no rule for the return address: outermost
    caller[RSP] = cfa
    return cfa, caller


def _cfa(row: UnwindRow, current: Registers, stack: StackCopy) -> int:
    if row.cfa is not None:
        if row.cfa.register not in current:
            raise _Stop(StopReason.UNREADABLE)
        return (current[row.cfa.register] + row.cfa.offset) & ((1 << 64) - 1)
    if row.cfa_expression is None:
        raise _Stop(StopReason.UNREADABLE)
    return _evaluate(row.cfa_expression, current, stack, ())


def _apply(rule, number: int, cfa: int, current: Registers, stack: StackCopy) -> int | None:
    """The caller's value of one register, None when it is unknown."""
    match rule.kind:
        case RuleKind.UNDEFINED:
            return None
        case RuleKind.SAME_VALUE:
            return current.get(number)
        case RuleKind.OFFSET:
            return _load(stack, cfa + rule.offset)
        case RuleKind.VAL_OFFSET:
            return cfa + rule.offset
        case RuleKind.REGISTER:
            return current.get(rule.register)
        case RuleKind.EXPRESSION:
            return _load(stack, _evaluate(rule.expression, current, stack, (cfa,)))
        case RuleKind.VAL_EXPRESSION:
            return _evaluate(rule.expression, current, stack, (cfa,))
    return None


def _load(stack: StackCopy, address: int) -> int:
    value = stack.read_u64(address)
    if value is None:
        raise _Stop(StopReason.STACK_EXHAUSTED, address)
    return value


def _evaluate(code: bytes, current: Registers, stack: StackCopy, initial: tuple) -> int:
    try:
        return evaluate(code, current, stack, initial)
    except OutsideCopy as exc:
        raise _Stop(StopReason.STACK_EXHAUSTED, exc.address) from None
    except (ValueUnknown, UnsupportedOperation, IndexError):
        raise _Stop(StopReason.UNREADABLE) from None
