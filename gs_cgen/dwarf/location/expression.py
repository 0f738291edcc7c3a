"""The DWARF expression compiler: a location expression → VariableLocation
(DWARF 5 sections 2.5 and 2.6), by running the stack machine at plan time
over symbolic values.

Stack entries are ValueExpression trees (dwarf/model.py): what is known
when the probe is planned folds to constants, "register + offset" and
"link-time address + offset"; what only the probe can know (a register's
value in arithmetic, a memory read, a comparison) stays a tree that the
planner turns into IR. Typed operations (DWARF 5 section 2.5.1.4 and
following) carry their base type's size and signedness; integer results
are truncated and extended as that type says. Location descriptions —
memory, register, implicit value, implicit pointer, stack value — can be
combined with DW_OP_piece / DW_OP_bit_piece into a Composite.

The compiler is total: an operation it cannot compile (floating-point
stack values, DW_OP_call*, TLS in a shape it does not know), a malformed or
undecodable expression gives an UnsupportedLocation naming the operation
and the expression, so that one variable is unavailable with a precise
reason and the rest of the script runs (DESIGN.md "DWARF expressions are
programs").
"""
from __future__ import annotations

import functools
from typing import Callable

from elftools.common.exceptions import DWARFError, ELFParseError
from elftools.construct.core import ConstructError
from elftools.dwarf.dwarf_expr import DW_OP_opcode2name, DWARFExprParser

from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, Composite, ComputedAddress,
                                 ComputedValue, EntryValue, ImplicitBytes, ImplicitPointer,
                                 ImplicitValue, InRegister, InSimdRegister, OptimizedOut, Piece,
                                 StaticAddress, UnsupportedLocation, ValueExpression,
                                 VariableLocation, register_name)
from gs_cgen.dwarf.location.tls import tls_location
from gs_cgen.lazydataclass import dataclass

FIRST_SIMD_REGISTER = 17       # xmm0 in the x86_64 psABI DWARF numbering
LAST_SIMD_REGISTER = 32
_MASK = (1 << 64) - 1          # DWARF's generic type is 64 bits on x86_64

# What pyelftools raises on bytes it cannot decode: an unknown opcode (its
# dispatch table is a dict), a truncated operand, a bad nested expression.
DECODE_ERRORS = (KeyError, ELFParseError, DWARFError, ConstructError)

# `frame_base()` returns (register, offset) such that fbreg N = [reg + offset + N],
# or a VariableLocation explaining why there is none.
FrameBase = Callable[[], "tuple[int, int] | VariableLocation"]


@dataclass(frozen=True)
class BaseType:
    """What a typed operation needs of a DW_TAG_base_type."""

    size: int
    signed: bool
    floating: bool


@dataclass(frozen=True)
class ExpressionContext:
    """What an expression may refer to beyond its own bytes: the frame base
    (DW_OP_fbreg), the CFA at the PC (DW_OP_call_frame_cfa; same shape as
    frame_base), base types by CU-relative DIE offset (typed operations)
    and .debug_addr entries (DW_OP_addrx, DW_OP_constx)."""

    frame_base: FrameBase
    cfa: FrameBase | None = None
    base_type: Callable[[int], "BaseType | None"] | None = None
    debug_addr: Callable[[int], "int | None"] | None = None


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

Tree = tuple                       # a ValueExpression tree (dwarf/model.py)


@dataclass(frozen=True)
class _Entry:
    """A stack entry: a value tree and its type (None: DWARF's generic type,
    64 bits on x86_64)."""

    tree: Tree
    type: BaseType | None = None


class _Stop(Exception):
    """Ends evaluation with `location` (internal to this module)."""

    def __init__(self, location: VariableLocation) -> None:
        super().__init__(location)
        self.location = location


_ENTRY_VALUE = ("DW_OP_entry_value", "DW_OP_GNU_entry_value")
_PIECES = ("DW_OP_piece", "DW_OP_bit_piece")
_TLS = ("DW_OP_form_tls_address", "DW_OP_GNU_push_tls_address")
CONSTANT_OPS = ("DW_OP_const1u", "DW_OP_const1s", "DW_OP_const2u", "DW_OP_const2s",
                "DW_OP_const4u", "DW_OP_const4s", "DW_OP_const8u", "DW_OP_const8s",
                "DW_OP_constu", "DW_OP_consts")
