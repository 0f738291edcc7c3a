"""A line with only non-statement rows, traced live (dwarf/lines.py): the
shape of GhostScope's inline_callsite_program.c:71, where gs-cgen used to
follow gdb's `break` into the next function (`no variable 'delta' at
pick_state`). Its values are gdb's at the same address."""
from __future__ import annotations

import json
import shutil

from gs_cgen.dwarf import open_module
from tests.gdb_oracle import gdb_values
from tests.live.conftest import compile_fixture, gs_cgen, require

SOURCE = "line_table.c"
LINE = 21                       # int penalty = acct->fee + amount;  (inlined settle)
EXPRESSIONS = ("amount", "after")
EVENTS = 8


def test_non_statement_line_prints_its_inlined_call_values_as_gdb(build_dir):
    require(None if shutil.which("gdb") else "gdb is not installed")
    # Not PIE: gdb's `break *ADDR` before `run` needs the final address.
    binary = compile_fixture(build_dir, SOURCE, "-g -O2 -no-pie", output="line_table_O2")
    sites = open_module(str(binary)).find_lines(SOURCE, LINE)
    assert sites and all(not s.statement and s.function == "settle_next" for s in sites)

    script = f"trace {SOURCE}:{LINE} {{ " + " ".join(f"print {e};" for e in EXPRESSIONS) + " }"
    # Launched: held until attached, so its hits are gdb's from the start.
    result = gs_cgen("trace", "--max-events", str(EVENTS), "--output", "json", "-s", script,
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    ours = [[line.partition(" = ")[2] for line in json.loads(row)["lines"]]
            for row in result.stdout.splitlines() if row.startswith("{")]
    gdb = [values for _, values in
           gdb_values(binary, [(f"*0x{s.address:x}", EXPRESSIONS) for s in sites], EVENTS)]
    assert ours == gdb
    assert ours[0] == ["1", "250"]      # round 1: g_accounts[1].balance 251 - 1


def test_dry_run_names_the_non_statement_rule(build_dir):
    binary = compile_fixture(build_dir, SOURCE, "-g -O2 -no-pie", output="line_table_O2")
    result = gs_cgen("info", "-t", str(binary), "line", f"{SOURCE}:{LINE}")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("settle_next (the line has only non-statement rows; gdb's break "
                            "would stop at the next statement) at "), first
    assert first.endswith(f"/{SOURCE}:{LINE}"), first
