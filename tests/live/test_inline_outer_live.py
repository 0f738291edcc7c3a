"""A probe in an inlined call names its caller's variables (GhostScope's
inline_call_value_program: `print local_x` and `seed` inside the inlined
body were `no variable ... at wrapper`): what gdb prints after `up` at the
same PC, an entry value (`base@entry`) and `<optimized out>` included.
tests/fixtures/inline_outer.c, -O3 -fno-ipa-cp; the hits are gdb's from the
start (the command is held until attached)."""
from __future__ import annotations

import json
import shutil

from gs_cgen.dwarf import open_module
from tests.gdb_oracle import gdb_values
from tests.live.conftest import compile_fixture, gs_cgen, marker_line, require

SOURCE = "inline_outer.c"
EVENTS = 6
PROBES = {"before_call": ("left", "right", "doubled", "shifted", "base"),
          "after_call": ("base", "product", "adjusted", "doubled", "left")}


def test_the_callers_variables_are_gdbs_after_up(build_dir):
    require(None if shutil.which("gdb") else "gdb is not installed")
    # Not PIE: gdb's `break *ADDR` before `run` needs the final address.
    binary = compile_fixture(build_dir, SOURCE, "-g -O3 -fno-ipa-cp -no-pie",
                             output="inline_outer_O3")
    module = open_module(str(binary))
    probes, sites = [], {}
    for marker, expressions in PROBES.items():
        line = marker_line(SOURCE, marker)
        (site,) = module.find_lines(SOURCE, line)
        frame = module.frame_at(site.address)
        assert frame.inlined and frame.inlined_into == ("scale",)       # the case
        assert "base" not in {v.name for v in frame.variables}
        sites[f"*0x{site.address:x}"] = marker
        probes.append(f"trace {SOURCE}:{line} {{ "
                      + " ".join(f"print {e};" for e in expressions) + " }")
    result = gs_cgen("trace", "--max-events", str(EVENTS), "--output", "json",
                     "-s", " ".join(probes), "--", str(binary))
    assert result.returncode == 0, result.stderr
    ours = [[line.partition(" = ")[2].replace("<OPTIMIZED_OUT>", "<optimized out>")
             for line in json.loads(row)["lines"]]
            for row in result.stdout.splitlines() if row.startswith("{")]
    oracle = gdb_values(binary, [(spec, PROBES[m]) for spec, m in sites.items()], EVENTS, up=True)
    assert ours == [values for _, values in oracle]
    # scale(1): before the call left/right are live, the caller's locals
    # are not; after it, base comes back through its entry value
    assert ours[:2] == [["7", "12", "<optimized out>", "<optimized out>", "1"],
                        ["1", "-95", "-88", "<optimized out>", "<optimized out>"]]


def test_the_inlined_frames_own_names_come_first(build_dir):
    """`$locals` stays gdb's `info locals` in the inlined frame; the
    caller's are reached by name only."""
    binary = compile_fixture(build_dir, SOURCE, "-g -O3 -fno-ipa-cp -no-pie",
                             output="inline_outer_O3")
    line = marker_line(SOURCE, "before_call")
    result = gs_cgen("trace", "--max-events", "1", "--output", "plain",
                     "-s", f"trace {SOURCE}:{line} {{ print $locals; print $args; }}",
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "$locals: product = <OPTIMIZED_OUT>, adjusted = <OPTIMIZED_OUT>",
        "$args: right = 12, left = 7"]