# DWARF operation → tree operator. The generic type is signed for
# division and ordered comparisons and unsigned for DW_OP_mod and
# DW_OP_shr, as DWARF 5 section 2.5.1.4 says and gdb evaluates.
_BINARY = {
    "DW_OP_plus": "+", "DW_OP_minus": "-", "DW_OP_mul": "*", "DW_OP_and": "&",
    "DW_OP_or": "|", "DW_OP_xor": "^", "DW_OP_shl": "<<", "DW_OP_shr": ">>",
    "DW_OP_shra": ">>a", "DW_OP_div": "/s", "DW_OP_mod": "%u",
    "DW_OP_eq": "==", "DW_OP_ne": "!=", "DW_OP_lt": "<s", "DW_OP_le": "<=s",
    "DW_OP_gt": ">s", "DW_OP_ge": ">=s",
}
_UNARY = {"DW_OP_neg": "neg", "DW_OP_not": "~", "DW_OP_abs": "abs"}
_TYPED_REGISTER = ("DW_OP_regval_type", "DW_OP_GNU_regval_type")
_TYPED_DEREF = ("DW_OP_deref_type", "DW_OP_GNU_deref_type")
_TYPED_CONST = ("DW_OP_const_type", "DW_OP_GNU_const_type")
_CONVERT = ("DW_OP_convert", "DW_OP_GNU_convert", "DW_OP_reinterpret", "DW_OP_GNU_reinterpret")
_ADDRESS_INDEX = ("DW_OP_addrx", "DW_OP_GNU_addr_index", "DW_OP_constx", "DW_OP_GNU_const_index")
# Why an operation is not compiled, for the reason text.
_WHY = {
    "DW_OP_xderef": "a read from another address space",
    "DW_OP_xderef_size": "a read from another address space",
    "DW_OP_xderef_type": "a read from another address space",
    "DW_OP_GNU_variable_value": "the value of another variable",
    "DW_OP_push_object_address": "the object's own address",
    "DW_OP_call2": "a call to another DIE", "DW_OP_call4": "a call to another DIE",
    "DW_OP_call_ref": "a call to another DIE",
    **{name: "thread-local storage" for name in _TLS},
}
_MAX_STEPS = 1000                  # DW_OP_skip / DW_OP_bra may loop


def translate_ops(ops, context: "ExpressionContext | FrameBase") -> VariableLocation:
    """The location a parsed expression (list of DWARFExprOp) describes."""
    if not ops:
        return OptimizedOut("optimized out")
    if (thread_local := tls_location(ops)) is not None:     # __thread: dwarf/location/tls.py
        return thread_local
    if not isinstance(context, ExpressionContext):
        context = ExpressionContext(context)
    try:
        return _Evaluation(ops, context).run()
    except _Stop as stop:
        return stop.location


