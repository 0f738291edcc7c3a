#!/usr/bin/env python3
"""Time gs_cgen.dwarf on a large -O3 library (default: this machine's
libpython3.11): open_module, find_functions, variables_at at the probe PC.

    .venv/bin/python scripts/bench_dwarf.py [LIBRARY] [FUNCTION]
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gs_cgen.dwarf import open_module  # noqa: E402
from gs_cgen.dwarf.model import describe_location  # noqa: E402


def default_library() -> str:
    # The `python3.11` on PATH is the yardstick build (DESIGN.md "Speed");
    # this interpreter's own libpython may be stripped.
    libdir = sysconfig.get_config_var("LIBDIR") or "/usr/lib"
    if shutil.which("python3.11"):
        out = subprocess.run(["python3.11", "-c", "import sysconfig;print(sysconfig.get_config_var('LIBDIR'))"],
                             capture_output=True, text=True)
        libdir = out.stdout.strip() or libdir
    return os.path.join(libdir, "libpython3.11.so.1.0")


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else default_library()
    function = sys.argv[2] if len(sys.argv) > 2 else "PyObject_GetAttr"
    start = time.perf_counter()
    module = open_module(path)
    opened = time.perf_counter()
    sites = module.find_functions(function)
    found = time.perf_counter()
    variables = module.variables_at(sites[0].probe_address)
    done = time.perf_counter()
    print(f"{path}: {function} at 0x{sites[0].probe_address:x}")
    for v in variables:
        print(f"  {v.kind.value:9} {v.name:12} {describe_location(v.location)}")
    print(f"open_module     {opened - start:.3f} s")
    print(f"find_functions  {found - opened:.3f} s")
    print(f"variables_at    {done - found:.3f} s")
    print(f"total           {done - start:.3f} s")


if __name__ == "__main__":
    main()
