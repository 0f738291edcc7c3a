"""`print $args;` / `print $locals;` (plan/variables.py): the variables
gdb's `info args` / `info locals` list at the PC, in its order, shadowed
ones too, each its own value; `(none)` where there is none; bounded with a
note when they would not fit an event; `$args` only alone in a print."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from gs_cgen.dwarf.module import open_module
from gs_cgen.errors import ScriptError
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import (EventTransport, FormatLine, MemoryCapture, NoCapture,
                                PidNamespace, SlotRef)
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.variables import bound_sizes
from gs_cgen.script.check import check
from gs_cgen.script.parser import parse
from tests.prerequisites import require
from tests.unit.conftest import FIXTURES

SOURCE = FIXTURES / "variables.c"


def marker(name: str) -> int:
    for number, text in enumerate(SOURCE.read_text().splitlines(), 1):
        if f"LINE:{name}" in text:
            return number
    raise KeyError(name)


@pytest.fixture(scope="module", params=["-O0", "-O2"])
def binary(request, tmp_path_factory) -> str:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("variables") / f"variables{request.param}"
    subprocess.run(["gcc", "-g", request.param, "-fPIE", "-pie", "-o", str(out), str(SOURCE)],
                   check=True)
    return str(out)


def plan(binary: str, text: str, transport=EventTransport.RINGBUF):
    script = parse(text)
    check(script)
    options = PlanOptions("t.gs", PidNamespace(False), transport)
    return build_plan(script, ModuleSet.of(open_module(binary)), options)


def listed(probe, line_index: int = 0) -> tuple[str, list[str]]:
    """The line's literal text with `{}` for values, and the slot names."""
    line = probe.lines[line_index]
    assert isinstance(line, FormatLine)
    text = "".join("{}" if isinstance(p, SlotRef) else p for p in line.pieces)
    return text, [probe.slots[p.slot].expr_text for p in line.pieces if isinstance(p, SlotRef)]


def test_args_are_the_parameters_in_declaration_order(binary):
    (probe,) = plan(binary, "trace compute { print $args; }").probes
    assert listed(probe) == ("$args: a = {}, b = {}, name = {}, p = {}, m = {}",
                             ["a", "b", "name", "p", "m"])


def test_locals_list_a_shadowed_local_after_the_one_hiding_it(binary):
    (probe,) = plan(binary, f"trace variables.c:{marker('inner')} {{ print $locals; }}").probes
    # gdb's info locals here: sum (inner block), i (loop), sum, scaled (function)
    assert listed(probe) == ("$locals: sum = {}, i = {}, sum = {}, scaled = {}",
                             ["sum", "i", "sum", "scaled"])


def test_no_parameter_or_local_prints_none(binary):
    (probe,) = plan(binary, "trace nothing { print $args; print $locals; }").probes
    assert [line.pieces for line in probe.lines] == [("$args: (none)",), ("$locals: (none)",)]
    assert probe.slots == ()


def test_an_optimized_out_local_is_its_own_value(binary):
    (probe,) = plan(binary, "trace compute { print $locals; }").probes
    captures = {slot.expr_text: slot.capture for slot in probe.slots}
    assert set(captures) == {"sum", "scaled"}
    if binary.endswith("-O2"):
        # gdb at `break compute` in the -O2 build: sum and scaled <optimized out>
        assert all(isinstance(c, NoCapture) and c.optimized_out for c in captures.values())
    else:
        assert not any(isinstance(c, NoCapture) for c in captures.values())


def test_locals_too_large_together_are_bounded_with_a_note(binary):
    line = marker("big")
    (probe,) = plan(binary, f"trace variables.c:{line} {{ print $locals; }}",
                    EventTransport.PERF).probes
    captures = {slot.expr_text: slot.capture for slot in probe.slots}
    shorts, numbers = captures["shorts"], captures["numbers"]
    assert isinstance(shorts, MemoryCapture) and isinstance(numbers, MemoryCapture)
    assert shorts.size == numbers.size < 16128          # both under object_cap(PERF), equal
    assert probe.event_size <= 32256
    (note,) = probe.notes
    assert note.startswith("note: 'print $locals;' at big_locals needs ")
    assert f"each value is read up to {shorts.size} bytes" in note
    # over the ring buffer they fit whole (up to object_cap): no note
    (ring,) = plan(binary, f"trace variables.c:{line} {{ print $locals; }}").probes
    assert ring.notes == ()


def test_bound_sizes_keeps_small_values_and_shares_the_rest():
    sizes, bound = bound_sizes([8, 1000, 3000], [False, True, True], 2000, 16)
    assert bound.cap is not None and bound.wanted == 16 * 3 + 8 + 1000 + 3000
    assert sizes[0] == 8 and sizes[1] == sizes[2] == bound.cap
    assert 16 * 3 + 8 + 2 * bound.cap <= 2000 < 16 * 3 + 8 + 2 * (bound.cap + 8)
    assert bound_sizes([8, 100], [False, True], 2000, 16) == ([8, 100], bound_sizes(
        [8, 100], [False, True], 2000, 16)[1])
    assert bound_sizes([8, 100], [False, True], 2000, 16)[1].cap is None


@pytest.mark.parametrize("text", ['trace f { print "{}", $args; }', "trace f { let x = $locals; }",
                                  "trace f { if $args == 1 { print 1; } }",
                                  "trace f { print $locals + 1; }"])
def test_variable_lists_stand_alone_in_a_print(text):
    with pytest.raises(ScriptError) as err:
        check(parse(text))
    assert "is a list of variables: it can only be printed on its own" in err.value.message


def test_the_planner_refuses_a_variable_list_as_a_value(binary):
    """Statements check.py does not know (a later kind) reach the planner,
    which says the same."""
    from gs_cgen.errors import PlanError
    options = PlanOptions("t.gs", PidNamespace(False))
    with pytest.raises(PlanError) as err:
        build_plan(parse('trace compute { print "{}", $locals; }'),
                   ModuleSet.of(open_module(binary)), options)
    assert err.value.message == ("'$locals' is a list of variables: it can only be printed "
                                 "on its own")
