"""Variable-length arrays: their elements equal gdb's, and the whole array
is an explicit error, never `[]` (gdb prints `{0, 7, 14}`: an empty list
would be a plausible wrong value)."""
from __future__ import annotations

import re
import shutil
import subprocess

from tests.live.conftest import compile_fixture, gs_cgen, marker_line
from tests.prerequisites import require


def gdb_values(binary, line: int) -> tuple[list[int], str]:
    out = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"break vla.c:{line}", "-ex", "run",
                          "-ex", "print vla", "-ex", "print name", str(binary)],
                         capture_output=True, text=True, timeout=60).stdout
    vla = re.search(r"^\$1 = \{([^}]*)\}", out, re.M).group(1)
    name = re.search(r'^\$2 = "([^"]*)"', out, re.M).group(1)
    return [int(v) for v in vla.split(",")], name


def test_vla_elements_are_gdbs_and_the_whole_array_is_an_error(build_dir, start_target):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = compile_fixture(build_dir, "vla.c")
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
    for whole in lines[:2]:
        assert "<error: unsupported: a variable-length array" in whole, whole
    assert lines[2:] == [text for i in range(3)
                         for text in (f"vla[{i}] = {vla[i]}", f"name[{i}] = {ord(name[i])}")]
