"""emit() says which C lines each script statement produced, so that a
clang error in them names the statement (runtime/session.py)."""
from __future__ import annotations

from gs_cgen.emit.program import emit
from tests.unit.plan.test_event_limits import plan

SCRIPT = 'trace handle { if fd == 3 { print fd; } print "x {}", size; }'


def lines_of(program, text: str) -> list[str]:
    """The C lines of the innermost statement at `text` of SCRIPT."""
    column = SCRIPT.index(text) + 1
    (found,) = [s for s in program.statements if s.span.column == column]
    return program.text.splitlines()[found.first - 1:found.last]


def test_each_statement_owns_the_c_it_produced():
    program = emit(plan(SCRIPT))
    condition = lines_of(program, "fd == 3")
    assert condition[1].strip() == "/* if fd == 3 */" and condition[-1].strip() == "}"
    printed = lines_of(program, "fd; }")
    assert printed[1].strip() == "/* value 1: fd */" and "gs_read_user(ev, 64" in printed[2]
    assert lines_of(program, "size")[1].strip() == "/* value 2: size */"


def test_innermost_first_then_the_trace_block_as_a_whole():
    program = emit(plan(SCRIPT))
    *inner, block = program.statements
    lines = program.text.splitlines()
    assert block.span.column == 1 and block.span.end_column == len(SCRIPT) + 1
    assert lines[block.first - 1].startswith("int gs_probe_0(") and lines[block.last - 1] == "}"
    assert all(block.first < s.first <= s.last < block.last for s in inner)
    # the print inside the `if` is read once the event is taken, after
    # the conditions are decided: its lines are its own
    by_column = {s.span.column: s for s in inner}
    condition = by_column[SCRIPT.index("fd == 3") + 1]
    printed = by_column[SCRIPT.index("fd; }") + 1]
    assert condition.last < printed.first
