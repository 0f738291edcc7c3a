"""The collector's thresholds over a run (gs_cgen/gcpolicy.py): raised as
soon as the CLI is imported, back to Python's defaults with start-up's
objects frozen once a trace is attached."""
from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import gc, json
defaults = gc.get_threshold()
before = sum(s["collections"] for s in gc.get_stats())
import gs_cgen.cli
from gs_cgen import gcpolicy
during = gc.get_threshold()
collections = sum(s["collections"] for s in gc.get_stats()) - before
gcpolicy.steady()
print(json.dumps({"defaults": defaults, "during": during, "after": gc.get_threshold(),
                  "frozen": gc.get_freeze_count(), "collections": collections}))
"""


def test_start_up_collects_rarely_and_a_trace_gets_the_defaults_back():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         check=True).stdout
    seen = json.loads(out)
    assert seen["during"][0] == 200_000 and seen["during"][1:] == seen["defaults"][1:]
    assert seen["after"] == seen["defaults"]
    assert seen["frozen"] > 1000            # the imported modules' objects, out of every scan
    assert seen["collections"] < 5          # importing the CLI alone used to trigger ~20


_FINISH = """
import gc, sys
import gs_cgen.cli
sys.argv = ["gs-cgen", "--version"]
try:
    gs_cgen.cli.main()
except SystemExit:
    pass
print(gc.get_freeze_count(), sum(gc.get_count()))
"""


def test_a_finished_command_leaves_nothing_for_the_shutdown_collection():
    out = subprocess.run([sys.executable, "-c", _FINISH], capture_output=True, text=True,
                         check=True).stdout.split()
    frozen, tracked_since = int(out[-2]), int(out[-1])
    assert frozen > 1000 and tracked_since < 100
