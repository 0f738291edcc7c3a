"""One value the planner cannot read never fails the script (issue #7.6):
a float parameter described as DW_OP_entry_value(DW_OP_regval_type xmm0)
at -O2 is unavailable with its reason while its neighbours are read."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import InRegister, UnsupportedLocation
from gs_cgen.info import describe
from gs_cgen.plan import ir
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import NoCapture, PidNamespace, ScalarCapture
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script.parser import parse

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "float_param.c"
OPTIONS = PlanOptions("t.gs", PidNamespace(False))
RCX = 2
SIMD_ENTRY = "entry value in SIMD register xmm0 (not in pt_regs)"


@pytest.fixture(scope="module")
def float_param(tmp_path_factory):
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    binary = tmp_path_factory.mktemp("float") / "float_param"
    subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(binary), str(FIXTURE)],
                   check=True)
    line = next(n for n, text in enumerate(FIXTURE.read_text().splitlines(), 1)
                if "g_sink += id;" in text)
    return str(binary), line


def test_fixture_really_has_the_shape_gdb_describes(float_param):
    """gdb is the oracle for what DWARF says at the probe PC."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    binary, line = float_param
    (site,) = open_module(binary).find_lines(FIXTURE.name, line)
    text = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"info scope *0x{site.address:x}",
                           binary], capture_output=True, text=True, check=True).stdout
    celsius = text.split("Symbol celsius")[1].split("Symbol ")[0]
    covering = [r for r in re.findall(r"Range (0x[0-9a-f]+)-(0x[0-9a-f]+): (.*?)(?=\n\s*Range|\Z)",
                                      celsius, re.S)
                if int(r[0], 16) <= site.address < int(r[1], 16)]
    assert len(covering) == 1 and "DW_OP_entry_value" in covering[0][2] \
        and "DW_OP_regval_type" in covering[0][2] and "$xmm0" in covering[0][2], celsius
    assert re.search(r"Symbol id is .*Range 0x[0-9a-f]+-0x[0-9a-f]+: a variable in \$rcx", text,
                     re.S), text


def test_dwarf_layer_says_why(float_param):
    binary, line = float_param
    module = open_module(binary)
    (site,) = module.find_lines(FIXTURE.name, line)
    found = {v.name: v for v in module.variables_at(site.address)}
    assert found["celsius"].location == UnsupportedLocation(SIMD_ENTRY)
    assert found["id"].location == InRegister(RCX)


def test_the_script_is_planned_with_that_value_unavailable(float_param):
    """Before: `internal error: ValueError: invalid literal for int() with
    base 10: 'val_type'`, and no probe at all."""
    binary, line = float_param
    module = open_module(binary)
    for pattern in (f"float_param.c:{line}",
                    f"0x{module.find_lines(FIXTURE.name, line)[0].address:x}"):
        script = parse(f"trace {pattern} {{ print celsius; print id; print bucket; }}")
        (probe,) = build_plan(script, ModuleSet.of(module), OPTIONS).probes
        celsius, id_, _ = (slot.capture for slot in probe.slots)
        assert celsius == NoCapture(celsius.ctype, f"unsupported: {SIMD_ENTRY}", False)
        assert isinstance(id_, ScalarCapture)
        assert id_.value == ir.Convert(ir.RegisterValue("cx"), 4, True)


def test_info_names_the_reason(float_param):
    binary, line = float_param
    text = describe(ModuleSet.of(open_module(binary)), "line", f"{FIXTURE.name}:{line}")
    assert f"parameter double celsius  @ location list [0x" in text
    assert f"→ unsupported: {SIMD_ENTRY}" in text
    assert re.search(r"parameter int id  @ location list \[0x[0-9a-f]+,0x[0-9a-f]+\) → register rcx",
                     text), text
