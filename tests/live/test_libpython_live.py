"""Live: a running python3.11 (the yardstick build: libpython3.11.so.1.0,
-O3, DWARF 5) doing `table["k<i>"] = i` (tests/fixtures/dict_inserts.py).

gdb is the oracle at the same probes of the same process:
  break PyDict_SetItem: (char *)(((PyASCIIObject *)key) + 1) is "k<i>",
    ((PyLongObject *)value)->ob_digit[0] is i, key->ob_type->tp_name "str";
  break Objects/dictobject.c:1874: gdb moves it to line 1875, two
    locations (the out-of-line _PyDict_SetItem_Take2 and its copy inlined
    in PyDict_SetItem); the insert path runs the inlined one.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import FIXTURES, RunningTarget, gs_cgen, require

LINE = 1874                      # Objects/dictobject.c, in _PyDict_SetItem_Take2 (3.11.7)
KEY_TEXT = 'cast(cast(key, "PyASCIIObject *") + 1, "char *")'
VALUE_DIGIT = 'cast(value, "PyLongObject *").ob_digit[0]'


def _python311() -> tuple[str, str] | None:
    """(interpreter, its libpython3.11.so.1.0) of the python3.11 on PATH."""
    if shutil.which("python3.11") is None:
        return None
    out = subprocess.run(["python3.11", "-c", "import sys, sysconfig; print(sys.executable); "
                          "print(sysconfig.get_config_var('LIBDIR'))"],
                         capture_output=True, text=True).stdout.split()
    if len(out) != 2:
        return None
    library = os.path.join(out[1], "libpython3.11.so.1.0")
    return (out[0], library) if os.path.exists(library) else None


@pytest.fixture(scope="module")
def python_target():
    require(None if shutil.which("gdb") else "gdb is not installed")
    found = _python311()
    require(None if found else "no python3.11 with a shared libpython3.11.so.1.0")
    interpreter, library = found
    target = RunningTarget([interpreter, str(FIXTURES / "dict_inserts.py")])
    yield target, os.path.realpath(library)
    target.stop()


def trace(pid: int, script: str, events: int) -> list[str]:
    result = gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", str(events),
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def gdb_batch(target: list[str], *commands: str) -> str:
    """gdb's output for `commands` on `target` (["-p", PID] or [FILE])."""
    args = ["gdb", "-nx", "-batch"]
    for command in commands:
        args += ["-ex", command]
    return subprocess.run(args + target, capture_output=True, text=True, timeout=120).stdout


def assert_consecutive_inserts(rows: list[tuple[str, int]]) -> None:
    """Each row is one `table["k<i>"] = i`, for consecutive i."""
    first = rows[0][1]
    assert rows == [(f"k{first + n}", first + n) for n in range(len(rows))], rows


def test_dict_setitem_key_and_value(python_target):
    target, _ = python_target
    script = (f'trace PyDict_SetItem {{ print "{{}} {{}} {{}}", {KEY_TEXT}, {VALUE_DIGIT}, '
              'key.ob_type.tp_name; }')
    lines = trace(target.pid, script, events=5)
    matches = [re.fullmatch(r'"(k\d+)" (\d+) "str"', line) for line in lines]
    assert all(matches), lines
    rows = [(m.group(1), int(m.group(2))) for m in matches]
    assert_consecutive_inserts(rows)
    gdb = gdb_batch(["-p", str(target.pid)], "break PyDict_SetItem", "continue",
                    "p (char *)(((PyASCIIObject *)key) + 1)",
                    "p ((PyLongObject *)value)->ob_digit[0]", "p key->ob_type->tp_name")
    key = re.search(r'^\$1 = 0x[0-9a-f]+ "(k\d+)"$', gdb, re.M).group(1)
    digit = int(re.search(r"^\$2 = (\d+)$", gdb, re.M).group(1))
    # a later insert than any gs-cgen saw, with the same key/value relation
    assert key == f"k{digit}" and digit > rows[-1][1], gdb
    assert re.search(r'^\$3 = 0x[0-9a-f]+ "str"$', gdb, re.M), gdb


def test_dictobject_line_probe_sites_are_gdbs(python_target):
    target, library = python_target
    script = f'trace Objects/dictobject.c:{LINE} {{ print "{{}} {{}}", {KEY_TEXT}, {VALUE_DIGIT}; }}'
    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--dry-run")
    assert result.returncode == 0, result.stderr
    ours = {(int(address, 16), int(line)) for line, address in re.findall(
        r"at \S+/Objects/dictobject\.c:(\d+) \[\S+ 0x([0-9a-f]+),", result.stdout)}
    gdb = gdb_batch([library], f"break Objects/dictobject.c:{LINE}", "info breakpoints")
    theirs = {(int(address, 16), int(line)) for address, line in re.findall(
        r"(0x[0-9a-f]+) in \S+ at Objects/dictobject\.c:(\d+)", gdb)}
    assert ours == theirs and len(ours) == 2, (result.stdout, gdb)
    lines = trace(target.pid, script, events=4)
    matches = [re.fullmatch(r'"(k\d+)" (\d+)', line) for line in lines]
    assert all(matches), lines
    assert_consecutive_inserts([(m.group(1), int(m.group(2))) for m in matches])
