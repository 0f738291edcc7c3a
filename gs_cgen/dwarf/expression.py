"""A DWARF location expression → VariableLocation, evaluated at compile
time over symbolic stack values (DWARF 5 sections 2.5 and 2.6).

The stack holds what is known when the probe is planned: constants,
"register N + offset" and "link-time address + offset". That covers the
shapes a probe reads without computing in BPF: a register, memory at
register + offset (fbreg included) or at a static address, a constant, and
those same values as implicit values (DW_OP_stack_value), with constant
arithmetic folded on the way.

The evaluator is total: any operation it does not model, any malformed or
undecodable expression, gives an UnsupportedLocation naming the operation
and the expression, so that one variable is unavailable with a precise
reason and the rest of the script runs (DESIGN.md "DWARF expressions are
programs"; compiling memory reads, typed values and pieces into IR is the
next step).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from elftools.common.exceptions import DWARFError, ELFParseError
from elftools.construct.core import ConstructError
from elftools.dwarf.dwarf_expr import DW_OP_opcode2name, DWARFExprParser

from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, EntryValue, ImplicitValue,
                                 InRegister, OptimizedOut, StaticAddress, UnsupportedLocation,
                                 VariableLocation, register_name)
from gs_cgen.dwarf.tls import tls_location

FIRST_SIMD_REGISTER = 17       # xmm0 in the x86_64 psABI DWARF numbering
LAST_SIMD_REGISTER = 32
_MASK = (1 << 64) - 1          # DWARF's generic type is 64 bits on x86_64

# What pyelftools raises on bytes it cannot decode: an unknown opcode (its
# dispatch table is a dict), a truncated operand, a bad nested expression.
DECODE_ERRORS = (KeyError, ELFParseError, DWARFError, ConstructError)

# `frame_base()` returns (register, offset) such that fbreg N = [reg + offset + N],
# or a VariableLocation explaining why there is none.
FrameBase = Callable[[], "tuple[int, int] | VariableLocation"]


def decode_ops(expr, structs) -> list | UnsupportedLocation:
    """Parsed operations of expression bytes `expr`, or why they cannot be."""
    try:
        return _parser(structs).parse_expr(expr)
    except DECODE_ERRORS as exc:
        if isinstance(exc, KeyError) and isinstance(exc.args[0], int):
            code = exc.args[0]          # pyelftools has no decoder for this opcode
            why = f"no decoder for {DW_OP_opcode2name.get(code, 'operation')} (0x{code:02x})"
        else:
            why = str(exc) or type(exc).__name__
        return UnsupportedLocation(f"undecodable DWARF expression {bytes(expr).hex()}: {why}")


@functools.lru_cache(maxsize=16)
def _parser(structs) -> DWARFExprParser:
    # Building the dispatch table costs ~0.5 ms; a module has one or two
    # DWARFStructs (address and offset sizes), so parsers are shared.
    return DWARFExprParser(structs)


# ------------------------------------------------------------ op names

def numbered(name: str, prefix: str) -> int | None:
    """N of DW_OP_regN / DW_OP_bregN / DW_OP_litN; None for any other op
    (DW_OP_regx, DW_OP_regval_type, DW_OP_bregx...)."""
    if name.startswith(prefix) and name[len(prefix):].isdigit():
        return int(name[len(prefix):])
    return None


def register_operand(op) -> int | None:
    """The register of a register location description (DW_OP_regN, DW_OP_regx)."""
    if op.op_name == "DW_OP_regx":
        return op.args[0]
    return numbered(op.op_name, "DW_OP_reg")


def breg_operands(op) -> tuple[int, int] | None:
    """(register, offset) of DW_OP_bregN / DW_OP_bregx."""
    if op.op_name == "DW_OP_bregx":
        return op.args[0], op.args[1]
    reg = numbered(op.op_name, "DW_OP_breg")
    return None if reg is None else (reg, op.args[0])


def is_simd(reg: int) -> bool:
    return FIRST_SIMD_REGISTER <= reg <= LAST_SIMD_REGISTER


def simd_location(reg: int, what: str = "value") -> UnsupportedLocation:
    # struct pt_regs has no SIMD registers, so a uprobe cannot read them.
    return UnsupportedLocation(f"{what} in SIMD register {register_name(reg)} (not in pt_regs)")


def shape(ops) -> str:
    """The operations of an expression, for people: `DW_OP_breg5 DW_OP_deref`,
    `DW_OP_entry_value(DW_OP_regval_type) DW_OP_stack_value`."""
    parts = []
    for op in ops:
        name = getattr(op, "op_name", None)
        if name is None:
            parts.append("?")
        elif name in _ENTRY_VALUE and op.args and isinstance(op.args[0], list):
            parts.append(f"{name}({shape(op.args[0])})")
        else:
            parts.append(name)
    return " ".join(parts)


# --------------------------------------------------------- stack values

@dataclass(frozen=True)
class _Const:
    value: int                 # 0 <= value < 2**64


@dataclass(frozen=True)
class _RegisterPlus:
    register: int
    offset: int


@dataclass(frozen=True)
class _StaticPlus:
    address: int               # link-time address; run time adds the load offset


_Entry = _Const | _RegisterPlus | _StaticPlus


class _Stop(Exception):
    """Ends evaluation with `location` (internal to this module)."""

    def __init__(self, location: VariableLocation) -> None:
        super().__init__(location)
        self.location = location


_ENTRY_VALUE = ("DW_OP_entry_value", "DW_OP_GNU_entry_value")
_PIECES = ("DW_OP_piece", "DW_OP_bit_piece")
CONSTANT_OPS = ("DW_OP_const1u", "DW_OP_const1s", "DW_OP_const2u", "DW_OP_const2s",
                "DW_OP_const4u", "DW_OP_const4s", "DW_OP_const8u", "DW_OP_const8s",
                "DW_OP_constu", "DW_OP_consts")
_FOLDED = {
    "DW_OP_mul": lambda a, b: a * b,
    "DW_OP_and": lambda a, b: a & b,
    "DW_OP_or": lambda a, b: a | b,
    "DW_OP_xor": lambda a, b: a ^ b,
    "DW_OP_shl": lambda a, b: a << b if b < 64 else 0,
    "DW_OP_shr": lambda a, b: a >> b if b < 64 else 0,
    "DW_OP_shra": lambda a, b: _signed(a) >> min(b, 63),
}
# Why an operation is not evaluated (yet), for the reason text.
_WHY = {
    "DW_OP_deref": "a read through memory", "DW_OP_deref_size": "a read through memory",
    "DW_OP_xderef": "a read through memory", "DW_OP_xderef_size": "a read through memory",
    "DW_OP_deref_type": "a typed read through memory",
    "DW_OP_GNU_deref_type": "a typed read through memory",
    "DW_OP_const_type": "a typed constant", "DW_OP_GNU_const_type": "a typed constant",
    "DW_OP_regval_type": "a typed register value", "DW_OP_GNU_regval_type": "a typed register value",
    "DW_OP_convert": "a type conversion", "DW_OP_GNU_convert": "a type conversion",
    "DW_OP_reinterpret": "a type conversion",
    "DW_OP_implicit_pointer": "a pointer to an object that has no address",
    "DW_OP_GNU_implicit_pointer": "a pointer to an object that has no address",
    "DW_OP_form_tls_address": "thread-local storage",
    "DW_OP_GNU_push_tls_address": "thread-local storage",
    "DW_OP_call_frame_cfa": "the CFA in a variable's location",
    "DW_OP_addrx": "an address from .debug_addr", "DW_OP_GNU_addr_index": "an address from .debug_addr",
    "DW_OP_constx": "a constant from .debug_addr", "DW_OP_GNU_const_index": "a constant from .debug_addr",
    "DW_OP_GNU_parameter_ref": "a reference to a caller's parameter",
    "DW_OP_GNU_variable_value": "the value of another variable",
    "DW_OP_push_object_address": "the object's own address",
    "DW_OP_call2": "a call to another DIE", "DW_OP_call4": "a call to another DIE",
    "DW_OP_call_ref": "a call to another DIE",
    "DW_OP_skip": "control flow", "DW_OP_bra": "control flow",
    "DW_OP_div": "division", "DW_OP_mod": "division", "DW_OP_abs": "absolute value",
    **{f"DW_OP_{c}": "a comparison" for c in ("eq", "ne", "lt", "le", "gt", "ge")},
}


def translate_ops(ops, frame_base: FrameBase) -> VariableLocation:
    """The location a parsed expression (list of DWARFExprOp) describes."""
    if not ops:
        return OptimizedOut("optimized out")
    if (thread_local := tls_location(ops)) is not None:     # __thread: dwarf/tls.py
        return thread_local
    try:
        return _Evaluation(ops, frame_base).run()
    except _Stop as stop:
        return stop.location


class _Evaluation:
    def __init__(self, ops, frame_base: FrameBase) -> None:
        self.ops, self.frame_base = ops, frame_base
        self.stack: list[_Entry] = []

    def run(self) -> VariableLocation:
        if self.ops[-1].op_name == "DW_OP_GNU_uninit":
            # GCC's marker: the storage holds no value of the variable yet
            # (gdb prints its bits as "[uninitialized]"); never a number.
            return OptimizedOut("not initialized at this PC (DW_OP_GNU_uninit)")
        pieces = [op for op in self.ops if op.op_name in _PIECES]
        if pieces:
            count = f"{len(pieces)} piece" + ("s" if len(pieces) > 1 else "")
            self.stop(pieces[0].op_name, f"a value in {count}")
        for index, op in enumerate(self.ops):
            last = index == len(self.ops) - 1
            name = op.op_name
            if register_operand(op) is not None or name == "DW_OP_implicit_value":
                if len(self.ops) != 1:
                    self.stop(name, "a location operation inside a longer expression")
                return _single_location(op)
            if name == "DW_OP_stack_value":
                if not last:
                    self.stop(name, "DW_OP_stack_value before the end")
                return _value(self.pop(name))
            if name in _ENTRY_VALUE:
                return self.entry_value(op)
            self.step(op)
        return _memory(self.pop("the end of the expression"))

    # -------------------------------------------------------- operations
    def step(self, op) -> None:
        name = op.op_name
        lit = numbered(name, "DW_OP_lit")
        breg = breg_operands(op)
        if lit is not None:
            self.push(_Const(lit))
        elif name in CONSTANT_OPS:
            self.push(_Const(op.args[0] & _MASK))
        elif breg is not None:
            self.push(_RegisterPlus(*breg))
        elif name == "DW_OP_fbreg":
            base = self.frame_base()
            if not isinstance(base, tuple):
                raise _Stop(base)
            self.push(_RegisterPlus(base[0], base[1] + op.args[0]))
        elif name == "DW_OP_addr":
            self.push(_StaticPlus(op.args[0]))
        elif name == "DW_OP_plus_uconst":
            self.push(_add(self.pop(name), _Const(op.args[0]), name, self))
        elif name == "DW_OP_plus":
            right, left = self.pop(name), self.pop(name)
            self.push(_add(left, right, name, self))
        elif name == "DW_OP_minus":
            right, left = self.pop(name), self.pop(name)
            self.push(_subtract(left, right, name, self))
        elif name in _FOLDED:
            right, left = self.pop(name), self.pop(name)
            self.push(_Const(_FOLDED[name](self.constant(left, name), self.constant(right, name)) & _MASK))
        elif name in ("DW_OP_neg", "DW_OP_not"):
            value = self.constant(self.pop(name), name)
            self.push(_Const((-value if name == "DW_OP_neg" else ~value) & _MASK))
        elif name != "DW_OP_nop":
            self.stack_op(op)

    def stack_op(self, op) -> None:
        name = op.op_name
        if name == "DW_OP_dup":
            self.push(self.peek(0, name))
        elif name == "DW_OP_drop":
            self.pop(name)
        elif name == "DW_OP_over":
            self.push(self.peek(1, name))
        elif name == "DW_OP_pick":
            self.push(self.peek(op.args[0], name))
        elif name == "DW_OP_swap":
            top, second = self.pop(name), self.pop(name)
            self.stack += [top, second]
        elif name == "DW_OP_rot":
            top, second, third = self.pop(name), self.pop(name), self.pop(name)
            self.stack += [top, third, second]
        else:
            why = _WHY.get(name)
            if why is None and name.startswith("OP:"):
                why = "an unknown operation"
            self.stop(name, why or "not evaluated yet")

    def entry_value(self, op) -> VariableLocation:
        """DW_OP_entry_value(DW_OP_regN) DW_OP_stack_value: the register at
        function entry (DWARF 5 section 2.5.1.7). Other shapes — a
        computation on the entry value, or a typed register — are
        reported, naming the SIMD register when that is why."""
        inner = op.args[0] if op.args and isinstance(op.args[0], list) else []
        if not all(hasattr(o, "op_name") for o in inner):
            inner = []
        register = register_operand(inner[0]) if len(inner) == 1 else None
        if register is None and len(inner) == 1 and inner[0].op_name in (
                "DW_OP_regval_type", "DW_OP_GNU_regval_type") and is_simd(inner[0].args[0]):
            raise _Stop(simd_location(inner[0].args[0], "entry value"))
        if register is None:
            self.stop(op.op_name, f"an entry value of {shape(inner) or 'nothing'}")
        if is_simd(register):
            raise _Stop(simd_location(register, "entry value"))
        if [o.op_name for o in self.ops] != [op.op_name, "DW_OP_stack_value"]:
            self.stop(op.op_name, "a computation on an entry value")
        return EntryValue(register)

    # ------------------------------------------------------------ stack
    def push(self, entry: _Entry) -> None:
        self.stack.append(entry)

    def pop(self, name: str) -> _Entry:
        if not self.stack:
            self.stop(name, "malformed expression: the stack is empty")
        return self.stack.pop()

    def peek(self, depth: int, name: str) -> _Entry:
        if depth >= len(self.stack):
            self.stop(name, "malformed expression: the stack is too short")
        return self.stack[-1 - depth]

    def constant(self, entry: _Entry, name: str) -> int:
        if not isinstance(entry, _Const):
            self.stop(name, "arithmetic on a register or address value")
        return entry.value

    def stop(self, name: str, why: str):
        raise _Stop(UnsupportedLocation(f"{name}, {why}, in [{shape(self.ops)}]"))


def _add(left: _Entry, right: _Entry, name: str, ev: _Evaluation) -> _Entry:
    if isinstance(left, _Const) and not isinstance(right, _Const):
        left, right = right, left
    if not isinstance(right, _Const):
        ev.stop(name, "a sum of two register or address values")
    match left:
        case _Const(value):
            return _Const((value + right.value) & _MASK)
        case _RegisterPlus(register, offset):
            return _RegisterPlus(register, _signed((offset + right.value) & _MASK))
        case _StaticPlus(address):
            return _StaticPlus((address + right.value) & _MASK)
    raise TypeError(left)


def _subtract(left: _Entry, right: _Entry, name: str, ev: _Evaluation) -> _Entry:
    if not isinstance(right, _Const):
        ev.stop(name, "a difference of register or address values")
    return _add(left, _Const((-right.value) & _MASK), name, ev)


def _single_location(op) -> VariableLocation:
    register = register_operand(op)
    if register is not None:
        return simd_location(register) if is_simd(register) else InRegister(register)
    data = bytes(op.args[0])                      # DW_OP_implicit_value
    if len(data) > 8:
        return UnsupportedLocation(f"DW_OP_implicit_value of {len(data)} bytes")
    return ImplicitValue(int.from_bytes(data, "little"))


def _value(entry: _Entry) -> VariableLocation:
    """The object's value is `entry` (DW_OP_stack_value)."""
    match entry:
        case _Const(value):
            return ImplicitValue(_signed(value))
        case _RegisterPlus(register, offset):
            return simd_location(register) if is_simd(register) else InRegister(register, offset)
        case _StaticPlus(address):
            return StaticAddress(address)
    raise TypeError(entry)


def _memory(entry: _Entry) -> VariableLocation:
    """The object is in memory at `entry` (a memory location description)."""
    match entry:
        case _RegisterPlus(register, offset):
            return simd_location(register) if is_simd(register) else AtRegisterOffset(register, offset)
        case _StaticPlus(address):
            return AtAddress(address)
        case _Const(value):
            return UnsupportedLocation(f"memory at the absolute address 0x{value:x}")
    raise TypeError(entry)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value
