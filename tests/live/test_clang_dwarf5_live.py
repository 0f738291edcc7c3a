"""Programs built by clang in DWARF 5 (tests/fixtures/clang_dwarf5.c,
-O2): globals whose location is DW_OP_addrx were "no variable" and every
-O2 variable's DW_FORM_loclistx list was undecodable (GhostScope's
static_scope and entry_value_recovery clang tests); a struct whose
pieces stop short of its size had its missing bytes read as zeros; a
function that exists only inlined was "no function" (its name is a
DW_FORM_strx index, which the name search did not read); a static
struct clang split in two objects was "no variable". Each value
equals gdb's at the same line, stop by stop."""
from __future__ import annotations

import re
import shutil

from tests.gdb_oracle import gdb_locations, gdb_values
from tests.live.conftest import clang_fixture, gs_cgen, marker_line, require

SOURCE = "clang_dwarf5.c"
EXPRESSIONS = ("seed", "state->total_bytes", "state->stream_id", "combined",
               "file_scope_counter", "function_scope_counter", "g_states[1].stream_id",
               "g_split.count", "g_split.total")
STOPS = 6


def _clang_build(build_dir):
    return clang_fixture(build_dir, SOURCE, "-g -gdwarf-5 -O2")


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
    oracle = [values for _, values in gdb_values(binary, [(spec, ("tagged.tag", "tagged.as_int"))],
                                                 STOPS)]
    assert len(oracle) >= 2 and set(map(tuple, oracle)) == {("3", "<synthetic pointer>")}  # the case
    assert result.stdout.splitlines() == ["3 <OPTIMIZED_OUT>"] * len(oracle)
    info = gs_cgen("info", "-t", str(binary), "line", spec)
    assert "pieces: 4 bytes value (u32) rsi, 4 bytes optimized out" in info.stdout, info.stdout


def test_a_function_that_exists_only_inlined_is_traced_where_gdb_breaks(build_dir):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = _clang_build(build_dir)
    dry = gs_cgen("trace", "--dry-run", "-t", str(binary), "-s", "trace scaled { print value; }")
    assert dry.returncode == 0, dry.stderr
    ours = sorted(int(m, 16) for m in re.findall(r" (0x[0-9a-f]+), file offset", dry.stdout))
    assert ours == gdb_locations(binary, ["scaled"])["scaled"] and ours          # inlined copies
    result = gs_cgen("trace", "--output", "plain", "-s",
                     'trace scaled { print "{}", value; }', "--", str(binary))
    assert result.returncode == 0, result.stderr
    oracle = gdb_values(binary, [("scaled", ("value",))], STOPS)
    assert len(oracle) >= 2 and result.stdout.splitlines() == [values[0] for _, values in oracle]
