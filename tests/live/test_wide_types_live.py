"""Live: long double, _Float128, _Float16, decimal floats, _Complex,
__int128 and vectors read by real probes (parameters, locals, globals,
struct members; -O0, so all in memory) and printed as gdb prints them.

gdb is the oracle in the same process at the same PC: the test attaches
gdb, breaks where the probe fired (function entry after the prologue, the
marked line), and compares gdb's `print` of every expression with
gs-cgen's. Vectors are the one deliberate difference in form: gdb writes
{1, 2}, gs-cgen [1, 2] like every array (docs/rendering.md).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, marker_line
from tests.prerequisites import require

SOURCE = "wide_types.c"
LOCALS_LINE = marker_line(SOURCE, "wide_locals")
PARAMS = ["x", "y", "c", "v", "u", "v[2]", "w.ld", "w.i128", "w.u128", "w.cd", "w.cld",
          "w.vi", "w.vf", "w.q", "w.h", "w.flag"]
GLOBALS = ["g_ld_third", "g_ld_pi", "g_ld_huge", "g_ld_negzero", "g_ld_nan", "g_ld_negnan",
           "g_ld_denorm", "g_ld_max", "g_x87_unnormal.v", "g_x87_snan.v", "g_f64x", "g_q_third",
           "g_q_denorm", "g_h_tenth", "g_h_denorm", "g_d32", "g_d64", "g_d128", "g_cf", "g_cld",
           "g_cq", "g_cd_inf", "g_i128_min", "g_i128_max", "g_u128_max", "g_vi", "g_vf", "g_vc",
           "g_vu", "g_vld", "g_v2", "g_true", "g_false"]
LOCALS = ["l_third", "l_neg", "l_i128", "l_u128", "l_cld", "l_cf", "l_vi", "l_vf", "l_q",
          "l_h", "l_flag", "l_wide.ld", "l_wide.cld", "l_wide.vi", "l_wide.i128"]


@pytest.fixture(scope="module")
def wide_bin(build_dir):
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture
def target(wide_bin, start_target):
    return start_target(wide_bin, "fast")


def trace(pid: int, script: str, *extra: str) -> subprocess.CompletedProcess:
    return gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", "1", *extra)


def traced_values(pid: int, pattern: str, expressions: list[str]) -> tuple[int, dict[str, str]]:
    """($pc where the probe fired, {expression: gs-cgen's text})."""
    body = " ".join(f"print {e};" for e in ["$pc", *expressions])
    result = trace(pid, f"trace {pattern} {{ {body} }}", "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(expressions) + 1, lines
    texts = {}
    for expression, line in zip(["$pc", *expressions], lines):
        prefix = f"{expression} = "
        assert line.startswith(prefix), (expression, line)
        texts[expression] = line.removeprefix(prefix)
    return int(texts.pop("$pc")), texts


def gdb_values(pid: int, breakpoint: str, expressions: list[str]) -> tuple[int, dict[str, str]]:
    """gdb attached to `pid`: ($pc at `breakpoint`, {expression: print text})."""
    args = ["gdb", "-nx", "-batch", "-p", str(pid), "-ex", "set print repeats unlimited",
            "-ex", f"break {breakpoint}", "-ex", "continue", "-ex", "p/x $pc"]
    for expression in expressions:
        args += ["-ex", f"print {expression}"]
    output = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    values = re.findall(r"^\$\d+ = (.*)$", output, re.M)
    assert len(values) == len(expressions) + 1, output
    return int(values[0], 16), dict(zip(expressions, values[1:]))


def as_ours(gdb_text: str) -> str:
    return gdb_text.replace("{", "[").replace("}", "]")     # vectors


def test_parameters_members_and_globals_print_as_gdb_prints_them(target):
    pc, ours = traced_values(target.pid, "wide_params", PARAMS + GLOBALS)
    gdb_pc, gdb = gdb_values(target.pid, "wide_params", PARAMS + GLOBALS)
    assert pc == gdb_pc
    assert ours == {expression: as_ours(text) for expression, text in gdb.items()}
    # a few spelled out, as gdb 13 printed them
    assert ours["x"] == "0.333333333333333333342"
    assert ours["c"] == "1.5 + -0.25i"
    assert ours["y"] == "12345678901234567890000012345"
    assert ours["g_x87_unnormal.v"] == "<invalid float value>"


def test_locals_at_a_line_print_as_gdb_prints_them(target):
    pattern = f"{SOURCE}:{LOCALS_LINE}"
    pc, ours = traced_values(target.pid, pattern, LOCALS)
    gdb_pc, gdb = gdb_values(target.pid, pattern, LOCALS)
    assert pc == gdb_pc
    assert ours == {expression: as_ours(text) for expression, text in gdb.items()}


def test_hex_of_wide_values_is_gdbs_print_x(target):
    expressions = ["y", "u", "x", "w.q", "w.h"]
    placeholders = " ".join("{:x}" for _ in expressions)
    result = trace(target.pid, f'trace wide_params {{ print "{placeholders}", '
                               f'{", ".join(expressions)}; }}', "--output", "plain")
    assert result.returncode == 0, result.stderr
    _, gdb = gdb_values(target.pid, "wide_params", [f"/x {e}" for e in expressions])
    gdb_bits = {e: int(gdb[f"/x {e}"], 16) for e in expressions}
    # gdb's print/x of a long double shows all 16 bytes, the 6 bytes of
    # padding above the 80-bit value too (stack garbage here); {:x} shows
    # the value's 10 bytes.
    gdb_bits["x"] &= (1 << 80) - 1
    assert result.stdout.split() == [f"{gdb_bits[e]:x}" for e in expressions]


def test_json_numbers_where_exact_else_gdbs_text(target):
    expressions = ["x", "w.ld", "y", "u", "c", "w.cld", "v", "g_d64", "g_ld_nan"]
    body = " ".join(f"print {e};" for e in expressions)
    result = trace(target.pid, f"trace wide_params {{ {body} }}", "--output", "json")
    assert result.returncode == 0, result.stderr
    values = {v["expr"]: v for v in json.loads(result.stdout)["values"]}
    _, gdb = gdb_values(target.pid, "wide_params", expressions)
    assert all(v["status"] == "ok" for v in values.values()), values
    assert values["x"]["value"] == gdb["x"] and values["x"]["type"] == "long double"
    assert values["w.ld"]["value"] == float(gdb["w.ld"]) == 2.5      # exact: a number
    assert values["y"]["value"] == int(gdb["y"]) and values["y"]["type"] == "__int128"
    assert values["u"]["value"] == int(gdb["u"])
    real, imag = gdb["c"].removesuffix("i").split(" + ")
    assert values["c"]["value"] == {"real": float(real), "imag": float(imag)}
    real, imag = gdb["w.cld"].removesuffix("i").split(" + ")
    assert values["w.cld"]["value"] == {"real": float(real), "imag": imag}   # 0.1L is not exact
    assert values["v"]["value"] == json.loads(as_ours(gdb["v"]))
    assert values["v"]["type"] == "v4si"
    assert values["g_d64"]["value"] == gdb["g_d64"] == "0.1"
    assert values["g_ld_nan"]["value"] == gdb["g_ld_nan"]


@pytest.mark.parametrize("script, message", [
    ("print x * 2;", "'x' is a long double: floating-point arithmetic is not supported"),
    ("if y > 0 { print 1; }", "'y' is a __int128: 128-bit integers cannot take part in "
                              "arithmetic or comparisons"),
])
def test_arithmetic_on_wide_values_is_a_user_error(target, script, message):
    result = trace(target.pid, f"trace wide_params {{ {script} }}")
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
