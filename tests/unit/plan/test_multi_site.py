"""A pattern with several sites where a variable is in scope at some only
(issue #7.7): it is read where it exists, `<OPTIMIZED_OUT>` ("not in
scope at this site") where not; a name in scope at no site is the error."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import (AtRegisterOffset, FrameScope, FunctionSite, GlobalVariable, InRegister, VariableKind,
                                 VisibleVariable)
from gs_cgen.errors import PlanError
from gs_cgen.info import describe
from gs_cgen.plan import ir
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import NoCapture, PidNamespace, ScalarCapture
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.scope import NOT_IN_SCOPE, block_scopes
from gs_cgen.script.parser import parse
from tests.fakes import INT, LONG, REQUEST, REQUEST_PTR, FakeModule

OPTIONS = PlanOptions("t.gs", PidNamespace(False))
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def _two_sites() -> FakeModule:
    """`op` has two copies (out of line at 0x1100, inlined at 0x1200); the
    inlined one has a local `arg6` the other lacks."""
    module = FakeModule()
    module.functions["op"] = [FunctionSite("op", 0x1100, 0x1180, 0x1100, "op.c", 3),
                              FunctionSite("op", 0x1200, 0x1240, 0x1200, "op.c", 3)]
    fd = VisibleVariable("fd", INT, InRegister(5), VariableKind.PARAMETER)
    module.variables[0x1100] = [fd]
    module.variables[0x1200] = [
        VisibleVariable("arg6", LONG, InRegister(9), VariableKind.LOCAL),
        VisibleVariable("req", REQUEST_PTR, AtRegisterOffset(6, -24), VariableKind.LOCAL),
        VisibleVariable("shared", INT, InRegister(1), VariableKind.LOCAL), fd]
    module.globals["shared"] = GlobalVariable("shared", INT, 0x4010, "data")
    return module


def _plan(text: str, module=None):
    return build_plan(parse(text), ModuleSet.of(module or _two_sites()), OPTIONS)


def test_absent_at_one_site_present_at_the_other():
    first, second = _plan("trace op { print arg6; print fd; }").probes
    assert first.slots[0].capture == NoCapture(LONG, NOT_IN_SCOPE, True)
    assert first.slots[1].capture == ScalarCapture(ir.Convert(ir.RegisterValue("di"), 4, True), INT)
    assert second.slots[0].capture == ScalarCapture(ir.RegisterValue("r9"), LONG)


def test_parts_of_an_absent_value_are_absent_too():
    first, _ = _plan('trace op { print req.id; print *req; print &req; '
                     'print "{}", req.path[1]; }').probes
    member, deref, address, element = (slot.capture for slot in first.slots)
    assert member == NoCapture(INT, NOT_IN_SCOPE, True)
    assert deref == NoCapture(REQUEST, NOT_IN_SCOPE, True)
    assert isinstance(address, NoCapture) and address.optimized_out
    assert isinstance(element, NoCapture) and element.reason == NOT_IN_SCOPE


def test_a_global_of_the_same_name_is_what_c_sees_where_the_local_is_absent():
    first, second = _plan("trace op { print shared; }").probes
    assert first.slots[0].capture.address.address == 0x4010     # the global
    assert second.slots[0].capture == ScalarCapture(ir.Convert(ir.RegisterValue("dx"), 4, True), INT)


def test_a_name_at_no_site_is_an_error_with_candidates_from_every_site():
    with pytest.raises(PlanError) as info:
        _plan("trace op { print arg7; }")
    assert info.value.message == "no variable 'arg7' at any of the 2 sites of op"
    assert info.value.candidates[0] == "arg6"


def test_block_scopes_keep_the_innermost_variable_of_a_name():
    inner = VisibleVariable("x", INT, InRegister(1), VariableKind.LOCAL)
    outer = VisibleVariable("x", LONG, InRegister(2), VariableKind.PARAMETER)
    (scope,) = block_scopes([FrameScope("f", False, (inner, outer))])
    assert scope.visible == {"x": inner} and not scope.elsewhere


def test_a_name_the_inlined_frame_lacks_is_its_callers():
    """gdb's `up`: the frame the probe's inlined copy is inlined into, at
    the same PC; the inlined frame's own names win, `$locals` stays its."""
    own = VisibleVariable("x", INT, InRegister(1), VariableKind.PARAMETER)
    shadowed = VisibleVariable("x", LONG, InRegister(2), VariableKind.LOCAL)
    seed = VisibleVariable("seed", INT, InRegister(3), VariableKind.PARAMETER)
    frame = FrameScope("inlined", True, (own,), inlined_into=("wrapper",),
                       outer=(shadowed, seed))
    (scope,) = block_scopes([frame])
    assert scope.visible == {"x": own, "seed": seed} and scope.variables == (own,)