class _Evaluation:
    def __init__(self, ops, context: ExpressionContext) -> None:
        self.ops, self.context = ops, context
        self.stack: list[_Entry] = []
        self.pieces: list[Piece] = []
        self.location: VariableLocation | None = None      # a register or implicit location
        self.simd_what = "value"
        self.simd_allowed = False      # inside DW_OP_entry_value: decided on the whole entry

    def run(self) -> VariableLocation:
        if any(op.op_name == "DW_OP_GNU_uninit" for op in self.ops):
            # GCC's marker: the storage holds no value of the variable yet
            # (gdb prints its bits as "[uninitialized]"); never a number.
            return OptimizedOut("not initialized at this PC (DW_OP_GNU_uninit)")
        index, steps = 0, 0
        while index < len(self.ops):
            steps += 1
            if steps > _MAX_STEPS:
                self.stop(self.ops[index].op_name, "more than 1000 steps (a loop?)")
            index = self.step(index)
        if self.pieces:
            if self.stack or self.location is not None:
                self.stop("DW_OP_piece", "a location after the last piece")
            return _composite(self.pieces)
        return self.finish("the end of the expression")

    def step(self, index: int) -> int:
        """Execute ops[index]; the index of the next operation."""
        op = self.ops[index]
        name = op.op_name
        if self.location is not None and name not in _PIECES:
            self.stop(name, "an operation after a register or implicit location")
        if name in ("DW_OP_skip", "DW_OP_bra"):
            return self.branch(index)
        if name in _PIECES:
            self.piece(op)
        elif register_operand(op) is not None:
            self.location = _register_location(register_operand(op))
        elif name == "DW_OP_implicit_value":
            data = bytes(op.args[0])
            self.location = ImplicitValue(int.from_bytes(data, "little")) if len(data) <= 8 \
                else ImplicitBytes(data)
        elif name in ("DW_OP_implicit_pointer", "DW_OP_GNU_implicit_pointer"):
            self.location = ImplicitPointer(op.args[0], op.args[1])
        elif name == "DW_OP_stack_value":
            self.location = self.value(self.pop(name))
        else:
            self.compute(op)
        return index + 1

    # -------------------------------------------------------- operations
    def compute(self, op) -> None:
        name = op.op_name
        lit = numbered(name, "DW_OP_lit")
        breg = breg_operands(op)
        if lit is not None:
            self.push(("const", lit))
        elif name in CONSTANT_OPS:
            self.push(("const", op.args[0] & _MASK))
        elif breg is not None:
            self.push(_register(*breg))
        elif name == "DW_OP_fbreg":
            self.push(_plus(self.base(self.context.frame_base), ("const", op.args[0] & _MASK)))
        elif name == "DW_OP_call_frame_cfa":
            if self.context.cfa is None:
                self.stop(name, "no call frame information here")
            self.push(self.base(self.context.cfa))
        elif name == "DW_OP_addr":
            self.push(("static", op.args[0]))
        elif name in _ADDRESS_INDEX:
            self.address_index(op)
        elif name == "DW_OP_plus_uconst":
            self.binary("DW_OP_plus", ("const", op.args[0] & _MASK))
        elif name in _BINARY:
            self.binary(name, None)
        elif name in _UNARY:
            entry = self.pop(name)
            self.push(_fold_unary(_UNARY[name], entry.tree), entry.type)
        elif name in ("DW_OP_deref", "DW_OP_deref_size") or name in _TYPED_DEREF:
            self.deref(op)
        elif name in _TYPED_REGISTER or name in _TYPED_CONST or name in _CONVERT:
            self.typed(op)
        elif name in _ENTRY_VALUE:
            self.entry_value(op)
        elif name == "DW_OP_GNU_parameter_ref":
            # A parameter GCC removed from this clone: its value at entry,
            # which only the callers' call sites know (dwarf/location/resolve.py).
            self.push(("param", op.args[0]))
        elif name != "DW_OP_nop":
            self.stack_op(op)

    def binary(self, name: str, right: Tree | None) -> None:
        right_entry = _Entry(right) if right is not None else self.pop(name)
        left = self.pop(name)
        typ = left.type or right_entry.type
        operator = _BINARY[name]
        if typ is not None and not typ.signed:
            operator = {"/s": "/u", "<s": "<u", "<=s": "<=u", ">s": ">u", ">=s": ">=u"}.get(
                operator, operator)
        if typ is not None and typ.floating:
            self.stop(name, "floating-point arithmetic")
        tree = _fold_binary(operator, left.tree, right_entry.tree)
        if tree is None:
            self.stop(name, "division by zero")
        if operator in ("==", "!=", "<s", "<=s", ">s", ">=s", "<u", "<=u", ">u", ">=u"):
            self.push(tree)             # comparisons give the generic type
        else:
            self.push(_typed(tree, typ), typ)

    def deref(self, op) -> None:
        name = op.op_name
        if name in _TYPED_DEREF:
            size, typ = op.args[0], self.base_type(op.args[1], name)
        else:
            size, typ = (8 if name == "DW_OP_deref" else op.args[0]), None
        if not 1 <= size <= 8:
            self.stop(name, f"a read of {size} bytes")
        address = self.pop(name).tree
        self.push(_typed(("deref", address, size), typ), typ)

    def typed(self, op) -> None:
        """DW_OP_regval_type, DW_OP_const_type, DW_OP_convert."""
        name = op.op_name
        if name in _TYPED_REGISTER:
            if is_simd(op.args[0]) and not self.simd_allowed:
                raise _Stop(simd_location(op.args[0], self.simd_what))
            register, typ = op.args[0], self.base_type(op.args[1], name)
            self.push(_typed(_register(register, 0), typ), typ)
        elif name in _TYPED_CONST:
            typ, data = self.base_type(op.args[0], name), bytes(op.args[1])
            if typ is not None and typ.floating:
                self.stop(name, "a floating-point constant")
            self.push(_typed(("const", int.from_bytes(data[:8], "little")), typ), typ)
        else:
            typ = self.base_type(op.args[0], name) if op.args[0] else None
            entry = self.pop(name)
            if name in ("DW_OP_reinterpret", "DW_OP_GNU_reinterpret"):
                self.push(entry.tree, typ)
                return
            if (entry.type is not None and entry.type.floating) or (typ is not None and typ.floating):
                self.stop(name, "a conversion to or from floating point")
            self.push(_typed(entry.tree, typ), typ)

    def entry_value(self, op) -> None:
        """DW_OP_entry_value(E): E evaluated with the registers the function
        was entered with (DWARF 5 section 2.5.1.7). The registers become
        ("entry", reg) nodes that dwarf/module.py resolves; memory at entry
        is not known, so E may not read memory."""
        inner = op.args[0] if op.args and isinstance(op.args[0], list) else []
        if not inner or not all(hasattr(o, "op_name") for o in inner):
            self.stop(op.op_name, "an entry value of nothing")
        if len(inner) == 1 and register_operand(inner[0]) is not None:
            entry = _Entry(_register(register_operand(inner[0]), 0))
        else:
            nested = _Evaluation(inner, self.context)
            nested.simd_what = "entry value"
            nested.simd_allowed = True
            for index in range(len(inner)):
                if inner[index].op_name in ("DW_OP_fbreg", "DW_OP_call_frame_cfa"):
                    self.stop(op.op_name, f"an entry value of the frame ({shape(inner)})")
                nested.step(index)
            if nested.location is not None or len(nested.stack) != 1:
                self.stop(op.op_name, f"an entry value of {shape(inner)}")
            entry = nested.stack[0]
        simd = sorted(r for r in registers_in(entry.tree) if is_simd(r))
        if simd and not (entry.tree == _register(simd[0], 0) and self._is_whole_value(op)):
            raise _Stop(simd_location(simd[0], "entry value"))
        if _reads_memory(entry.tree):
            self.stop(op.op_name, f"an entry value read through memory ({shape(inner)})")
        self.push(_at_entry(entry.tree), entry.type)

    def _is_whole_value(self, op) -> bool:
        """`op` computes the expression's whole value: nothing under it on
        the stack, nothing after it but DW_OP_stack_value. A SIMD entry value
        can be taken from a call site only so, as bits: no probe can do
        floating-point arithmetic on it."""
        rest = self.ops[self.ops.index(op) + 1:]
        return not self.stack and bool(rest) and \
            all(o.op_name == "DW_OP_stack_value" for o in rest)

    def address_index(self, op) -> None:
        address = self.context.debug_addr(op.args[0]) if self.context.debug_addr else None
        if address is None:
            self.stop(op.op_name, f"no .debug_addr entry {op.args[0]}")
        constant = op.op_name in ("DW_OP_constx", "DW_OP_GNU_const_index")
        self.push(("const", address) if constant else ("static", address))

    def branch(self, index: int) -> int:
        op = self.ops[index]
        if op.op_name == "DW_OP_bra":
            condition = self.pop(op.op_name).tree
            if condition[0] != "const":
                self.stop(op.op_name, "control flow on a run-time value")
            if condition[1] == 0:
                return index + 1
        target = op.offset + 3 + op.args[0]          # 1-byte opcode, 2-byte operand
        for position, other in enumerate(self.ops):
            if other.offset == target:
                return position
        if target > self.ops[-1].offset:
            return len(self.ops)         # past the last operation's start: the end
        self.stop(op.op_name, "a branch into the middle of an operation")

    def stack_op(self, op) -> None:
        name = op.op_name
        if name == "DW_OP_dup":
            self.stack.append(self.peek(0, name))
        elif name == "DW_OP_drop":
            self.pop(name)
        elif name == "DW_OP_over":
            self.stack.append(self.peek(1, name))
        elif name == "DW_OP_pick":
            self.stack.append(self.peek(op.args[0], name))
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
            self.stop(name, why or "not compiled yet")

    # --------------------------------------------------------- locations
    def piece(self, op) -> None:
        """Close one part of a composite (DWARF 5 section 2.6.1.2)."""
        if op.op_name == "DW_OP_piece":
            bits, offset = 8 * op.args[0], 0
        else:
            bits, offset = op.args[0], op.args[1]
        if self.location is None and not self.stack:
            part: VariableLocation = OptimizedOut("optimized out")
        else:
            part = self.finish(op.op_name)
        self.pieces.append(Piece(bits, part, offset))
        self.stack, self.location = [], None

    def finish(self, name: str) -> VariableLocation:
        """The location the expression so far describes."""
        if self.location is not None:
            return self.location
        return _memory(self.pop(name).tree)

    def value(self, entry: _Entry) -> VariableLocation:
        """DW_OP_stack_value: the object's value is `entry`."""
        if entry.type is not None and entry.type.floating and entry.tree[0] != "entry":
            self.stop("DW_OP_stack_value", "a floating-point value")
        return _value(entry.tree)

    # ------------------------------------------------------------ stack
    def push(self, tree: Tree, typ: BaseType | None = None) -> None:
        self.stack.append(_Entry(tree, typ))

    def pop(self, name: str) -> _Entry:
        if not self.stack:
            self.stop(name, "malformed expression: the stack is empty")
        return self.stack.pop()

    def peek(self, depth: int, name: str) -> _Entry:
        if depth >= len(self.stack):
            self.stop(name, "malformed expression: the stack is too short")
        return self.stack[-1 - depth]

    def base(self, frame_base: FrameBase) -> Tree:
        found = frame_base()
        if not isinstance(found, tuple):
            raise _Stop(found)
        return _register(*found)

    def base_type(self, offset: int, name: str) -> BaseType:
        typ = self.context.base_type(offset) if self.context.base_type else None
        if typ is None:
            self.stop(name, f"no base type at DIE offset 0x{offset:x}")
        return typ

    def stop(self, name: str, why: str):
        raise _Stop(UnsupportedLocation(f"{name}, {why}, in [{shape(self.ops)}]"))


