"""A C99 variable-length array is told apart from a flexible array member:
both have no constant bound, but only the VLA has one computed at run
time (DW_AT_upper_bound / DW_AT_count as an expression or a variable
reference), so only it may not be printed as an empty array."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.model import OptimizedOut, UnsupportedLocation
from gs_cgen.dwarf.types import ArrayType, PointerType, StructType, strip
from tests.prerequisites import require

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "vla.c"


@pytest.fixture(scope="module", params=["-O0", "-O2", "-gdwarf-4 -O0"])
def vla_binary(request, tmp_path_factory) -> str:
    require(None if shutil.which("gcc") else "gcc is not installed")
    out = tmp_path_factory.mktemp("vla") / "vla"
    subprocess.run(["gcc", "-g", *request.param.split(), "-o", str(out), str(FIXTURE)],
                   check=True)
    return str(out)


def test_vla_is_variable_length_flexible_member_is_not(vla_binary):
    module = open_module(vla_binary)
    (site,) = module.find_functions("use")
    found = {v.name: v for v in module.variables_at(site.probe_address)}
    for name in ("vla", "name"):
        ctype = strip(found[name].type)
        assert isinstance(ctype, ArrayType) and ctype.count is None and ctype.variable_length
    flex = strip(found["f"].type)
    assert isinstance(flex, PointerType)
    struct = strip(flex.target)
    assert isinstance(struct, StructType)
    items = strip(next(m.type for m in struct.members if m.name == "items"))
    assert isinstance(items, ArrayType) and items.count is None and not items.variable_length


def test_vla_bound_is_located_at_the_pc(vla_binary):
    """Each VLA names the subrange holding its bound, and array_bound says
    where that is at the marked line: an expression whose result is the
    bound (computed) or a variable holding it, never nothing."""
    module = open_module(vla_binary)
    line = next(n for n, text in enumerate(FIXTURE.read_text().splitlines(), 1)
                if "LINE:vla" in text)
    (site,) = module.find_lines("vla.c", line)
    found = {v.name: strip(v.type) for v in module.variables_at(site.address)}
    for name in ("vla", "name"):
        bound = module.array_bound(found[name].bound_die, site.address)
        assert bound is not None and bound.lower == 0 and not bound.is_count
        assert not isinstance(bound.location, (OptimizedOut, UnsupportedLocation)), bound
    assert found["vla"].bound_die != found["name"].bound_die
