"""Programs built by clang in DWARF 5 (tests/fixtures/clang_dwarf5.c,
-O2): globals whose location is DW_OP_addrx were "no variable" and every
-O2 variable's DW_FORM_loclistx list was undecodable (GhostScope's
static_scope and entry_value_recovery clang tests); a struct whose
pieces stop short of its size had its missing bytes read as zeros. Each
value equals gdb's at the same line, stop by stop."""
from __future__ import annotations

import shutil
import subprocess

from tests.gdb_oracle import gdb_values
from tests.live.conftest import FIXTURES, gs_cgen, marker_line, require

SOURCE = "clang_dwarf5.c"
EXPRESSIONS = ("seed", "state->total_bytes", "state->stream_id", "combined",
               "file_scope_counter", "function_scope_counter", "g_states[1].stream_id")
STOPS = 6


def _clang_build(build_dir):
    clang = shutil.which("clang")
    if clang is None:
        require("clang is not installed (apt-get install clang)")
    out = build_dir / "clang_dwarf5"
    if not out.exists():
        subprocess.run([clang, "-g", "-gdwarf-5", "-O2", "-o", str(out), str(FIXTURES / SOURCE)],
                       check=True)
    return out


def test_values_are_gdbs_in_clangs_dwarf5(build_dir):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = _clang_build(build_dir)
    spec = f"{SOURCE}:{marker_line(SOURCE, 'after_call')}"
    script = f"trace {spec} {{ print \"{' '.join('{}' for _ in EXPRESSIONS)}\", {', '.join(EXPRESSIONS)}; }}"
    result = gs_cgen("trace", "--output", "plain", "-s", script, "--", str(binary))
    assert result.returncode == 0, result.stderr
    ours = [line.split(" ") for line in result.stdout.splitlines()]
    oracle = [values for _, values in gdb_values(binary, [(spec, EXPRESSIONS)], STOPS)]
    assert len(oracle) == STOPS and "<optimized out>" not in oracle[0]      # the case
    assert ours == oracle


def test_pieces_that_stop_short_of_the_struct_leave_the_rest_optimized_out(build_dir):
    """`tagged` is DW_OP_piece 4 of rsi, an 8-byte struct: gdb has its
    `tag` and no `as_int` (it prints `<synthetic pointer>`); gs-cgen
    printed `as_int: 0`."""
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = _clang_build(build_dir)
    spec = f"{SOURCE}:{marker_line(SOURCE, 'short_piece')}"
    script = f'trace {spec} {{ print "{{}} {{}}", tagged.tag, tagged.as_int; }}'
    result = gs_cgen("trace", "--output", "plain", "-s", script, "--", str(binary))
    assert result.returncode == 0, result.stderr
    oracle = gdb_values(binary, [(spec, ("tagged.tag", "tagged.as_int"))], STOPS)
    assert [values for _, values in oracle] == [["3", "<synthetic pointer>"]] * STOPS   # the case
    assert result.stdout.splitlines() == ["3 <OPTIMIZED_OUT>"] * STOPS
