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