# ------------------------------------------------------ glibc's __mmap64

# gdb knows glibc's __mmap64 by its DW_AT_linkage_name __GI___mmap64: `break
# __mmap64` finds the ELF symbol (one location), `break __GI___mmap64` the
# function and the copy of itself inlined into it (two).
MMAP64 = "__GI___mmap64"


@pytest.fixture(scope="module")
def libc():
    if not os.path.exists(LIBC) or not open_module(LIBC).has_debug_info:
        require("no libc.so.6 debug info (libc6-dbg)")
    module = open_module(LIBC)
    if len(module.find_functions(MMAP64)) != 2:
        require(f"this glibc's {MMAP64} has not the two sites these tests are about")
    return module


def _gdb_scope(binary: str, address: int) -> str:
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    return subprocess.run(["gdb", "-nx", "-batch", "-ex", f"info scope *0x{address:x}", binary],
                          capture_output=True, text=True, check=True).stdout


def test_mmap64_prints_arg6_where_gdb_has_it(libc):
    """Before: `no variable '__arg6' at __mmap64 (__mmap64)` for the whole
    script, while gdb reads it at the inlined copy."""
    plan = build_plan(parse(f"trace {MMAP64} {{ print __arg6; print len; }}"), ModuleSet.of(libc),
                      OPTIONS)
    for probe in plan.probes:
        # gdb: "Symbol __arg6 is optimized out." at the entry (the function
        # inherits the abstract block's variables, without a location), "is
        # multi-location: ... $r9" at the inlined copy.
        gdb = re.search(r"^Symbol __arg6 is (.*)", _gdb_scope(libc.path, probe.site.address), re.M)
        arg6, length = (slot.capture for slot in probe.slots)
        if gdb.group(1) != "optimized out.":
            assert arg6 == ScalarCapture(ir.RegisterValue("r9"), arg6.ctype)    # long int
        else:
            assert isinstance(arg6, NoCapture) and arg6.reason != NOT_IN_SCOPE
        assert isinstance(length, ScalarCapture)                    # in rsi at both
    assert sum(isinstance(p.slots[0].capture, NoCapture) for p in plan.probes) == 1


def test_mmap64_info_lists_each_frame_once(libc):
    first, second = describe(ModuleSet.of(libc), "function", MMAP64).split("\n\n")
    # Both sites have __arg6: at the entry as gdb lists it there, optimized
    # out (inherited from the abstract block), at the inlined copy in r9.
    assert NOT_IN_SCOPE not in first + second
    assert re.search(r"^  local     long int __arg6  @ optimized out$", first, re.M)
    assert re.search(r"^  local     long int __arg6  @ .*register r9  \(block at line \d+\)$",
                     second, re.M)
    # The inlined copy's frame is its own (gdb: "inlined into frame 1"): its
    # parameters are listed once, and the outer frame's not at all.
    names = re.findall(r"^  parameter .* (\w+)  @", second, re.M)
    assert sorted(names) == sorted(set(names)) == sorted(["addr", "len", "prot", "flags", "fd",
                                                          "offset"])
    assert "inlined into __mmap64: a name not listed here is __mmap64's at this PC (gdb's 'up')" \
        in second
