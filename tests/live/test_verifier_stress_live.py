"""Scripts the verifier once refused (issue 25): N independent `if`s were
2^N paths (E2BIG past ~8), a chain of `let`s nested past clang's 256
parentheses, and the ExprError locals of ~30 `if`s overflowed the 512-byte
BPF stack. Generated scripts of each shape load and print what gdb reads
at the same function."""
from __future__ import annotations

import subprocess

import pytest

from tests.live.conftest import compile_fixture, gs_cgen

SOURCE = "verifier_stress.c"


@pytest.fixture(scope="module")
def binary(build_dir):
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture(scope="module")
def value(binary) -> int:
    """*vp at stress_anchor's breakpoint, as gdb reads it."""
    out = subprocess.run(["gdb", "-q", "-batch", "-ex", "break stress_anchor", "-ex", "run",
                          "-ex", "print *vp", "-ex", "kill", str(binary)],
                         capture_output=True, text=True, timeout=60).stdout
    line = next(text for text in out.splitlines() if text.startswith("$1 = "))
    return int(line.removeprefix("$1 = "))


def _traced(binary, start_target, body: str) -> list[str]:
    target = start_target(binary)
    result = gs_cgen("trace", "-p", str(target.pid), "--output", "plain", "--max-events", "1",
                     "-s", f"trace stress_anchor {{\n{body}}}\n", timeout=120)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line != "ready"]


@pytest.mark.parametrize("count", [1, 8, 32, 128])
def test_independent_ifs(binary, start_target, value, count):
    body = "".join(f'    if *vp > {i % 10} {{ print "M{i}"; }}\n' for i in range(count))
    lines = _traced(binary, start_target, body + '    print "END";\n')
    assert lines == [f"M{i}" for i in range(count) if value > i % 10] + ["END"]


def test_a_chain_of_64_lets(binary, start_target, value):
    body = "    let a0 = *vp;\n" + "".join(f"    let a{i} = a{i - 1} + {i};\n"
                                          for i in range(1, 64))
    lines = _traced(binary, start_target, body + '    print "LET {}", a63;\n')
    assert lines == [f"LET {value + sum(range(64))}"]


def test_300_prints(binary, start_target, value):
    body = "".join(f'    print "P{i} {{}}", *vp + {i};\n' for i in range(300))
    assert _traced(binary, start_target, body) == [f"P{i} {value + i}" for i in range(300)]


def test_ifs_nested_16_deep(binary, start_target, value):
    opened = "".join("    " * (i + 1) + f"if *vp < {value + 1 + i} {{\n" for i in range(16))
    closed = "".join("    " * (i + 1) + "}\n" for i in reversed(range(16)))
    lines = _traced(binary, start_target, opened + "    " * 17 + 'print "DEEP";\n' + closed +
                    '    print "END";\n')
    assert lines == ["DEEP", "END"]
