"""C++ functions and objects by name (dwarf/cppsymbols.py) on
tests/fixtures/cpp_names.cpp, against gdb on the same binary: every
pattern resolves to exactly the locations of gdb's `break PATTERN`
(namespaces, nested namespaces, overloads, methods, templates, an
anonymous namespace, a clone at -O2, a constructor that exists only
inlined at -O2), and every global to the address
gdb's `print &NAME` gives."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.elf.demangle import demangle
from gs_cgen.errors import DebugInfoError
from tests.gdb_oracle import gdb_locations
from tests.prerequisites import require

SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "cpp_names.cpp"
BUILDS = {"O0": "-O0", "O2": "-O2"}
FUNCTIONS = ("add", "geo::add", "geo::add(int,int)", "geo::add(int, int)", "geo::add(double)",
             "other::add", "Shape::area", "area", "geo::Shape::area(int) const", "geo::Shape::move",
             "move", "biggest", "biggest<int>", "geo::biggest<double>", "scale", "detail::scale",
             "geo::detail::scale", "helper", "_ZN3geo3addEii", "main",
             # only inlined (into main) at -O2
             "Shape::Shape", "geo::Shape::Shape(int)")
MISSING = ("geo::scale", "eo::add", "geo::ad", "nosuch")
GLOBALS = {"geo::counter": "geo::counter", "counter": "geo::counter", "hidden": "geo::hidden",
           "geo::Shape::instances": "geo::Shape::instances", "Shape::instances": "geo::Shape::instances",
           "instances": "geo::Shape::instances", "detail::depth": "geo::detail::depth",
           "g_rounds": "g_rounds"}


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, str]:
    if shutil.which("g++") is None:
        require("g++ is not installed")
    out = tmp_path_factory.mktemp("cpp_names")
    paths = {}
    for name, level in BUILDS.items():
        paths[name] = str(out / f"cpp_names_{name}")
        subprocess.run(["g++", "-g", level, "-fPIE", "-pie", "-o", paths[name], str(SOURCE)],
                       check=True)
    return paths


@pytest.mark.parametrize("build", BUILDS)
def test_function_patterns_find_gdbs_locations(builds, build):
    binary = builds[build]
    expected = gdb_locations(binary, FUNCTIONS + MISSING)
    module = open_module(binary)
    for spec in FUNCTIONS:
        found = sorted(site.probe_address for site in module.find_functions(spec))
        assert found == expected[spec] and found, spec
    for spec in MISSING:
        assert expected[spec] == []
        with pytest.raises(DebugInfoError):
            module.find_functions(spec)


def test_sites_are_named_as_gdb_lists_them(builds):
    module = open_module(builds["O2"])
    assert [site.name for site in module.find_functions("add")] == [
        "geo::add(int, int)", "geo::add(double)", "other::add(int, int)"]
    # The only copy of area at -O2 is a clone; gdb names it without the suffix.
    assert [site.name for site in module.find_functions("Shape::area")] == [
        "geo::Shape::area(int) const"]
    assert [site.name for site in module.find_functions("_ZN3geo3addEii")] == ["geo::add(int, int)"]


def test_an_unknown_name_offers_the_nearest_demangled_names(builds):
    module = open_module(builds["O0"])
    with pytest.raises(DebugInfoError) as caught:
        module.find_functions("geo::ad")
    assert caught.value.candidates[:2] == ("geo::add", "other::add")
    with pytest.raises(DebugInfoError) as caught:
        module.find_functions("aera")
    assert caught.value.candidates == ("geo::Shape::area",)
    assert not any(name.startswith("_Z") for name in module.function_names())


@pytest.mark.parametrize("build", BUILDS)
def test_globals_by_qualified_and_trailing_names(builds, build):
    binary = builds[build]
    module = open_module(binary)
    for name, qualified in GLOBALS.items():
        glob = module.find_global(name)
        assert glob is not None and glob.address == _gdb_address(binary, qualified), name
    assert module.find_global("geo::nope") is None


def test_a_name_of_several_objects_is_an_error_listing_them(builds, tmp_path):
    source = tmp_path / "twice.cpp"
    source.write_text("namespace a { int level = 1; }\nnamespace b { int level = 2; }\n"
                      "int main() { return a::level + b::level; }\n")
    binary = tmp_path / "twice"
    subprocess.run(["g++", "-g", "-o", str(binary), str(source)], check=True)
    module = open_module(str(binary))
    with pytest.raises(DebugInfoError) as caught:
        module.find_global("level")
    assert caught.value.candidates == ("a::level", "b::level")
    assert module.find_global("b::level").address == _gdb_address(str(binary), "b::level")


def test_the_demangler_is_gdbs():
    assert demangle("_ZNK3geo5Shape4areaEi.isra.0") == "geo::Shape::area(int) const [clone .isra.0]"
    assert demangle("_ZN3geo7biggestIiEET_S1_S1_") == "int geo::biggest<int>(int, int)"
    assert demangle("main") is None and demangle("_Zjunk") is None


def _gdb_address(binary: str, name: str) -> int:
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"print/x (long)&{name}", binary],
                         capture_output=True, text=True, check=True).stdout
    return int(out.rsplit("=", 1)[1], 16)