# ------------------------------------------------------------ folding

def _register(register: int, offset: int) -> Tree:
    return ("reg", register, offset)


def _plus(left: Tree, right: Tree) -> Tree:
    if left[0] == "const" and right[0] != "const":
        left, right = right, left
    if right[0] == "const":
        if left[0] == "const":
            return ("const", (left[1] + right[1]) & _MASK)
        if left[0] == "reg":
            return ("reg", left[1], _signed((left[2] + right[1]) & _MASK))
        if left[0] == "static":
            return ("static", (left[1] + right[1]) & _MASK)
        if right[1] == 0:
            return left
    return ("+", left, right)


_CONSTANT_FOLD = {
    "*": lambda a, b: a * b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b if b < 64 else 0,
    ">>": lambda a, b: a >> b if b < 64 else 0,
    ">>a": lambda a, b: _signed(a) >> min(b, 63),
    "/s": lambda a, b: _c_divide(_signed(a), _signed(b)), "/u": lambda a, b: a // b,
    "%u": lambda a, b: a % b,
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<s": lambda a, b: int(_signed(a) < _signed(b)), "<=s": lambda a, b: int(_signed(a) <= _signed(b)),
    ">s": lambda a, b: int(_signed(a) > _signed(b)), ">=s": lambda a, b: int(_signed(a) >= _signed(b)),
    "<u": lambda a, b: int(a < b), "<=u": lambda a, b: int(a <= b),
    ">u": lambda a, b: int(a > b), ">=u": lambda a, b: int(a >= b),
}


