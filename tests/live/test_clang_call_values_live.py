"""An entry value that only the caller's call site knows, in a clang -O2
program (tests/fixtures/clang_call_values.c): `b` is a pointer to a
caller's stack object, passed in rdi, which the callee reuses before the
probe; the call sites say DW_AT_call_value `DW_OP_fbreg N`, on a frame base
that is a register (clang's DW_OP_reg7 rsp, or DW_OP_reg6 rbp where the
caller keeps a frame pointer), not gcc's DW_OP_call_frame_cfa. Before, gs-cgen
had no frame base for such a caller and `b` was "no call site says how it
was computed" where gdb prints `b=b@entry=...`. Each value equals gdb's,
stop by stop, callers alternating."""
from __future__ import annotations

import re
import shutil
import subprocess

from tests.gdb_oracle import gdb_values
from tests.live.conftest import clang_fixture, gs_cgen, marker_line, require

SOURCE = "clang_call_values.c"
EXPRESSIONS = ("b->id", "b->weight")
STOPS = 6                                   # 3 rounds, a call from `run` and from `framed`


def _clang_build(build_dir):
    return clang_fixture(build_dir, SOURCE)


def _subprograms(binary) -> dict[str, str]:
    """objdump's text of each DW_TAG_subprogram, by name."""
    text = subprocess.run(["objdump", "--dwarf=info", str(binary)], capture_output=True,
                          text=True, check=True).stdout
    found = {}
    for block in text.split("(DW_TAG_subprogram)")[1:]:
        name = re.search(r"DW_AT_name\s*:.*: (\w+)\n", block)
        if name:
            found[name.group(1)] = block
    return found


def test_the_case_is_an_fbreg_call_value_on_a_register_frame_base(build_dir):
    require(None if shutil.which("objdump") else "objdump is not installed")
    binary = _clang_build(build_dir)
    functions = _subprograms(binary)
    for caller, base in (("run", "DW_OP_reg7 (rsp)"), ("framed", "DW_OP_reg6 (rbp)")):
        block = functions[caller]
        assert re.search(r"DW_AT_frame_base\s*:.*" + re.escape(base), block), caller
        assert re.search(r"DW_AT_call_value\s*:.*\(DW_OP_fbreg: -?\d+\)", block), caller
    spec = f"{SOURCE}:{marker_line(SOURCE, 'after_keep')}"
    info = gs_cgen("info", "-t", str(binary), "line", spec)
    assert info.returncode == 0, info.stderr
    # both callers' call sites, none left out
    assert re.search(r"struct box\* b\s+@ .*entry value from the caller's call site "
                     r"\(returns to 0x[0-9a-f]+, 0x[0-9a-f]+\)", info.stdout), info.stdout


def test_values_are_gdbs_through_the_callers_frame_base(build_dir):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = _clang_build(build_dir)
    spec = f"{SOURCE}:{marker_line(SOURCE, 'after_keep')}"
    script = (f"trace {spec} {{ print \"{' '.join('{}' for _ in EXPRESSIONS)}\", "
              f"{', '.join(EXPRESSIONS)}; }}")
    result = gs_cgen("trace", "--output", "plain", "--max-events", str(STOPS), "-s", script,
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    ours = [line.split(" ") for line in result.stdout.splitlines()]
    oracle = [values for _, values in gdb_values(binary, [(spec, EXPRESSIONS)], STOPS)]
    assert len(oracle) == STOPS and ["1", "10"] in oracle and ["101", "5"] in oracle  # both callers
    assert ours == oracle
