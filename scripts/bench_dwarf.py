#!/usr/bin/env python3
"""Time gs_cgen.dwarf on a large -O3 library (default: this machine's
libpython3.11): open_module, find_functions, variables_at at the probe PC.

Each measurement runs in a fresh process, as a `gs-cgen` run would:
  no cache     GS_CGEN_NO_CACHE=1
  cold cache   an empty XDG_CACHE_HOME (decodes, then writes the cache)
  warm cache   the same XDG_CACHE_HOME again (reads the cache)

    .venv/bin/python scripts/bench_dwarf.py [LIBRARY] [FUNCTION]
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gs_cgen.dwarf import open_module  # noqa: E402
from gs_cgen.dwarf.model import describe_location  # noqa: E402

_STEPS = ("open_module", "find_functions", "variables_at", "total")


def default_library() -> str:
    # The `python3.11` on PATH is the yardstick build (DESIGN.md "Speed");
    # this interpreter's own libpython may be stripped.
    libdir = sysconfig.get_config_var("LIBDIR") or "/usr/lib"
    if shutil.which("python3.11"):
        out = subprocess.run(["python3.11", "-c", "import sysconfig;print(sysconfig.get_config_var('LIBDIR'))"],
                             capture_output=True, text=True)
        libdir = out.stdout.strip() or libdir
    return os.path.join(libdir, "libpython3.11.so.1.0")


def measure(path: str, function: str) -> dict:
    start = time.perf_counter()
    module = open_module(path)
    opened = time.perf_counter()
    sites = module.find_functions(function)
    found = time.perf_counter()
    variables = module.variables_at(sites[0].probe_address)
    done = time.perf_counter()
    return {"probe": sites[0].probe_address,
            "variables": [(v.kind.value, v.name, describe_location(v.location)) for v in variables],
            "times": [opened - start, found - opened, done - found, done - start]}


def run_child(path: str, function: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", path, function],
                         env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
        return
    path = sys.argv[1] if len(sys.argv) > 1 else default_library()
    function = sys.argv[2] if len(sys.argv) > 2 else "PyObject_GetAttr"
    with tempfile.TemporaryDirectory() as cache_home:
        runs = {"no cache": run_child(path, function, {"GS_CGEN_NO_CACHE": "1"}),
                "cold cache": run_child(path, function, {"XDG_CACHE_HOME": cache_home}),
                "warm cache": run_child(path, function, {"XDG_CACHE_HOME": cache_home})}
    first = runs["no cache"]
    print(f"{path}: {function} at 0x{first['probe']:x}")
    for kind, name, where in first["variables"]:
        print(f"  {kind:9} {name:12} {where}")
    print(f"{'':16}" + "".join(f"{mode:>12}" for mode in runs))
    for i, step in enumerate(_STEPS):
        print(f"{step:16}" + "".join(f"{run['times'][i]:>10.3f} s" for run in runs.values()))
    if any(run["variables"] != first["variables"] for run in runs.values()):
        sys.exit("results differ between cache modes")


if __name__ == "__main__":
    main()
