"""DW_OP_entry_value of rsp: the stack pointer the function was entered
with is CFA - 8 (the call pushed the return address just below the CFA),
wherever the CFI gives the CFA, however often the function moved rsp
since. clang describes a stack-passed parameter as
DW_OP_entry_value(DW_OP_breg7 +8) (GhostScope's entry_value_breg test);
gdb 13 refuses it ("supported only for single DW_OP_reg*")."""
from __future__ import annotations

from collections import namedtuple

from gs_cgen.dwarf.location.expression import translate_ops
from gs_cgen.dwarf.location.resolve import LocationResolver, ResolveContext
from gs_cgen.dwarf.model import ComputedAddress, OptimizedOut, ValueExpression

Op = namedtuple("Op", "op_name args")
RSP = 7
# DW_OP_entry_value(DW_OP_breg7 (rsp): 8): a memory location, the first
# stack-passed argument
STACK_ARGUMENT = [Op("DW_OP_entry_value", [[Op("DW_OP_breg7", [8])]])]


class _Elf:
    def segment_of(self, address):
        return object()


def _resolver(cfa) -> LocationResolver:
    resolver = LocationResolver(ResolveContext(
        elf=_Elf(), pc=0x1186, ranges=[(0x1170, 0x11c0)], cu_offset=0,
        call_sites=lambda: [], cfa=lambda: cfa, saved_registers=lambda: {},
        locate_die=lambda offset: OptimizedOut("optimized out")))
    resolver._written = frozenset({"rsp", "rbx"})        # pushes and a sub rsp
    return resolver


def test_the_entry_stack_pointer_is_the_cfa_less_the_return_address():
    location = translate_ops(STACK_ARGUMENT, lambda: OptimizedOut("no frame base"))
    resolved = _resolver((RSP, 32)).resolve(location)
    assert isinstance(resolved, ComputedAddress)
    assert _evaluate(resolved.expression, rsp=0x7000) == 0x7000 + 32      # the CFA itself


def test_without_a_cfa_it_stays_optimized_out():
    location = translate_ops(STACK_ARGUMENT, lambda: OptimizedOut("no frame base"))
    resolved = _resolver(OptimizedOut("no CFI")).resolve(location)
    assert isinstance(resolved, OptimizedOut) and "rsp" in resolved.reason


def _evaluate(expression: ValueExpression, rsp: int) -> int:
    def value(tree):
        match tree:
            case ("reg", register, offset):
                assert register == RSP
                return rsp + offset
            case ("const", number):
                return number
            case ("+", left, right):
                return value(left) + value(right)
        raise AssertionError(tree)
    return value(expression.tree)
