"""DWARF expressions as CFI uses them (DWARF 5 section 6.4.2): the CFA
rule DW_CFA_def_cfa_expression and the register rules DW_CFA_expression /
DW_CFA_val_expression, over the unwound registers and the stack copy.

The operations are the ones call frame information may contain (no
DW_OP_call*, no DW_OP_push_object_address, no TLS); ld's PLT rule uses
breg, lit, and, ge, shl and plus; glibc's signal trampoline uses breg and
deref."""
from __future__ import annotations

from gs_cgen.dwarf.raw import sleb_at, uleb_at
from gs_cgen.unwind.model import Registers, StackCopy

_MASK = (1 << 64) - 1


class ValueUnknown(Exception):
    """A register the expression reads is not recovered in this frame."""


class OutsideCopy(Exception):
    """A memory read the expression makes is outside the stack copy."""

    def __init__(self, address: int) -> None:
        super().__init__(f"0x{address:x}")
        self.address = address


class UnsupportedOperation(Exception):
    pass


def evaluate(code: bytes, registers: Registers, stack: StackCopy,
             initial: tuple[int, ...] = ()) -> int:
    """The value on top of the stack when `code` ends."""
    machine = _Machine(code, registers, stack, list(initial))
    machine.run()
    if not machine.stack:
        raise UnsupportedOperation("the expression leaves an empty stack")
    return machine.stack[-1] & _MASK


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 64) if value >> 63 else value


_CONSTANTS = {0x08: (1, False), 0x09: (1, True), 0x0A: (2, False), 0x0B: (2, True),
              0x0C: (4, False), 0x0D: (4, True), 0x0E: (8, False), 0x0F: (8, True)}
_BINARY = {
    0x1A: lambda a, b: a & b, 0x1B: lambda a, b: _signed(a) // _signed(b) if b else None,
    0x1C: lambda a, b: a - b, 0x1D: lambda a, b: a % b if b else None,
    0x1E: lambda a, b: a * b, 0x21: lambda a, b: a | b, 0x22: lambda a, b: a + b,
    0x24: lambda a, b: a << b if b < 64 else 0, 0x25: lambda a, b: (a & _MASK) >> b if b < 64 else 0,
    0x26: lambda a, b: _signed(a) >> min(b, 63), 0x27: lambda a, b: a ^ b,
    0x29: lambda a, b: int(_signed(a) == _signed(b)), 0x2A: lambda a, b: int(_signed(a) >= _signed(b)),
    0x2B: lambda a, b: int(_signed(a) > _signed(b)), 0x2C: lambda a, b: int(_signed(a) <= _signed(b)),
    0x2D: lambda a, b: int(_signed(a) < _signed(b)), 0x2E: lambda a, b: int(_signed(a) != _signed(b)),
}


class _Machine:
    def __init__(self, code: bytes, registers: Registers, memory: StackCopy, stack: list) -> None:
        self.code, self.registers, self.memory, self.stack = code, registers, memory, stack

    def register(self, number: int) -> int:
        if number not in self.registers:
            raise ValueUnknown(f"register {number}")
        return self.registers[number]

    def run(self) -> None:
        at = 0
        while at < len(self.code):
            at = self.step(self.code[at], at + 1)

    def step(self, op: int, at: int) -> int:
        code, stack = self.code, self.stack
        if 0x30 <= op <= 0x4F:                              # DW_OP_lit<n>
            stack.append(op - 0x30)
        elif 0x70 <= op <= 0x8F:                            # DW_OP_breg<n> sleb
            offset, at = sleb_at(code, at)
            stack.append(self.register(op - 0x70) + offset)
        elif 0x50 <= op <= 0x6F:                            # DW_OP_reg<n> (a value, here)
            stack.append(self.register(op - 0x50))
        elif op == 0x92:                                    # DW_OP_bregx uleb sleb
            number, at = uleb_at(code, at)
            offset, at = sleb_at(code, at)
            stack.append(self.register(number) + offset)
        elif op in _CONSTANTS:
            size, signed = _CONSTANTS[op]
            stack.append(int.from_bytes(code[at:at + size], "little", signed=signed))
            at += size
        elif op == 0x10:                                    # DW_OP_constu
            value, at = uleb_at(code, at)
            stack.append(value)
        elif op == 0x11:                                    # DW_OP_consts
            value, at = sleb_at(code, at)
            stack.append(value)
        elif op == 0x23:                                    # DW_OP_plus_uconst
            value, at = uleb_at(code, at)
            stack.append(stack.pop() + value)
        elif op in _BINARY:
            b, a = stack.pop() & _MASK, stack.pop() & _MASK
            result = _BINARY[op](a, b)
            if result is None:
                raise UnsupportedOperation("division by zero")
            stack.append(result & _MASK)
        else:
            at = self.step_other(op, at)
        return at

    def step_other(self, op: int, at: int) -> int:
        code, stack = self.code, self.stack
        match op:
            case 0x06:                                      # DW_OP_deref
                address = stack.pop() & _MASK
                value = self.memory.read_u64(address)
                if value is None:
                    raise OutsideCopy(address)
                stack.append(value)
            case 0x12:                                      # DW_OP_dup
                stack.append(stack[-1])
            case 0x13:                                      # DW_OP_drop
                stack.pop()
            case 0x14:                                      # DW_OP_over
                stack.append(stack[-2])
            case 0x15:                                      # DW_OP_pick
                stack.append(stack[-1 - code[at]])
                at += 1
            case 0x16:                                      # DW_OP_swap
                stack[-1], stack[-2] = stack[-2], stack[-1]
            case 0x17:                                      # DW_OP_rot
                stack[-1], stack[-2], stack[-3] = stack[-2], stack[-3], stack[-1]
            case 0x19:                                      # DW_OP_abs
                stack.append(abs(_signed(stack.pop())))
            case 0x1F:                                      # DW_OP_neg
                stack.append(-_signed(stack.pop()))
            case 0x20:                                      # DW_OP_not
                stack.append(~stack.pop())
            case 0x2F:                                      # DW_OP_skip
                delta = int.from_bytes(code[at:at + 2], "little", signed=True)
                at += 2 + delta
            case 0x28:                                      # DW_OP_bra
                delta = int.from_bytes(code[at:at + 2], "little", signed=True)
                at += 2
                if stack.pop() & _MASK:
                    at += delta
            case 0x96:                                      # DW_OP_nop
                pass
            case _:
                raise UnsupportedOperation(f"DW_OP 0x{op:02x}")
        return at
