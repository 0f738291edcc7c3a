"""Function probe sites: gdb's `break NAME` address is the oracle."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.errors import DebugInfoError
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.sites import resolve_sites
from gs_cgen.script.parser import parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FUNCTIONS = ("add", "scale", "sum_array", "move_point", "main", "util_a", "util_b")
BUILDS = ("O0", "O2", "O0-dwarf4", "O2-dwarf4")


@pytest.mark.parametrize("build", BUILDS)
def test_probe_address_matches_gdb_breakpoint(binaries, gdb_breaks, build):
    module = open_module(binaries[build])
    expected = gdb_breaks(binaries[build], FUNCTIONS)
    for name in FUNCTIONS:
        (site,) = module.find_functions(name)
        assert site.probe_address == expected[name][0], name


@pytest.mark.parametrize("build", BUILDS)
def test_site_line_is_gdbs_breakpoint_line(binaries, gdb_breaks, build):
    """`trace NAME` and `info function NAME` show the line gdb's `break
    NAME` reports: the probe address's line (after an -O0 prologue, the
    first statement), not the declaration's."""
    module = open_module(binaries[build])
    expected = gdb_breaks(binaries[build], FUNCTIONS)
    modules = ModuleSet.of(module)
    for name in FUNCTIONS:
        ((_, site),) = resolve_sites(parse(f"trace {name} {{ }}").traces[0], modules, 0)
        assert (site.address, site.source_line) == expected[name], name
        assert site.source_file == module.line_at(site.address)[0]
    assert any(s.decl_line != expected[n][1] for n in FUNCTIONS for s in module.find_functions(n))


@pytest.mark.parametrize("build", ("O0", "O0-dwarf4"))
def test_unoptimized_probe_skips_frame_setup(binaries, build):
    (site,) = open_module(binaries[build]).find_functions("add")
    # push %rbp; mov %rsp,%rbp; stores of a and b: the body starts later.
    assert site.low_pc + 4 < site.probe_address < site.high_pc


def test_site_fields(binaries):
    module = open_module(binaries["O0"])
    (site,) = module.find_functions("add")
    assert site.name == "add"
    assert site.decl_file.endswith("tests/fixtures/dwarf_basic.c")
    assert site.decl_line == 45
    assert site.low_pc == _nm(binaries["O0"])["add"]
    assert site.high_pc > site.probe_address


def test_gcc_clone_is_found_under_source_name(binaries):
    # At -O2 gcc emits `scale.constprop.0`; the DWARF name is still `scale`.
    (site,) = open_module(binaries["O2"]).find_functions("scale")
    assert site.name == "scale"
    assert site.low_pc == _nm(binaries["O2"])["scale.constprop.0"]


def test_typo_lists_candidates(binaries):
    with pytest.raises(DebugInfoError) as err:
        open_module(binaries["O0"]).find_functions("sum_aray")
    assert "no function 'sum_aray'" in err.value.message
    assert err.value.candidates[0] == "sum_array"


def test_function_names(binaries):
    names = open_module(binaries["O2"]).function_names()
    assert {"add", "scale", "sum_array", "main", "util_a"} <= set(names)


def _nm(binary: str) -> dict[str, int]:
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (l.split() for l in out.splitlines())
            if len(parts) == 3}


def test_split_dwarf_is_named_as_the_reason(tmp_path):
    """-gsplit-dwarf leaves a skeleton unit in the file and the DWARF in a
    .dwo beside it: the error says so (it said "assembly, or a file built
    without -g")."""
    binary = tmp_path / "split"
    subprocess.run(["gcc", "-g", "-O0", "-gsplit-dwarf", "-o", str(binary),
                    str(FIXTURES / "ten_calls.c")], check=True, cwd=tmp_path)
    module = open_module(str(binary))
    (site,) = module.find_functions("f")
    assert f"its DWARF is split out to {tmp_path}/split-ten_calls.dwo (-gsplit-dwarf)" \
        in site.no_variables
    with pytest.raises(DebugInfoError, match="rebuild without -gsplit-dwarf"):
        module.variables_at(site.probe_address)
