"""Location expressions beyond one operation (issue #8), at -O2: a struct
split over two registers (DW_OP_piece), a pointer to a variable that has
no address (DW_OP_implicit_pointer), values computed from registers
(breg + breg + plus), a value in memory at a static address, entry values.

gdb is the oracle: it runs the same binary to the same line, first hit,
and prints each expression; gs-cgen launches the binary and prints the
same expressions at its first hit. Both see iteration 0 of main's loop.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.live.conftest import FIXTURES, compile_fixture, gs_cgen, require

SOURCE = "dwarf_exprs.c"
# marker → expressions printed there
PROBES = {
    "pair_sum": ("p", "k", "p.lo", "p.hi"),
    "bump": ("*p", "p[0]", "p"),
    "computed": ("a", "b", "sum", "scaled"),
    "small_pieces": ("s", "t", "t.a", "t.b"),
    "after_call": ("x", "y", "r"),
}


def _line(marker: str) -> int:
    for number, text in enumerate((FIXTURES / SOURCE).read_text().splitlines(), 1):
        if f"marker: {marker} " in text:
            return number
    raise KeyError(marker)


def _gdb_values(binary, marker: str, exprs) -> dict[str, str]:
    commands = [f"break {SOURCE}:{_line(marker)}", "run", *(f"print {e}" for e in exprs), "kill"]
    args = ["gdb", "-nx", "-batch"]
    for command in commands:
        args += ["-ex", command]
    out = subprocess.run([*args, str(binary)], capture_output=True, text=True, timeout=60).stdout
    printed = re.findall(r"^\$(\d+) = (.*)$", out, re.M)
    assert len(printed) == len(exprs), out
    # `(const int *) <synthetic pointer>`: gdb names a pointer's type first
    return {expr: re.sub(r"^\([^)]*\) ", "", text) for expr, (_, text) in zip(exprs, printed)}


def _as_gdb(text: str) -> str:
    """Our rendering in gdb's words: `small { a: 23, b: 10 }` → `{a = 23, b = 10}`."""
    if text == "<OPTIMIZED_OUT>":
        return "<optimized out>"
    if text.startswith("<error: synthetic pointer"):
        return "<synthetic pointer>"
    struct = re.fullmatch(r"\w+ \{ (.*) \}", text)
    if struct:
        return "{" + re.sub(r"(\w+): ", r"\1 = ", struct.group(1)) + "}"
    return text


@pytest.fixture(scope="module")
def binary(build_dir):
    require(None if shutil.which("gdb") else "gdb is not installed")
    return compile_fixture(build_dir, SOURCE, "-g -O2 -fPIE -pie", output="dwarf_exprs_O2")


def test_compiled_expressions_match_gdb(binary):
    script = " ".join(f"trace {SOURCE}:{_line(m)} {{ " + " ".join(f"print {e};" for e in exprs)
                      + " }" for m, exprs in PROBES.items())
    result = gs_cgen("trace", "--max-events", str(len(PROBES)), "--output", "json", "-s", script,
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    ours = {}
    for event in events:
        for line in event["lines"]:
            expr, _, value = line.partition(" = ")
            ours[(event["trace"], expr)] = value
    for marker, exprs in PROBES.items():
        gdb = _gdb_values(binary, marker, exprs)
        pattern = f"{SOURCE}:{_line(marker)}"
        for expr in exprs:
            assert _as_gdb(ours[(pattern, expr)]) == gdb[expr], (marker, expr, ours, gdb)


def test_info_describes_compiled_locations(binary):
    result = gs_cgen("info", "-t", str(binary), "line", f"{SOURCE}:{_line('pair_sum')}")
    assert result.returncode == 0, result.stderr
    # p arrives in rdi:rsi (DW_OP_reg5 DW_OP_piece 8 DW_OP_reg4 DW_OP_piece 8)
    assert "pieces: 8 bytes register rdi, 8 bytes register rsi" in result.stdout, result.stdout
    result = gs_cgen("info", "-t", str(binary), "line", f"{SOURCE}:{_line('bump')}")
    assert "synthetic pointer to" in result.stdout, result.stdout
