"""A C99 variable-length array printed whole is read with the length its
DWARF bound gives at run time (a dump-like capture of that many bytes, at
most the object cap), and one whose elements are VLAs themselves is an
explicit error: never `[]`, never its empty declared bound."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.emit.program import emit_program
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.limits import object_cap
from gs_cgen.plan.model import EventTransport, NoCapture, PidNamespace, VariableArrayCapture
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script.parser import parse
from tests.prerequisites import require

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OPTIONS = PlanOptions("t.gs", PidNamespace(False))
MATRIX = """
int grid(int n)
{
    int m[n][n];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            m[i][j] = i + j;
    return m[n - 1][n - 1];   /* LINE:grid */
}
int main(void) { return grid(2); }
"""


def _build(tmp_path_factory, name: str, source: Path) -> str:
    require(None if shutil.which("gcc") else "gcc is not installed")
    out = tmp_path_factory.mktemp(name) / name
    subprocess.run(["gcc", "-g", "-O0", "-o", str(out), str(source)], check=True)
    return str(out)


def _marker(text: str, marker: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if f"LINE:{marker}" in line)


def _probe(binary: str, script: str):
    (probe,) = build_plan(parse(script), ModuleSet.of(open_module(binary)), OPTIONS).probes
    return probe


@pytest.fixture(scope="module")
def vla_binary(tmp_path_factory) -> str:
    return _build(tmp_path_factory, "vla", FIXTURES / "vla.c")


def test_whole_vla_is_read_with_its_run_time_length(vla_binary):
    line = _marker((FIXTURES / "vla.c").read_text(), "vla")
    probe = _probe(vla_binary, f"trace vla.c:{line} {{ print vla; print name; }}")
    vla, name = (slot.capture for slot in probe.slots)
    cap = object_cap(EventTransport.RINGBUF)
    assert isinstance(vla, VariableArrayCapture) and vla.cap == cap
    assert isinstance(name, VariableArrayCapture) and name.length != vla.length
    # the probe computes the length; the reader gets at most cap bytes
    assert "gs_read_dump" in emit_program(build_plan(
        parse(f"trace vla.c:{line} {{ print vla; }}"), ModuleSet.of(open_module(vla_binary)),
        OPTIONS))


def test_vla_of_vlas_is_an_explicit_error(tmp_path_factory, tmp_path):
    source = tmp_path / "grid.c"
    source.write_text(MATRIX)
    binary = _build(tmp_path_factory, "grid", source)
    probe = _probe(binary, f"trace grid.c:{_marker(MATRIX, 'grid')} {{ print m; print m[1][1]; }}")
    whole, element = (slot.capture for slot in probe.slots)
    assert isinstance(whole, NoCapture) and "no fixed size" in whole.reason
    assert not isinstance(element, NoCapture)