def _fold_binary(operator: str, left: Tree, right: Tree) -> Tree | None:
    """`left operator right`, folded where both are known; None for a
    division by a constant zero."""
    if operator in ("/s", "/u", "%u") and right == ("const", 0):
        return None
    if operator == "+":
        return _plus(left, right)
    if operator == "-":
        if right[0] == "const":
            return _plus(left, ("const", (-right[1]) & _MASK))
        if left[0] == right[0] == "reg" and left[1] == right[1]:
            return ("const", (left[2] - right[2]) & _MASK)
        if left[0] == right[0] == "static":
            return ("const", (left[1] - right[1]) & _MASK)
        return ("-", left, right)
    if left[0] == right[0] == "const":
        return ("const", _CONSTANT_FOLD[operator](left[1], right[1]) & _MASK)
    return (operator, left, right)


def _fold_unary(operator: str, tree: Tree) -> Tree:
    if tree[0] != "const":
        return (operator, tree)
    value = tree[1]
    result = {"neg": -value, "~": ~value, "abs": abs(_signed(value))}[operator]
    return ("const", result & _MASK)


def _typed(tree: Tree, typ: BaseType | None) -> Tree:
    """`tree` as a value of `typ`: truncated to its size and extended by
    its signedness (the generic type and 8-byte types need nothing)."""
    if typ is None or typ.floating or typ.size >= 8:
        return tree
    bits = 8 * typ.size
    if tree[0] == "const":
        value = tree[1] & ((1 << bits) - 1)
        if typ.signed and value >> (bits - 1):
            value -= 1 << bits
        return ("const", value & _MASK)
    if tree[0] == "deref" and tree[2] == typ.size and not typ.signed:
        return tree                      # already zero-extended from that size
    return ("convert", tree, typ.size, typ.signed)


