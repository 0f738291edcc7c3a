"""Why a condition failed, as its ExprError line says it: an address only
where a read was made; what is optimized out by name."""
from gs_cgen.plan import ir
from gs_cgen.plan.probe import _optimized_out_operands
from gs_cgen.render.status import ValueStatus
from gs_cgen.render.lines import expr_error_reason
from gs_cgen.render.values import ErrorValue


def test_a_failed_read_names_its_address():
    assert expr_error_reason(ErrorValue(ValueStatus.READ_ERROR, 0x10)) == "read error at 0x10"
    assert expr_error_reason(ErrorValue(ValueStatus.NULL_DEREF, 0)) == \
        "null pointer dereference at 0x0"


def test_optimized_out_names_the_operands_not_an_address():
    gone = ErrorValue(ValueStatus.OPTIMIZED_OUT, 0)
    assert expr_error_reason(gone, ("b", "a")) == "b, a optimized out at this PC"
    assert expr_error_reason(gone) == "optimized out"


def test_the_operands_of_a_condition_left_to_right_once_each():
    b = ir.Fail("GS_STATUS_OPTIMIZED_OUT", "no location-list entry covers this PC", "b")
    a = ir.Fail("GS_STATUS_OPTIMIZED_OUT", "no location-list entry covers this PC", "a")
    zero = ir.Fail("GS_STATUS_DIV_BY_ZERO", "division by zero")
    def op(name, left, right):
        return ir.BinaryOp(name, left, right, True)
    denom = op("-", op("-", b, a), ir.Const(5))
    condition = ir.Logical("||", op("==", denom, ir.Const(0)), op("/", a, op("+", denom, zero)))
    assert _optimized_out_operands(condition) == ("b", "a")
