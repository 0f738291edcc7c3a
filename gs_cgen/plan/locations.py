"""DWARF variable locations (dwarf/model.py) → places (plan/ir.py).

Total over VariableLocation: a location or type the probe cannot read is
an UnavailablePlace with the reason, never an error that fails the script.
Compiled DWARF expressions (ValueExpression trees) become IR scalars here;
pieces become a CompositePlace whose parts the script can read one by one
(`s.x` of a struct split over registers) or the probe assembles whole.
"""
from __future__ import annotations

from typing import Callable

from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, CallSiteValue, Composite,
                                 ComputedAddress, ComputedValue, ImplicitBytes, ImplicitValue,
                                 InRegister, OptimizedOut, StaticAddress, SyntheticPointer,
                                 ThreadLocal, UnsupportedLocation, VariableLocation, describe_location,
                                 register_name)
from gs_cgen.dwarf.types import ArrayType, CType, IntType, PointerType, strip, type_name, type_size
from gs_cgen.plan import arith, ir

# DWARF register name → struct pt_regs field (arch/x86/include/asm/ptrace.h).
PT_REGS_FIELD = {"rax": "ax", "rdx": "dx", "rcx": "cx", "rbx": "bx", "rsi": "si",
                 "rdi": "di", "rbp": "bp", "rsp": "sp", "rip": "ip",
                 **{f"r{n}": f"r{n}" for n in range(8, 16)}}
SYNTHETIC_POINTER = "synthetic pointer: it points to an object that has no address"
# Tree operator → (IR operator, signed).
_TREE_OPS = {"+": ("+", False), "-": ("-", False), "*": ("*", False), "&": ("&", False),
             "|": ("|", False), "^": ("^", False), "<<": ("<<", False), ">>": (">>", False),
             ">>a": (">>", True), "/s": ("/", True), "/u": ("/", False), "%u": ("%", False),
             "==": ("==", False), "!=": ("!=", False),
             "<s": ("<", True), "<=s": ("<=", True), ">s": (">", True), ">=s": (">=", True),
             "<u": ("<", False), "<=u": ("<=", False), ">u": (">", False), ">=u": (">=", False)}
_VALUE_LOCATIONS = (InRegister, ImplicitValue, StaticAddress, CallSiteValue, ComputedValue)


class Unreadable(Exception):
    """A tree names something a uprobe cannot read (internal)."""