def _at_entry(tree: Tree) -> Tree:
    """`tree` with each register read at function entry."""
    if tree[0] == "reg":
        entry = ("entry", tree[1])
        return _plus(entry, ("const", tree[2] & _MASK)) if tree[2] else entry
    if tree[0] in ("const", "static", "entry"):
        return tree
    return (tree[0], *(_at_entry(t) if isinstance(t, tuple) else t for t in tree[1:]))


def _reads_memory(tree: Tree) -> bool:
    if tree[0] == "deref":
        return True
    return any(isinstance(t, tuple) and _reads_memory(t) for t in tree[1:])


def registers_in(tree: Tree) -> set[int]:
    """DWARF registers a tree reads (now or at entry)."""
    if tree[0] in ("reg", "entry"):
        return {tree[1]}
    return {r for t in tree[1:] if isinstance(t, tuple) for r in registers_in(t)}


def _c_divide(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


# ---------------------------------------------------------- locations

def _register_location(register: int) -> VariableLocation:
    return InSimdRegister(register) if is_simd(register) else InRegister(register)


def _unreachable(tree: Tree, what: str) -> VariableLocation | None:
    simd = sorted(r for r in registers_in(tree) if is_simd(r))
    return simd_location(simd[0], what) if simd else None


def _value(tree: Tree) -> VariableLocation:
    """The object's value is `tree` (DW_OP_stack_value). An entry value of a
    SIMD register is one too: the call sites may say what it was."""
    if tree[0] == "entry":
        return EntryValue(tree[1])
    unreachable = _unreachable(tree, "value")
    if unreachable is not None:
        return unreachable
    match tree:
        case ("const", value):
            return ImplicitValue(_signed(value))
        case ("reg", register, offset):
            return InRegister(register, offset)
        case ("static", address):
            return StaticAddress(address)
    return ComputedValue(ValueExpression(tree))


def _memory(tree: Tree) -> VariableLocation:
    """The object is in memory at `tree` (a memory location description)."""
    unreachable = _unreachable(tree, "address")
    if unreachable is not None:
        return unreachable
    match tree:
        case ("reg", register, offset):
            return AtRegisterOffset(register, offset)
        case ("static", address):
            return AtAddress(address)
        case ("const", value):
            return UnsupportedLocation(f"memory at the absolute address 0x{value:x}")
    return ComputedAddress(ValueExpression(tree))


def _composite(pieces: list[Piece]) -> VariableLocation:
    if all(isinstance(p.location, OptimizedOut) for p in pieces):
        return OptimizedOut("optimized out")
    return Composite(tuple(pieces))


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value
