"""Thread-local variables in DWARF: the one expression shape compilers
emit for `__thread` / `_Thread_local` objects, an offset in the module's
TLS block pushed by a constant, then the TLS operation:

    DW_OP_const8u N  DW_OP_form_tls_address        (gcc, DWARF 5)
    DW_OP_const8u N  DW_OP_GNU_push_tls_address    (gcc -gdwarf-4)

DWARF 5 section 2.5.1.3 (DW_OP_form_tls_address): "pops a value from the
stack, ... translates this offset into an address in the thread-local
storage for a thread". The operand may also be any other unsigned constant
(DW_OP_constu, DW_OP_litN), DW_OP_addr (older producers put the offset
there), or an index into .debug_addr (DW_OP_addrx / DW_OP_constx with
split DWARF), which needs `address_at` to resolve.
"""
from __future__ import annotations

import struct
from typing import Callable

from gs_cgen.dwarf.model import ThreadLocal, UnsupportedLocation

TLS_OPERATIONS = ("DW_OP_form_tls_address", "DW_OP_GNU_push_tls_address")
_OFFSET_OPERATIONS = ("DW_OP_const1u", "DW_OP_const2u", "DW_OP_const4u", "DW_OP_const8u",
                      "DW_OP_constu", "DW_OP_addr")
_INDEXED_OPERATIONS = ("DW_OP_addrx", "DW_OP_constx", "DW_OP_GNU_addr_index",
                       "DW_OP_GNU_const_index")
# Opcodes (DWARF 5 section 7.7.1) for the byte search of a global's DIE.
_DW_OP_CONST4U, _DW_OP_CONST8U = 0x0C, 0x0E
_TLS_OPCODES = (0x9B, 0xE0)             # DW_OP_form_tls_address, DW_OP_GNU_push_tls_address

# Resolves an index into .debug_addr to the value stored there.
AddressAt = Callable[[int], int]


def tls_offset(ops, address_at: AddressAt | None = None) -> int | None:
    """N of `<constant N> <TLS operation>`; None for any other expression
    (or an indexed operand that `address_at` cannot resolve)."""
    if len(ops) != 2 or ops[1].op_name not in TLS_OPERATIONS:
        return None
    operand = ops[0]
    name = operand.op_name
    if name.startswith("DW_OP_lit") and name[len("DW_OP_lit"):].isdigit():
        return int(name[len("DW_OP_lit"):])
    if name in _OFFSET_OPERATIONS and operand.args and operand.args[0] >= 0:
        return operand.args[0]
    if name in _INDEXED_OPERATIONS and address_at is not None and operand.args:
        return address_at(operand.args[0])
    return None


def tls_location(ops, address_at: AddressAt | None = None) -> ThreadLocal | UnsupportedLocation | None:
    """The location of a thread-local variable; None when the expression
    uses no TLS operation (then it is not this module's business); an
    UnsupportedLocation naming the shape when it does, in another way."""
    names = [getattr(op, "op_name", "?") for op in ops]
    tls = [name for name in names if name in TLS_OPERATIONS]
    if not tls:
        return None
    offset = tls_offset(ops, address_at)
    if offset is not None:
        return ThreadLocal(offset)
    shape = " ".join(names)
    if len(ops) == 2 and names[0] in _INDEXED_OPERATIONS:
        why = "an offset from .debug_addr (split DWARF), not resolved"
    elif len(ops) == 1:
        why = "no offset on the stack (malformed expression)"
    else:
        why = "an offset computed in a way this version does not evaluate"
    return UnsupportedLocation(f"{tls[0]}, thread-local storage at {why}, in [{shape}]")


def tls_expression_bytes(offset: int) -> tuple[bytes, ...]:
    """The encodings of `<constant offset> <TLS operation>` that compilers
    write into DW_AT_location, for finding a global's DIE by byte search."""
    operands = [bytes([_DW_OP_CONST8U]) + struct.pack("<Q", offset)]
    if offset < 1 << 32:
        operands.append(bytes([_DW_OP_CONST4U]) + struct.pack("<I", offset))
    return tuple(operand + bytes([opcode]) for operand in operands for opcode in _TLS_OPCODES)
