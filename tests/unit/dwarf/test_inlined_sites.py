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


def test_a_raw_hit_inside_another_die_is_no_inlined_copy():
    """ld.so's `malloc` exists only inlined (rtld-malloc.h), 45 copies in
    gdb. One raw hit for a reference to its abstract instance lay inside
    another DIE and decoded as an inlined copy at 0x3600001337340000: it
    is not one, since no function of its CU covers that address."""
    from tests.gdb_oracle import gdb_locations          # noqa: PLC0415
    from tests.prerequisites import require              # noqa: PLC0415
    ld_so = "/lib64/ld-linux-x86-64.so.2"
    module = open_module(ld_so)
    if not module.has_debug_info:
        require(f"no DWARF for {ld_so} (install libc6-dbg)")
    sites = module.find_functions("malloc")
    assert [s.probe_address for s in sites] == gdb_locations(ld_so, ["malloc"])["malloc"]
    assert len(sites) > 40
