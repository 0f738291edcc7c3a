"""Variables visible at a PC and their locations, checked against gdb's
`info scope`."""
from __future__ import annotations

import re

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import (DWARF_REGISTER_NAMES, CallSiteValue, AtAddress, AtRegisterOffset, ImplicitValue,
                                 Composite, ComputedAddress, ComputedValue, InRegister, OptimizedOut,
                                 UnsupportedLocation, ValueExpression, VariableKind)
from gs_cgen.dwarf.types import IntType, PointerType, strip

RBP, RSP = 6, 7
# After `push %rbp; mov %rsp,%rbp` the CFA is rbp+16 (return address and
# saved rbp), so `DW_OP_fbreg N` with frame base DW_OP_call_frame_cfa is
# [rbp + 16 + N] at every post-prologue PC of an -O0 function.
O0_CFA_OFFSET = 16

_SYMBOL = re.compile(r"^Symbol (\w+) is (.*?)(?=^Symbol |\Z)", re.S | re.M)
_RANGE = re.compile(r"Range (0x[0-9a-f]+)-(0x[0-9a-f]+): (a variable in \$(\w+)|the constant (-?\d+)"
                    r"|a complex DWARF expression:\s+0: (DW_OP_\w+))")


def _scope(gdb_text, binary: str, where: str) -> dict[str, str]:
    return dict(_SYMBOL.findall(gdb_text(binary, f"info scope {where}")))


def _by_name(variables):
    return {v.name: v for v in variables}


@pytest.mark.parametrize("build", ("O0", "O0-dwarf4"))
@pytest.mark.parametrize("function", ("add", "scale", "sum_array", "move_point", "main"))
def test_frame_offsets_match_gdb_info_scope(binaries, gdb_text, build, function):
    module = open_module(binaries[build])
    (site,) = module.find_functions(function)
    found = _by_name(module.variables_at(site.probe_address))
    for name, text in _scope(gdb_text, binaries[build], function).items():
        fbreg = re.search(r"DW_OP_fbreg (-?\d+)", text)
        static = re.search(r"static storage at address (0x[0-9a-f]+)", text)
        if fbreg:
            assert found[name].location == AtRegisterOffset(RBP, O0_CFA_OFFSET + int(fbreg.group(1))), name
        elif static:
            assert found[name].location == AtAddress(int(static.group(1), 16)), name


def test_innermost_scope_first_in_gdb_order(binaries, gdb_text):
    module = open_module(binaries["O0"])
    (site,) = module.find_lines("dwarf_basic.c", 58)        # inside scale's inner block
    names = [v.name for v in module.variables_at(site.address)]
    assert names == list(_scope(gdb_text, binaries["O0"], "dwarf_basic.c:58"))
    assert names[0] == "bonus"


def test_inner_block_hidden_outside_its_range(binaries):
    module = open_module(binaries["O0"])
    (site,) = module.find_functions("scale")
    assert "bonus" not in _by_name(module.variables_at(site.probe_address))


def test_kinds_and_types_at_O0(binaries):
    module = open_module(binaries["O0"])
    (site,) = module.find_functions("sum_array")
    found = _by_name(module.variables_at(site.probe_address))
    assert found["items"].kind is VariableKind.PARAMETER
    assert found["total"].kind is VariableKind.LOCAL
    assert isinstance(found["items"].type, PointerType)
    assert strip(found["items"].type.target) == IntType("int", 4, True)
    assert found["total"].decl_line == 65
    assert found["total"].decl_file.endswith("dwarf_basic.c")


@pytest.mark.parametrize("build", ("O2", "O2-dwarf4"))
@pytest.mark.parametrize("function", ("add", "scale", "sum_array", "main"))
def test_location_lists_match_gdb(binaries, gdb_text, build, function):
    """Each location-list range gdb prints, checked at its first PC."""
    module = open_module(binaries[build])
    checked = 0
    for name, text in _scope(gdb_text, binaries[build], function).items():
        for start, end, _, reg, const, op in _RANGE.findall(text):
            pc = int(start, 16)
            if pc == int(end, 16):
                continue                  # empty range: never selected
            location = _by_name(module.variables_at(pc))[name].location
            if reg:
                assert location == InRegister(DWARF_REGISTER_NAMES.index(reg)), (name, start)
            elif const:
                assert location == ImplicitValue(int(const)), (name, start)
            elif op in ("DW_OP_entry_value", "DW_OP_GNU_entry_value"):
                # usable only while the function has not written the register
                assert isinstance(location, (InRegister, OptimizedOut, CallSiteValue)), (name, start)
            else:
                # any other expression is compiled (values checked live against gdb)
                assert isinstance(location, (ComputedValue, ComputedAddress, Composite)), \
                    (name, start, location)
            checked += 1
    assert checked or function == "add"


def test_location_list_gap_is_optimized_out(binaries):
    module = open_module(binaries["O2"])
    (site,) = module.find_functions("scale")
    result = _by_name(module.variables_at(site.probe_address))["result"]
    assert result.location == OptimizedOut("not available at this PC")


def test_const_value_and_registers_at_O2(binaries):
    module = open_module(binaries["O2"])
    (site,) = module.find_functions("scale")
    found = _by_name(module.variables_at(site.probe_address))
    assert found["value"].location == InRegister(5)               # rdi
    assert found["factor"].location == ImplicitValue(3)           # constprop clone
    (add,) = module.find_functions("add")
    sum_ = _by_name(module.variables_at(add.probe_address))["sum"]
    # DW_OP_breg5 0 DW_OP_breg4 0 DW_OP_plus DW_OP_stack_value: a + b, computed by the probe
    assert sum_.location == ComputedValue(ValueExpression(("+", ("reg", 5, 0), ("reg", 4, 0))))


def test_fbreg_at_O2_uses_cfa_from_cfi(binaries, gdb_text):
    module = open_module(binaries["O2"])
    (site,) = module.find_functions("main")
    fbreg = int(re.search(r"DW_OP_fbreg (-?\d+)", _scope(gdb_text, binaries["O2"], "main")["values"]).group(1))
    values = _by_name(module.variables_at(site.probe_address))["values"]
    # At a function's first instruction the CFA is rsp+8 (return address).
    assert values.location == AtRegisterOffset(RSP, 8 + fbreg)


def test_pc_outside_functions_is_an_error(binaries):
    from gs_cgen.errors import DebugInfoError
    with pytest.raises(DebugInfoError, match="no function with debug info covers"):
        open_module(binaries["O0"]).variables_at(0x10)


@pytest.mark.parametrize("build", ("O2", "O2-dwarf4"))
def test_inlined_scope_is_its_own_frame_like_gdb(binaries, gdb_text, build):
    """At -O2 clamp_add() is inlined into bump(): at a line of clamp_add the
    innermost frame is clamp_add's, with its parameters from the
    DW_TAG_inlined_subroutine (names via DW_AT_abstract_origin). gdb's
    `info scope` stops at that frame's function block, and `print before`
    (bump's local) is "No symbol in current context": bump's variables are
    not in scope there."""
    module = open_module(binaries[build])
    (site,) = module.find_lines("dwarf_inline.c", 5)
    frame = module.frame_at(site.address, site.frame_die)
    gdb_names = [n for n in _scope(gdb_text, binaries[build], "dwarf_inline.c:5") if n != "clamp_add"]
    assert [v.name for v in frame.variables] == gdb_names
    assert frame.function == "clamp_add" and frame.inlined and frame.inlined_into == ("bump",)
    assert site.function == "bump"
