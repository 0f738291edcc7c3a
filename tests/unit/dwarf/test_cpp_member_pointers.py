"""C++ pointers to members (DW_TAG_ptr_to_member_type) are not modelled:
gs-cgen names the type as gdb's `whatis` does (a data member's), gives it
gdb's `sizeof` and shows its bytes as an unsupported type; before, it was
`void` of no size: `<unsupported type void: >`. From the constant-
initialised globals of tests/fixtures/cpp_member_pointers.cpp."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import type_name, type_size
from gs_cgen.render.text import format_value
from gs_cgen.render.values import decode_object
from tests.prerequisites import require
from tests.unit.conftest import gdb_prints

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "cpp_member_pointers.cpp"


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> str:
    if shutil.which("g++") is None:
        require("g++ is not installed")
    path = str(tmp_path_factory.mktemp("cpp_member_pointers") / "cpp_member_pointers")
    subprocess.run(["g++", "-g", "-O0", "-o", path, str(FIXTURE)], check=True)
    return path


def whatis(binary: str, name: str) -> str:
    done = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"whatis {name}", binary],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip().removeprefix("type = ")


def test_types_are_named_and_sized_as_gdb_has_them(binary):
    module = open_module(binary)
    field, method = module.find_global("g_field"), module.find_global("g_method")
    assert type_name(field.type) == whatis(binary, "g_field") == "int shop::Point::*"
    assert "shop::Point::*" in type_name(method.type)
    sizes = gdb_prints(binary, "sizeof(g_field)", "sizeof(g_method)")
    assert [str(type_size(field.type)), str(type_size(method.type))] == list(sizes.values())


def test_a_data_member_pointer_shows_gdbs_offset_in_its_bytes(binary):
    module = open_module(binary)
    var = module.find_global("g_field")
    with open(binary, "rb") as f:
        f.seek(module.vaddr_to_file_offset(var.address))
        data = f.read(type_size(var.type))
    offset = int(gdb_prints(binary, "/x g_field")["/x g_field"], 16)
    assert format_value(decode_object(var.type, data)) == \
        f"<unsupported type int shop::Point::*: {' '.join(f'{b:02x}' for b in offset.to_bytes(8, 'little'))}>"
