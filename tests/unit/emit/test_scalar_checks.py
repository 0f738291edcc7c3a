"""The checks emit/scalar.py puts around C's undefined operations, and the
one stack slot every load goes through."""
from __future__ import annotations

from gs_cgen.emit.scalar import emit_scalar
from gs_cgen.emit.writer import CWriter
from gs_cgen.plan import ir


def emitted(node: ir.Scalar) -> tuple[str, str]:
    w = CWriter()
    result = emit_scalar(w, node, "gs_fail_0")
    return w.text(), result


def test_a_run_time_shift_count_fails_unless_below_the_width():
    code, result = emitted(ir.BinaryOp("<<", ir.RegisterValue("di"),
                                       ir.Below(ir.RegisterValue("si"), 32,
                                                "GS_STATUS_SHIFT_RANGE"), True))
    assert code.splitlines() == [
        "    __u64 gs_n1 = gs_reg_si;",
        "    if (gs_n1 >= 0x20ULL) { gs_st = GS_STATUS_SHIFT_RANGE; gs_fa = 0; goto gs_fail_0; }"]
    assert result == "((__u64)((gs_reg_di) << ((gs_n1) & 63)))"


def test_every_load_reads_into_the_shared_slot():
    # Was: one address-taken __u64 per load; clang kept each on the stack and
    # a probe of ~40 loads overflowed the 512-byte BPF stack (clang then
    # exited without a word).
    code, result = emitted(ir.BinaryOp("+", ir.Load(ir.Const(0x10), 4, True),
                                       ir.Load(ir.Const(0x20), 8, False), False))
    assert code.count("gs_load(&gs_ld,") == 2 and "&gs_t" not in code
    assert "__u64 gs_t1 = gs_ld;" in code and "__u64 gs_t2 = gs_ld;" in code
    assert result == "((__u64)((gs_t1) + (gs_t2)))"
