"""raw(x) of C++ objects (render/values.py decode_raw) is gdb's print/r:
bases first as `<Base>`, bitfields extracted from their storage unit, an
anonymous union's members spliced into the class that holds it (as
decode_object does: std::string's _M_local_buf and _M_allocated_capacity).
Decoded from the g_* globals of tests/fixtures/cpp_raw.cpp, whose bytes
g++ wrote into the file, and compared with gdb's print/r of the same
globals."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import type_size
from gs_cgen.render.text import value_json
from gs_cgen.render.values import decode_raw
from tests.gdb_oracle import gdb_form
from tests.prerequisites import require
from tests.unit.conftest import gdb_prints

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "cpp_raw.cpp"


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> str:
    if shutil.which("g++") is None:
        require("g++ is not installed")
    path = str(tmp_path_factory.mktemp("cpp_raw") / "cpp_raw")
    subprocess.run(["g++", "-g", "-O0", "-o", path, str(FIXTURE)], check=True)
    return path


def raw_global(path: str, name: str):
    module = open_module(path)
    var = module.find_global(name)
    with open(path, "rb") as f:
        f.seek(module.vaddr_to_file_offset(var.address))
        data = f.read(type_size(var.type))
    return decode_raw(var.type, data)


def test_bases_and_bitfields_are_gdbs(binary):
    printed = gdb_prints(binary, "/r g_derived")
    tree = value_json(raw_global(binary, "g_derived"))
    assert tree == {"<Base>": {"a": 7}, "bits": {"low": 5, "mid": 300, "neg": -7, "on": True},
                    "s": -3}
    assert gdb_form(tree) == printed["/r g_derived"]


def test_an_anonymous_union_is_spliced_into_its_class(binary):
    """gdb prints the union unnamed inside Holder (`{buf = ..., capacity
    = ...}`) and reads its members by their own names; so does raw()."""
    tree = value_json(raw_global(binary, "g_both"))
    assert list(tree) == ["<Base>", "<Holder>", "z"]
    assert list(tree["<Holder>"]) == ["length", "buf", "capacity"]
    printed = gdb_prints(binary, "g_both.a", "g_both.length", "g_both.capacity", "g_both.z")
    assert [str(tree["<Base>"]["a"]), str(tree["<Holder>"]["length"]),
            str(tree["<Holder>"]["capacity"]), str(tree["z"])] == list(printed.values())
    assert tree["<Holder>"]["buf"] == "abc"
