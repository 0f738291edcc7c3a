"""The availability map (plan/availability.py, render/availability.py) and
`gs-cgen info --output json`: what each line of a function can read, as
the probes of `trace FILE:LINE` would; the grid fits 80 columns; a
shadowed name is its own column; --lines with a line or address is a usage
error. (tests/live/test_variables_live.py checks the marks against gdb.)"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from gs_cgen.dwarf.model import (AtRegisterOffset, CallSiteValue, Composite, ImplicitValue,
                                 InRegister, OptimizedOut, Piece, UnsupportedLocation)
from gs_cgen.dwarf.module import open_module
from gs_cgen.info import describe_data, describe_lines
from gs_cgen.plan.availability import (AtAddressCell, Cell, Column, FunctionMap, LineRow,
                                       classify)
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.render.availability import map_text
from tests.prerequisites import require
from tests.unit.conftest import FIXTURES
from tests.unit.test_startup_imports import _imported

SOURCE = FIXTURES / "variables.c"
REPO = FIXTURES.parents[1]


def marker(name: str) -> int:
    for number, text in enumerate(SOURCE.read_text().splitlines(), 1):
        if f"LINE:{name}" in text:
            return number
    raise KeyError(name)


def _build(tmp_path_factory, flags: str) -> str:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("availability") / f"variables{flags}"
    subprocess.run(["gcc", "-g", flags, "-fPIE", "-pie", "-o", str(out), str(SOURCE)], check=True)
    return str(out)


@pytest.fixture(scope="module")
def o0(tmp_path_factory) -> str:
    return _build(tmp_path_factory, "-O0")


@pytest.fixture(scope="module")
def o2(tmp_path_factory) -> str:
    return _build(tmp_path_factory, "-O2")


def _map(binary: str) -> dict:
    (found,) = describe_lines(ModuleSet.of(open_module(binary)), "compute", True)["maps"]
    return found


def _marks(found: dict) -> dict[int, dict[str, str]]:
    """line -> 'name@decl_line' -> mark"""
    keys = [f"{v['name']}@{v['decl_line']}" for v in found["variables"]]
    return {row["line"]: {key: cell["mark"] for key, cell in zip(keys, row["cells"])}
            for row in found["lines"]}


def test_at_O0_every_variable_is_in_its_frame_slot_where_it_is_in_scope(o0):
    found = _map(o0)
    names = [v["name"] for v in found["variables"]]
    assert names[:5] == ["a", "b", "name", "p", "m"]            # parameters first, in order
    assert sorted(names[5:]) == ["i", "scaled", "sum", "sum"]   # the shadowed sum twice
    marks = _marks(found)
    shadow, inner, after = marker("shadow"), marker("inner"), marker("after")
    assert shadow in marks and inner in marks and after in marks
    inner_sum = f"sum@{shadow}"
    params = [f"{v['name']}@{v['decl_line']}" for v in found["variables"][:5]]
    for line, row in marks.items():
        assert all(row[p] == "✓" for p in params), line
        assert row[inner_sum] == ("✓" if line in (shadow, inner) else "·"), line
    for row in found["lines"]:
        for cell in row["cells"]:
            if cell["status"] == "readable":
                assert cell["how"].startswith("[rbp-"), cell       # frame slots at -O0


def test_at_O2_a_local_is_optimized_out_before_it_is_computed(o2):
    marks = _marks(_map(o2))
    first = min(marks)
    outer_sum, scaled = f"sum@{marker('sum')}", f"scaled@{marker('sum') + 1}"
    assert marks[first][outer_sum] == "·" and marks[first][scaled] == "·"
    assert marks[marker("inner")][outer_sum] == "✓"


def test_plain_grid_fits_80_columns_and_names_shadowed_columns(o0, o2):
    for binary in (o0, o2):
        text = describe_lines(ModuleSet.of(open_module(binary)), "compute", False)
        lines = text.splitlines()
        assert lines[0] == "compute: availability by line of variables.c"
        assert all(len(line) <= 80 for line in lines[2:]), text
        assert f"sum@{marker('shadow')}" in text and f"sum@{marker('sum')}" in text
        assert "✓ readable" in text


def test_cells_combine_the_addresses_of_a_line():
    cell = AtAddressCell
    found = FunctionMap("f", "/m", 0x10, (Column("x", "local", "int", 3, None),
                                          Column("y", "local", "int", 4, None)),
                        (LineRow("/f.c", 5, (0x10, 0x20), (
                            Cell("partly", "rdi", (cell(0x10, "readable", "rdi", ""),
                                                   cell(0x20, "unavailable", "optimized out", ""))),
                            Cell("unavailable", "optimized out", ()))),))
    text = map_text(found)
    assert "    5  ~ rdi  ·" in text


def test_classify_says_how():
    assert classify(InRegister(5)) == ("readable", "rdi")
    assert classify(AtRegisterOffset(6, -20)) == ("readable", "[rbp-20]")
    assert classify(ImplicitValue(3)) == ("readable", "const")
    assert classify(CallSiteValue(AtRegisterOffset(7, 0), ())) == ("readable", "entry")
    assert classify(OptimizedOut("optimized out")) == ("unavailable", "optimized out")
    assert classify(UnsupportedLocation("x")) == ("unavailable", "unsupported")
    half = Composite((Piece(32, InRegister(0)), Piece(32, OptimizedOut("gone"))))
    assert classify(half) == ("partly", "pieces")


def test_info_json_lists_each_site_and_variable(o2):
    data = describe_data(ModuleSet.of(open_module(o2)), "line", f"variables.c:{marker('inner')}")
    (site,) = data["sites"]
    assert site["line"] == marker("inner") and site["function"] == "compute"
    # innermost block first, as gdb's info locals
    assert [v["name"] for v in site["variables"] if v["kind"] == "local"] == [
        "sum", "i", "sum", "scaled"]
    assert {"status", "how", "location", "type", "scope", "decl_line"} <= set(site["variables"][0])


def test_lines_with_a_line_or_address_is_a_usage_error(o0):
    for kind, what in (("line", "variables.c:20"), ("address", "0x1000")):
        done = subprocess.run([sys.executable, "-m", "gs_cgen.cli", "info", "-t", o0, kind, what,
                               "--lines"], capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 2 and "--lines goes with 'function NAME' only" in done.stderr


def test_info_output_json_is_one_object(o0):
    done = subprocess.run([sys.executable, "-m", "gs_cgen.cli", "info", "-t", o0, "function",
                           "compute", "--output", "json"], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sites"][0]["function"] == "compute"


def test_info_lines_imports_no_bcc_capstone_or_ir(o0):
    out, modules = _imported("info", "-t", o0, "function", "compute", "--lines")
    assert "availability by line" in out
    assert modules == []
