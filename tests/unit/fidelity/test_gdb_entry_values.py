"""gdb 13 resolves a DW_OP_entry_value in an inlined frame with the wrong
caller (the inlined frame's outer frame, the same function), so a
DW_OP_fbreg in the call site's DW_AT_call_value is read 240 bytes off in
libpython's format_float_short (inlined into PyOS_double_to_string): its
`type` is not PyOS_double_to_string's `type`, which the source passes on
unchanged and gdb reads right in the real frame. gdb_script.py reads such
a variable in the real frame (real_frame, entry_value_at). Run in gdb on
the fidelity libpython workload, with gdb_script.py's functions loaded
(`$fidelity_library` set: it records nothing)."""
from __future__ import annotations

import json
import subprocess


from fidelity import gdb_recorder, libpython
from fidelity.environment import TARGET_ENVIRONMENT
from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import CallSiteValue
from tests.prerequisites import require

_CHECK = r"""
import json, os
addresses = json.loads(os.environ["GS_ADDRESSES"])
gdb.execute("set startup-with-shell off")
gdb.execute("unset environment LINES")
gdb.execute("unset environment COLUMNS")
gdb.execute("set breakpoint pending on")
gdb.Breakpoint("PyOS_double_to_string")
gdb.execute("run", to_string=True)
gdb.execute("delete")
base = module_bases(gdb.selected_inferior().pid, {os.environ["GS_LIBRARY"]})[os.environ["GS_LIBRARY"]]
for address in addresses:
    gdb.Breakpoint(f"*{base + address}")
found = []
while gdb.selected_inferior().threads() and len(found) < 3:
    gdb.execute("continue", to_string=True)
    if not gdb.selected_inferior().threads():
        break
    frame = gdb.newest_frame()
    if frame.type() != gdb.INLINE_FRAME or frame.name() != "format_float_short":
        continue
    ours = {v["name"]: v["raw"] for v in visible_variables(frame, 64)}["type"]
    real = real_frame(frame)
    passed = gdb.lookup_symbol("type", real.block())[0].value(real)
    naive = gdb.lookup_symbol("type", frame.block())[0].value(frame)
    found.append({"ours": ours, "passed": int(passed), "naive": int(naive)})
print("GS-FOUND " + json.dumps(found))
gdb.execute("kill", to_string=True)
"""


def test_an_entry_value_in_an_inlined_frame_is_read_in_its_real_frame():
    found = libpython.interpreter()
    require(None if found else "no python3.11 with a shared libpython3.11.so.1.0")
    executable, library = found
    module = open_module(library)
    # PCs where format_float_short's `type` is read from a call site
    addresses = []
    for site in libpython.line_sites(library, ("PyOS_double_to_string",), set()):
        variables = {v.name: v for v in module.variables_at(site.address)}
        if isinstance(getattr(variables.get("type"), "location", None), CallSiteValue):
            addresses.append(site.address)
    require(None if addresses else
            "this libpython build reads format_float_short's type otherwise")
    script = gdb_recorder.SCRIPT
    env = dict(TARGET_ENVIRONMENT, GS_ADDRESSES=json.dumps(addresses), GS_LIBRARY=library)
    done = subprocess.run(
        ["gdb", "-batch", "-nx", "-ex", "set $fidelity_library = 1", "-x", str(script),
         "-ex", "python\n" + _CHECK, "--args", executable, "-S", "-B", str(libpython.WORKLOAD)],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    lines = [line for line in done.stdout.splitlines() if line.startswith("GS-FOUND ")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    stops = json.loads(lines[0].removeprefix("GS-FOUND "))
    assert stops, "format_float_short's type was never read from a call site"
    for stop in stops:
        assert stop["ours"] == {"k": "ptr", "v": stop["passed"]}, stop
    # what gdb gives in the inlined frame itself: not what was passed
    assert any(stop["naive"] != stop["passed"] for stop in stops), stops
