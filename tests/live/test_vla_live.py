"""Variable-length arrays: printed whole, their elements are gdb's (gdb
prints `{0, 7, 14}` and `"abc"`), with the length read at run time from the
DWARF bound (a frame slot at -O0; a register expression and an artificial
variable's location list at -O2), never `[]`; their elements one by one
too, and in JSON."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, marker_line
from tests.prerequisites import require


def gdb_values(binary, line: int) -> tuple[list[int], str]:
    out = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"break vla.c:{line}", "-ex", "run",
                          "-ex", "print vla", "-ex", "print name", str(binary)],
                         capture_output=True, text=True, timeout=60).stdout
    vla = re.search(r"^\$1 = \{([^}]*)\}", out, re.M).group(1)
    name = re.search(r'^\$2 = "([^"]*)"', out, re.M).group(1)
    return [int(v) for v in vla.split(",")], name


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_vla_whole_and_elements_are_gdbs(build_dir, start_target, opt):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = compile_fixture(build_dir, "vla.c", f"-g {opt} -fPIE -pie", f"vla{opt}")
    line = marker_line("vla.c", "vla")
    vla, name = gdb_values(binary, line)
    assert len(vla) == len(name) == 3
    target = start_target(binary)
    script = (f"trace vla.c:{line} {{ print vla; print name; "
              + " ".join(f"print vla[{i}]; print name[{i}];" for i in range(3)) + " }")
    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--max-events", "1",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"vla = [{', '.join(map(str, vla))}]", f'name = "{name}"']
    assert lines[2:] == [text for i in range(3)
                         for text in (f"vla[{i}] = {vla[i]}", f"name[{i}] = {ord(name[i])}")]


def test_vla_in_json(build_dir, start_target):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = compile_fixture(build_dir, "vla.c", "-g -O0 -fPIE -pie", "vla-O0")
    line = marker_line("vla.c", "vla")
    vla, _ = gdb_values(binary, line)
    target = start_target(binary)
    result = gs_cgen("trace", "-p", str(target.pid), "-s", f"trace vla.c:{line} {{ print vla; }}",
                     "--max-events", "1", "--output", "json")
    assert result.returncode == 0, result.stderr
    (value,) = json.loads(result.stdout.splitlines()[0])["values"]
    assert value["value"] == vla and value["status"] == "ok"
