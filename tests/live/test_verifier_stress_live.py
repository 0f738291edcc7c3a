"""Scripts the verifier once refused (issue 25): N independent `if`s were
2^N paths (E2BIG past ~8), a chain of `let`s nested past clang's 256
parentheses, and the ExprError locals of ~30 `if`s overflowed the 512-byte
BPF stack. Generated scripts of each shape load and print what gdb reads
at the same function; each shape's processed-instruction count (the
verifier's budget is 1M) is printed, sleepable and not, and must grow no
faster than the script."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.conftest import REPO, compile_fixture, gs_cgen

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


# 160: more conditions than the decision map holds (gs_abi.h
# GS_DECISION_CONDITIONS), so the probe decides in its event.
@pytest.mark.parametrize("count", [1, 8, 32, 128, 160])
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


# BPF_PROG_TYPE_KPROBE: uprobe programs (include/uapi/linux/bpf.h).
_KPROBE = "2"


def _loaded_programs(pid: int) -> list[dict[str, str]]:
    """fdinfo of the BPF programs process `pid` holds."""
    found = []
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            fields = dict(line.split(":\t", 1) for line in fd.read_text().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        if fields.get("prog_type") == _KPROBE and "verified_insns" in fields:
            found.append(fields)
    return found


def _verified_insns(binary, start_target, body: str, sleepable: bool) -> int:
    """Instructions the verifier processed to load the probe, read from
    the tracer's own program fd once it says it is tracing."""
    target = start_target(binary)
    env = {**os.environ, "GS_CGEN_SLEEPABLE": "on" if sleepable else "off"}
    tracer = subprocess.Popen(
        [sys.executable, "-m", "gs_cgen.cli", "trace", "-p", str(target.pid), "--output",
         "plain", "--duration", "120", "-s", f"trace stress_anchor {{\n{body}}}\n"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said = []
    try:
        while not said or "tracing" not in said[-1]:
            line = tracer.stderr.readline()
            assert line, "".join(said)
            said.append(line)
        count = max(int(fields["verified_insns"]) for fields in _loaded_programs(tracer.pid))
    finally:
        tracer.send_signal(signal.SIGINT)
        said.append(tracer.communicate(timeout=60)[1])
    assert sleepable == ("sleepable uprobes unavailable" not in "".join(said)), said
    return count


_SHAPES = {
    "1 if": "    if *vp > 1 { print \"M\"; }\n",
    "8 ifs": "".join(f'    if *vp > {i} {{ print "M{i}"; }}\n' for i in range(8)),
    "32 ifs": "".join(f'    if *vp > {i % 10} {{ print "M{i}"; }}\n' for i in range(32)),
    "128 ifs": "".join(f'    if *vp > {i % 10} {{ print "M{i}"; }}\n' for i in range(128)),
    "64 lets": "    let a0 = *vp;\n" + "".join(f"    let a{i} = a{i - 1} + {i};\n"
                                               for i in range(1, 64)) + '    print "{}", a63;\n',
    "300 prints": "".join(f'    print "P{i} {{}}", *vp + {i};\n' for i in range(300)),
    "16 nested ifs": "".join(f"    if *vp < {100 + i} {{\n" for i in range(16)) +
                     '    print "DEEP";\n' + "    }\n" * 16,
}


@pytest.mark.parametrize("sleepable", [True, False], ids=["sleepable", "non-sleepable"])
def test_verification_grows_linearly_with_the_script(binary, start_target, sleepable):
    counts = {shape: _verified_insns(binary, start_target, body, sleepable)
              for shape, body in _SHAPES.items()}
    print(f"\nprocessed insns ({'sleepable' if sleepable else 'non-sleepable'}): " +
          ", ".join(f"{shape} {count}" for shape, count in counts.items()))
    # 2^N paths would make 128 ifs cost 2^120 times 8 ifs: linear is ~16x.
    assert counts["128 ifs"] < 32 * counts["8 ifs"]
    assert counts["32 ifs"] < 8 * counts["8 ifs"]
