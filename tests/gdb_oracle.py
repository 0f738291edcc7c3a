"""gdb as the oracle for probe sites and scopes, in batch mode.

`gdb_locations` asks where `break SPEC` puts its locations (no process);
`gdb_frames` runs the program to each location and reports the frame gdb
stops in and every variable visible there (tests/gdb_frames.py).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.prerequisites import require

FRAMES_SCRIPT = Path(__file__).resolve().parent / "gdb_frames.py"
_LOCATIONS = """
import json, os
for spec in json.loads(os.environ["GS_GDB_SPECS"]):
    try:
        breakpoint = gdb.Breakpoint(spec)
    except gdb.error:
        breakpoint = None
    found = [location.address for location in breakpoint.locations] if breakpoint else []
    print("GS-LOCATIONS " + json.dumps([spec, found]))
    if breakpoint:
        breakpoint.delete()
"""


def _gdb(binary: str, specs, *args: str, timeout: float) -> str:
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    env = dict(os.environ, GS_GDB_SPECS=json.dumps(list(specs)))
    return subprocess.run(["gdb", "-nx", "-batch", *args, str(binary)], capture_output=True,
                          text=True, timeout=timeout, env=env, check=True).stdout


def gdb_locations(binary: str, specs) -> dict[str, list[int]]:
    """{spec: sorted module addresses of gdb's `break SPEC` locations}; a
    spec gdb cannot resolve has none."""
    text = _gdb(binary, specs, "-ex", "python\n" + _LOCATIONS, timeout=120)
    found = [json.loads(line.removeprefix("GS-LOCATIONS "))
             for line in text.splitlines() if line.startswith("GS-LOCATIONS ")]
    return {spec: sorted(addresses) for spec, addresses in found}


def gdb_frames(binary: str, specs) -> list[dict]:
    """One dict per location of each spec (see tests/gdb_frames.py)."""
    text = _gdb(binary, specs, "-x", str(FRAMES_SCRIPT), timeout=180)
    return [json.loads(line.removeprefix("GS-FRAME "))
            for line in text.splitlines() if line.startswith("GS-FRAME ")]


def frame_names(frame: dict) -> list[str]:
    """Every variable name gdb lists in the frame, innermost block first."""
    return [symbol["name"] for block in frame["blocks"] for symbol in block["symbols"]]


def innermost(frame: dict) -> dict[str, dict]:
    """name -> the symbol `print NAME` shows: the innermost block's."""
    found: dict[str, dict] = {}
    for block in frame["blocks"]:
        for symbol in block["symbols"]:
            found.setdefault(symbol["name"], symbol)
    return found


VALUES_SCRIPT = Path(__file__).resolve().parent / "gdb_values.py"


def gdb_values(binary: str, probes, count: int, up: bool = False,
               settings: tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """The first `count` stops of a run with `break SPEC` for each (spec,
    expressions) probe: (spec, the expressions' values as gdb prints them
    in the frame it selected; with `up`, a name that frame lacks as gdb
    prints it after `up`), in the order they happened. `settings`: gdb
    commands run first (`set print elements unlimited`)."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    env = dict(os.environ, GS_GDB_PROBES=json.dumps([[s, list(e)] for s, e in probes]),
               GS_GDB_COUNT=str(count), GS_GDB_UP="1" if up else "0",
               GS_GDB_SETTINGS=json.dumps(list(settings)))
    text = subprocess.run(["gdb", "-nx", "-batch", "-x", str(VALUES_SCRIPT), str(binary)],
                          capture_output=True, text=True, timeout=120, env=env,
                          check=True).stdout
    return [tuple(json.loads(line.removeprefix("GS-VALUES ")))
            for line in text.splitlines() if line.startswith("GS-VALUES ")]


def gdb_form(value) -> str:
    """A gs-cgen JSON value as gdb's `print` writes it: a struct's members
    and its bases (`<Base>`) as `{<Base> = {a = 1}, b = 2}`, an empty
    struct `{<No data fields>}`, a bool `true`/`false`, a number as itself."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        if not value:
            return "{<No data fields>}"
        return "{" + ", ".join(f"{name} = {gdb_form(field)}" for name, field in value.items()) + "}"
    if isinstance(value, list):
        return "{" + ", ".join(gdb_form(element) for element in value) + "}"
    return str(value)