class LocationPlanner:
    """Places for the DWARF locations of one probe site."""

    def __init__(self, static_address: Callable[[int], ir.Scalar], probe_address: int,
                 thread_local: Callable[[int, CType], ir.Place]) -> None:
        self.static_address = static_address       # link-time address -> run-time address
        self.probe_address = probe_address
        self.thread_local = thread_local           # (TLS offset, type) -> place

    def place(self, location: VariableLocation, ctype: CType) -> ir.Place:
        size = type_size(ctype)
        unreadable = isinstance(location, InRegister) and \
            register_name(location.dwarf_register) not in PT_REGS_FIELD
        if size > 8 and not unreadable and isinstance(location, _VALUE_LOCATIONS):
            # A register or DWARF stack value holds 8 bytes; the rest of a
            # bigger object is not there (it would need DW_OP_piece).
            return ir.UnavailablePlace(ctype, f"unsupported: a {size}-byte {type_name(ctype)} "
                                       f"described as one 8-byte value "
                                       f"({describe_location(location)})", False)
        try:
            return self._place(location, ctype)
        except Unreadable as exc:
            return ir.UnavailablePlace(ctype, str(exc), False)

    def _place(self, location: VariableLocation, ctype: CType) -> ir.Place:
        match location:
            case InRegister(reg, offset):
                _require_register(reg, "value lives in")
                return self._value(self.tree(("reg", reg, offset)), ctype)
            case AtRegisterOffset(reg, offset):
                _require_register(reg, "address based on")
                return ir.MemoryPlace(self.tree(("reg", reg, offset)), ctype)
            case AtAddress(address):
                return ir.MemoryPlace(self.static_address(address), ctype)
            case StaticAddress(address):
                return self._value(self.static_address(address), ctype)
            case ImplicitValue(value):
                return self._value(ir.Const(value), ctype)
            case ComputedValue(expression):
                return self._value(self.tree(expression.tree), ctype)
            case ComputedAddress(expression):
                return ir.MemoryPlace(self.tree(expression.tree), ctype)
            case ImplicitBytes(data):
                return _known_bytes(data, ctype)
            case ThreadLocal(offset):
                return self.thread_local(offset, ctype)
            case CallSiteValue(return_address=ra, cases=cases):
                address = self.tree(("reg", ra.dwarf_register, ra.offset))
                values = tuple((pc, self.tree(value.tree)) for pc, value in cases)
                select = ir.CallSiteSelect(ir.Load(address, 8, False), self.probe_address, values)
                return self._value(select, ctype)
            case SyntheticPointer(target, offset):
                return self._synthetic_pointer(target, offset, ctype)
            case Composite(pieces):
                return self._composite(pieces, ctype)
            case OptimizedOut(reason):
                return ir.UnavailablePlace(ctype, reason, True)
            case UnsupportedLocation(reason):
                return ir.UnavailablePlace(ctype, f"unsupported: {reason}", False)
        raise TypeError(location)

    @staticmethod
    def _value(value: ir.Scalar, ctype: CType) -> ir.Place:
        return ir.ValuePlace(arith.narrow(value, ctype), ctype)

    # ------------------------------------------------------------ trees
    def tree(self, tree: tuple) -> ir.Scalar:
        """A ValueExpression tree as IR over 64-bit values."""
        kind = tree[0]
        if kind == "const":
            return ir.Const(tree[1])
        if kind == "reg":
            field = PT_REGS_FIELD.get(register_name(tree[1]))
            if field is None:
                raise Unreadable(f"the value depends on {register_name(tree[1])}, which a uprobe "
                                 "cannot read")
            value = ir.RegisterValue(field)
            return ir.BinaryOp("+", value, ir.Const(tree[2]), False) if tree[2] else value
        if kind == "static":
            return self.static_address(tree[1])
        if kind == "deref":
            return ir.Load(self.tree(tree[1]), tree[2], False)
        if kind == "convert":
            return ir.Convert(self.tree(tree[1]), tree[2], tree[3])
        if kind == "~":
            return ir.UnaryOp("~", self.tree(tree[1]))
        if kind == "neg":
            return ir.UnaryOp("-", self.tree(tree[1]))
        if kind == "abs":
            value = self.tree(tree[1])
            sign = ir.BinaryOp(">>", value, ir.Const(63), True)
            return ir.BinaryOp("-", ir.BinaryOp("^", value, sign, False), sign, False)
        if kind in _TREE_OPS:
            op, signed = _TREE_OPS[kind]
            return ir.BinaryOp(op, self.tree(tree[1]), self.tree(tree[2]), signed)
        raise Unreadable(f"unsupported: value expression {kind}")

    # ---------------------------------------------------- composites
    def _composite(self, pieces, ctype: CType) -> ir.Place:
        parts, bit = [], 0
        for piece in pieces:
            parts.append((bit, piece.bit_size, self._piece_place(piece)))
            bit += piece.bit_size
        if bit < 8 * type_size(ctype):
            # pieces that stop short of the object (clang: the first 4 bytes
            # of an 8-byte struct): the rest is optimized out, never zeros
            parts.append((bit, 8 * type_size(ctype) - bit, None))
        for _, _, place in parts:
            if isinstance(place, ir.UnavailablePlace) and not place.optimized_out:
                return ir.UnavailablePlace(ctype, place.reason, False)
        present = all(place is not None for _, _, place in parts)
        if type_size(ctype) <= 8 and present:
            return self._value(_assembled(parts), ctype)
        if any(start % 8 or bits % 8 for start, bits, _ in parts):
            why = "partly optimized out" if not present else \
                f"unsupported: bit pieces of a {type_size(ctype)}-byte {type_name(ctype)}"
            return ir.UnavailablePlace(ctype, why, not present)
        return ir.CompositePlace(tuple(ir.CompositePart(start // 8, bits // 8, place)
                                       for start, bits, place in parts), ctype)

    def _piece_place(self, piece) -> ir.Place | None:
        """The place of one piece, as an integer of the piece's size."""
        location = piece.location
        if isinstance(location, OptimizedOut):
            return None
        size = (piece.bit_size + 7) // 8
        if isinstance(location, (AtRegisterOffset, AtAddress, ComputedAddress)):
            if piece.bit_offset % 8:
                return ir.UnavailablePlace(None, "unsupported: a bit piece of memory", False)
            memory = self.place(location, arith.ULONG)
            if isinstance(memory, ir.MemoryPlace):
                address = ir.BinaryOp("+", memory.address, ir.Const(piece.bit_offset // 8), False)
                return ir.MemoryPlace(address, _unsigned(size))
            return memory
        if isinstance(location, ImplicitBytes):
            data = location.data[piece.bit_offset // 8:][:size]
            return ir.ValuePlace(ir.Const(int.from_bytes(data, "little")), _unsigned(len(data)))
        value = self.place(location, arith.ULONG)
        if isinstance(value, ir.ValuePlace):
            shifted = ir.BinaryOp(">>", value.value, ir.Const(piece.bit_offset), False) \
                if piece.bit_offset else value.value
            return ir.ValuePlace(shifted, _unsigned(min(size, 8)))
        return value

    def _synthetic_pointer(self, target: VariableLocation, offset: int, ctype: CType) -> ir.Place:
        pointer = strip(ctype)
        if not isinstance(pointer, PointerType):
            return ir.UnavailablePlace(ctype, SYNTHETIC_POINTER, False)
        pointee = pointer.target
        whole = self.place(target, _object_of(target, pointee, offset))
        return ir.SyntheticPointerPlace(sub_place(whole, offset, pointee), ctype)


def _require_register(register: int, what: str) -> None:
    if register_name(register) not in PT_REGS_FIELD:
        raise Unreadable(f"{what} {register_name(register)}, which a uprobe cannot read")


def sub_place(place: ir.Place, offset: int, ctype: CType) -> ir.Place:
    """The object of `ctype` at byte `offset` inside `place`."""
    size = type_size(ctype)
    match place:
        case ir.MemoryPlace(address=address):
            moved = ir.BinaryOp("+", address, ir.Const(offset), False) if offset else address
            return ir.MemoryPlace(moved, ctype)
        case ir.ValuePlace(value=value):
            if offset == 0 and size >= type_size(place.ctype):
                return ir.ValuePlace(value, ctype)
            bits = ir.BitField(value, 8 * offset, 8 * min(size, 8), arith.signedness(ctype))
            return ir.ValuePlace(bits, ctype)
        case ir.KnownBytesPlace(data=data):
            return _known_bytes(data[offset:offset + size], ctype)
        case ir.CompositePlace(parts=parts):
            return _composite_slice(parts, offset, size, ctype)
        case ir.UnavailablePlace(reason=reason, optimized_out=gone):
            return ir.UnavailablePlace(ctype, reason, gone)
    return ir.UnavailablePlace(ctype, "unsupported: a part of this value", False)


def _composite_slice(parts, offset: int, size: int, ctype: CType) -> ir.Place:
    inside = [p for p in parts if p.offset < offset + size and offset < p.offset + p.size]
    if len(inside) == 1 and inside[0].offset <= offset and \
            offset + size <= inside[0].offset + inside[0].size:
        part = inside[0]
        if part.place is None:
            return ir.UnavailablePlace(ctype, "optimized out", True)
        return sub_place(part.place, offset - part.offset, ctype)
    clipped = []
    for part in inside:
        start, end = max(part.offset, offset), min(part.offset + part.size, offset + size)
        piece = None if part.place is None else \
            sub_place(part.place, start - part.offset, _unsigned(end - start))
        clipped.append(ir.CompositePart(start - offset, end - start, piece))
    if not clipped:
        return ir.UnavailablePlace(ctype, "optimized out", True)
    return ir.CompositePlace(tuple(clipped), ctype)


def composite_value(place: ir.CompositePlace) -> ir.Scalar | None:
    """A composite of at most 8 bytes as one value; None if a part is missing."""
    if any(part.place is None for part in place.parts):
        return None
    return _assembled([(8 * p.offset, 8 * p.size, p.place) for p in place.parts])


def _assembled(parts) -> ir.Scalar:
    """OR of each part's value at its bit position (little endian)."""
    value: ir.Scalar | None = None
    for start, bits, place in parts:
        if isinstance(place, ir.MemoryPlace):
            part = ir.Load(place.address, min((bits + 7) // 8, 8), False)
        else:
            part = place.value
        if bits < 64:
            part = ir.BinaryOp("&", part, ir.Const((1 << bits) - 1), False)
        if start:
            part = ir.BinaryOp("<<", part, ir.Const(start), False)
        value = part if value is None else ir.BinaryOp("|", value, part, False)
    return value if value is not None else ir.Const(0)


def _known_bytes(data: bytes, ctype: CType) -> ir.Place:
    size = type_size(ctype)
    data = data[:size].ljust(size, b"\0")
    if size <= 8 and (arith.is_scalar(ctype)):
        number = int.from_bytes(data, "little")
        return ir.ValuePlace(arith.narrow(ir.Const(number), ctype), ctype)
    return ir.KnownBytesPlace(data, ctype)


def _object_of(target: VariableLocation, pointee: CType, offset: int) -> CType:
    """A type wide enough for the pointed-to object at `offset`."""
    return pointee if offset == 0 else ArrayType(_BYTE, offset + type_size(pointee))


_BYTE = IntType("unsigned char", 1, False)
_UNSIGNED = {1: _BYTE, 2: IntType("unsigned short", 2, False), 4: arith.UINT, 8: arith.ULONG}


def _unsigned(size: int) -> CType:
    """An unsigned integer of `size` bytes; bytes beyond 8."""
    return _UNSIGNED.get(size) or (arith.ULONG if size < 8 else ArrayType(_BYTE, size))
