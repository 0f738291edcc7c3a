"""A function that exists only inlined gets one probe site per inlined
instance, at the addresses gdb puts its breakpoint locations."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import ImplicitValue, InRegister

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "inlined.c"


def test_inlined_instances_match_gdb_locations(tmp_path):
    binary = tmp_path / "inlined"
    subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(binary), str(FIXTURE)],
                   check=True)
    gdb = subprocess.run(["gdb", "-batch", "-ex", "break scale", "-ex", "info breakpoints",
                          str(binary)], capture_output=True, text=True, check=True).stdout
    expected = sorted(int(a, 16) for a in re.findall(r"^1\.\d+\s+y\s+(0x[0-9a-f]+)", gdb, re.M))
    module = open_module(str(binary))
    sites = module.find_functions("scale")
    assert [s.probe_address for s in sites] == expected and len(expected) == 2
    first = {v.name: v.location for v in module.variables_at(sites[0].probe_address)}
    second = {v.name: v.location for v in module.variables_at(sites[1].probe_address)}
    assert {first["k"], second["k"]} == {ImplicitValue(3), ImplicitValue(5)}
    assert isinstance(first["v"], InRegister)
