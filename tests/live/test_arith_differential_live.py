"""Live: every C operator, proven against gcc (issue #9).

tests/live/arith_differential.py generates ~2,700 expressions over the
operands of tests/fixtures/arith_operands.c; gcc computes each one inside
arith_probe() of that same fixture, and gs-cgen prints each one from a
uprobe on arith_probe(). Every line must be equal: 0 differences.

Where C is undefined the expected text comes from gs-cgen's rules (docs/reference.md
"Arithmetic"), through the generator's model, which is itself checked here
against gcc on every expression gcc can run.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.live import arith_differential as ad
from tests.live.conftest import FIXTURES, compile_fixture, gs_cgen
from tests.prerequisites import require

SOURCE = "arith_operands.c"
# Prints per probe: nested `&&`/`||` branch, and the verifier's walk of 300
# such prints exceeds its 1M-instruction budget (E2BIG); 150 keeps well clear.
PRINTS_PER_PROBE = 150


@pytest.fixture(scope="module")
def operands_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture(scope="module")
def expressions():
    return ad.Generator().expressions()


def gcc_values(nodes: list[ad.Node], tmp_path: Path) -> list[str]:
    """Each expression evaluated by gcc at arith_probe (with -fwrapv: signed
    overflow wraps, gs-cgen's documented rule)."""
    inc = tmp_path / "expressions.inc"
    inc.write_text(ad.oracle_lines(nodes))
    binary = tmp_path / "oracle"
    subprocess.run(["gcc", "-w", "-O0", "-fwrapv", f'-DARITH_ORACLE="{inc}"', "-o", str(binary),
                    str(FIXTURES / SOURCE)], check=True)
    return subprocess.run([str(binary)], capture_output=True, text=True).stdout.splitlines()


def traced_lines(binary: Path, texts: list[str], tmp_path: Path) -> list[str]:
    blocks = [texts[i:i + PRINTS_PER_PROBE] for i in range(0, len(texts), PRINTS_PER_PROBE)]
    script = tmp_path / "arith.gs"
    script.write_text("\n".join("trace arith_probe {\n" + "".join(f"    print {t};\n" for t in b)
                                + "}" for b in blocks) + "\n")
    result = gs_cgen("trace", "--output", "plain", "-f", str(script), "--", str(binary),
                     timeout=240)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_operand_table_is_what_gdb_sees(operands_bin):
    """The generator's operand types and values, as gdb has them at arith_probe."""
    require(None if shutil.which("gdb") else "gdb is not installed")
    commands = []
    for operand in ad.OPERANDS:
        cast = "unsigned long long" if operand.promoted is ad.ULONG else "long long"
        commands += ["-ex", f"whatis {operand.name}", "-ex", f"print ({cast})({operand.name})"]
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", "break arith_probe", "-ex", "run",
                          *commands, str(operands_bin)], capture_output=True, text=True,
                         timeout=120).stdout
    types = re.findall(r"^type = (.*)$", out, re.M)
    values = [int(v) for v in re.findall(r"^\$\d+ = (-?\d+)$", out, re.M)]
    assert types == [o.ctype for o in ad.OPERANDS]
    assert values == [o.value for o in ad.OPERANDS]


def test_every_operator_prints_what_gcc_computes(operands_bin, expressions, tmp_path):
    runnable = [n for n in expressions if ad.gcc_can_run(n)]
    gcc = dict(zip(map(ad.script_text, runnable), gcc_values(runnable, tmp_path)))
    assert len(gcc) == len(runnable)
    model_wrong = [(t, v, ad.rendered(n)) for n in runnable
                   if (v := gcc[t := ad.script_text(n)]) != ad.rendered(n)]
    assert model_wrong == [], "the generator's model disagrees with gcc"

    texts = [ad.script_text(n) for n in expressions]
    expected = [f"{t} = {gcc.get(t) or ad.rendered(n)}" for t, n in zip(texts, expressions)]
    ours = traced_lines(operands_bin, texts, tmp_path)
    # The probes on arith_probe run in no fixed order: match lines by their
    # expression (each is printed once).
    printed = {line.partition(" = ")[0]: line for line in ours}
    differences = [(want, printed.get(text)) for text, want in zip(texts, expected)
                   if printed.get(text) != want]
    assert len(ours) == len(expected) and differences == [], (
        f"{len(differences)} of {len(expected)} differ; first: {differences[:20]}")
    # Coverage: every operator, and the undefined cases, really were exercised.
    assert {n.op for n in expressions if not isinstance(n, ad.Leaf)} >= set(ad.BINARY + ad.UNARY)
    assert sum("<error: shift count out of range>" in line for line in ours) > 20
    assert sum("<error: division by zero>" in line for line in ours) > 10


# gs-cgen's rules where C is undefined (docs/reference.md "Arithmetic"). gcc cannot say
# (its program would trap or it may assume the case away); gdb itself dies
# of SIGFPE on `print g_i_min / -1`. The wrap-around values are those of
# two's complement, as gcc -fwrapv folds them.
UNDEFINED = [
    ("g_i_7 / g_i_0", "<error: division by zero>"),
    ("g_u_max % g_u_0", "<error: division by zero>"),
    ("g_l_5 / (g_i_1 - g_i_1)", "<error: division by zero>"),
    ("g_i_7 / 0", "<error: division by zero>"),
    ("1 % 0", "<error: division by zero>"),
    ("g_i_1 << g_i_32", "<error: shift count out of range>"),
    ("g_i_1 << g_i_31", "-2147483648"),
    ("g_l_5 << g_l_64", "<error: shift count out of range>"),
    ("g_l_5 << g_l_63", "-9223372036854775808"),
    ("g_uc_max >> g_i_m1", "<error: shift count out of range>"),
    ("g_i_7 >> 32", "<error: shift count out of range>"),
    ("1 << 64", "<error: shift count out of range>"),
    ("g_ul_1 << 63", "9223372036854775808"),
    ("(g_i_1 / g_i_0) + 1", "<error: division by zero>"),
    ("g_i_0 && g_i_1 / g_i_0", "false"),
    ("g_i_min / g_i_m1", "-2147483648"),
    ("g_i_min % g_i_m1", "0"),
    ("g_l_min / g_l_m1", "-9223372036854775808"),
    ("g_ll_min % -1", "0"),
    ("-g_i_min", "-2147483648"),
    ("g_i_max + 1", "-2147483648"),
    ("g_l_max * 2", "-2"),
]


def test_undefined_operations_follow_the_documented_rules(operands_bin):
    script = "trace arith_probe { " + " ".join(f"print {e};" for e, _ in UNDEFINED) + " }"
    result = gs_cgen("trace", "--output", "plain", "-s", script, "--", str(operands_bin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{e} = {v}" for e, v in UNDEFINED]


def test_a_condition_that_divides_by_zero_is_a_soft_abort(operands_bin):
    # CONTRACT.md: a condition that cannot be evaluated emits ExprError and
    # skips that branch; an `else if` chain goes on.
    script = ('trace arith_probe { '
              'if g_i_7 / g_i_0 == 1 { print "then"; } else if g_i_1 << g_i_32 > 0 '
              '{ print "shifted"; } else if g_i_7 % 2 == 1 { print "odd"; } '
              'if 1 / 0 { print "never"; } print "after"; }')
    result = gs_cgen("trace", "--output", "plain", "-s", script, "--", str(operands_bin))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ExprError: g_i_7 / g_i_0 == 1 (division by zero)",
        "ExprError: g_i_1 << g_i_32 > 0 (shift count out of range)",
        "odd",
        "ExprError: 1 / 0 (division by zero)",
        "after"]
