"""The library closure of a program, as ld.so will load it, on fixture
trees built from tests/fixtures/closure (recipes in `tree`) and on system
programs. glibc is the oracle: `ldd` (ld.so in trace mode) lists what the
loader really maps, in its order, and `ld.so --help` the glibc-hwcaps
subdirectories this CPU supports."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require

from gs_cgen.elf.dynamic import read_dynamic
from gs_cgen.errors import DebugInfoError
from gs_cgen.runtime.libraries import (CACHE_LABEL, DEFAULT_DIRS, LoaderEnvironment,
                                       MissingLibrary, library_closure, loader_environment,
                                       supported_hwcaps)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "closure"
LD_SO = "/lib64/ld-linux-x86-64.so.2"


def gcc(*args) -> None:
    subprocess.run(["gcc", *map(str, args)], check=True)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """bin/app-runpath  RUNPATH $ORIGIN/../lib          -> lib/libmid.so
       lib/libmid.so    RUNPATH $ORIGIN/../deps         -> deps/libleaf.so
       bin/app-rpath    RPATH $ORIGIN/../plain:$ORIGIN/../deps
                                                        -> plain/libmid.so (no paths)
       bin/app-narrow   RUNPATH $ORIGIN/../plain:$ORIGIN/../deps (not inherited)
       bin/app-gone     needs libgone.so, deleted after linking"""
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    root = tmp_path_factory.mktemp("closure")
    for folder in ("bin", "lib", "deps", "plain", "gone"):
        (root / folder).mkdir()
    gcc("-shared", "-fPIC", "-Wl,-soname,libleaf.so", "-o", root / "deps/libleaf.so",
        FIXTURES / "leaf.c")
    mid = ["-shared", "-fPIC", "-Wl,-soname,libmid.so", FIXTURES / "mid.c",
           f"-L{root / 'deps'}", "-lleaf"]
    gcc(*mid, "-Wl,-rpath,$ORIGIN/../deps", "-o", root / "lib/libmid.so")
    gcc(*mid, "-o", root / "plain/libmid.so")
    app = [FIXTURES / "app.c", f"-Wl,-rpath-link,{root / 'deps'}", "-lmid"]
    gcc(*app, f"-L{root / 'lib'}", "-Wl,-rpath,$ORIGIN/../lib", "-o", root / "bin/app-runpath")
    two_dirs = "-Wl,-rpath,$ORIGIN/../plain:$ORIGIN/../deps"
    gcc(*app, f"-L{root / 'plain'}", "-Wl,--disable-new-dtags", two_dirs,
        "-o", root / "bin/app-rpath")
    gcc(*app, f"-L{root / 'plain'}", "-Wl,--enable-new-dtags", two_dirs,
        "-o", root / "bin/app-narrow")
    gcc("-shared", "-fPIC", "-Wl,-soname,libgone.so", "-o", root / "gone/libgone.so",
        FIXTURES / "leaf.c")
    gcc(FIXTURES / "app.c", "-Wl,--no-as-needed", f"-L{root / 'gone'}", "-lgone",
        f"-L{root / 'lib'}", "-lmid", "-Wl,-rpath,$ORIGIN/../lib",
        f"-Wl,-rpath-link,{root / 'deps'}", "-o", root / "bin/app-gone")
    (root / "gone/libgone.so").unlink()
    return root


def environment(**environ) -> LoaderEnvironment:
    return loader_environment(environ, "/", preload_file="/nonexistent")


def ldd(program: Path | str, **environ) -> tuple[list[str], list[str]]:
    """(paths ld.so maps, in order; names it cannot find)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **environ}
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, env=env,
                         check=False).stdout
    found, missing = [], []
    for line in out.splitlines():
        if match := re.match(r"\s*(\S+) => not found", line):
            missing.append(match.group(1))
        elif match := re.match(r"\s*(?:\S+ => )?(/\S+) \(0x", line):
            found.append(match.group(1))
    return found, missing


def test_runpath_with_origin_in_the_executable_and_in_a_library(tree):
    closure = library_closure(str(tree / "bin/app-runpath"), environment())
    assert closure.libraries[:1] == (str(tree / "bin/../lib/libmid.so"),)
    assert os.path.realpath(closure.libraries[2]) == str(tree / "deps/libleaf.so")
    assert closure.missing == ()
    assert ldd(tree / "bin/app-runpath") == (list(closure.libraries), [])


def test_rpath_of_the_executable_serves_libraries_without_paths(tree):
    closure = library_closure(str(tree / "bin/app-rpath"), environment())
    real = [os.path.realpath(p) for p in closure.libraries]
    assert str(tree / "plain/libmid.so") in real and str(tree / "deps/libleaf.so") in real
    assert ldd(tree / "bin/app-rpath") == (list(closure.libraries), [])


def test_runpath_is_not_inherited_and_a_missing_library_is_a_note(tree):
    app = str(tree / "bin/app-narrow")
    closure = library_closure(app, environment())
    assert [os.path.basename(p) for p in closure.libraries] == [
        "libmid.so", "libc.so.6", "ld-linux-x86-64.so.2"]
    (missing,) = closure.missing
    assert missing == MissingLibrary("libleaf.so", closure.libraries[0],
                                     (CACHE_LABEL, *DEFAULT_DIRS))
    assert missing.describe() == (
        f"libleaf.so, needed by {closure.libraries[0]}, was not found (searched: "
        "ld.so.cache, /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib, /usr/lib)")
    assert ldd(app) == (list(closure.libraries), ["libleaf.so"])


def test_ld_library_path_comes_before_runpath(tree):
    deps = str(tree / "deps")
    closure = library_closure(str(tree / "bin/app-narrow"), environment(LD_LIBRARY_PATH=deps))
    assert closure.missing == ()
    assert f"{deps}/libleaf.so" in closure.libraries
    assert ldd(tree / "bin/app-narrow", LD_LIBRARY_PATH=deps) == (list(closure.libraries), [])


def test_deleted_library_is_missing_and_the_rest_still_resolves(tree):
    app = str(tree / "bin/app-gone")
    closure = library_closure(app, environment())
    (missing,) = closure.missing
    assert (missing.name, missing.needed_by) == ("libgone.so", app)
    assert missing.searched[:2] == (str(tree / "bin/../lib"), CACHE_LABEL)
    assert [os.path.basename(p) for p in closure.libraries] == [
        "libmid.so", "libc.so.6", "libleaf.so", "ld-linux-x86-64.so.2"]
    assert ldd(app) == (list(closure.libraries), ["libgone.so"])


def test_not_an_elf_executable_is_an_error(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(DebugInfoError, match="is not an ELF file"):
        library_closure(str(script), environment())


@pytest.mark.parametrize("program", ["/usr/bin/bash", "/usr/bin/gdb", "python3.11"])
def test_system_programs_match_ldd(program):
    path = shutil.which(program)
    if path is None:
        require(f"{program} is not installed")
    path = _real_executable(path)
    closure = library_closure(path, loader_environment({}, "/"))
    assert closure.missing == ()
    assert ldd(path) == (list(closure.libraries), [])


def _real_executable(path: str) -> str:
    """The ELF file behind a wrapper script (a pyenv shim)."""
    try:
        read_dynamic(path)
        return path
    except DebugInfoError:
        return subprocess.run([path, "-c", "import sys; print(sys.executable)"],
                              capture_output=True, text=True, check=True).stdout.strip()


def test_hwcaps_subdirectories_match_the_loader():
    help_text = subprocess.run([LD_SO, "--help"], capture_output=True, text=True).stdout
    searched = tuple(re.findall(r"^\s+(x86-64-v\d) \(supported, searched\)", help_text, re.M))
    with open("/proc/cpuinfo") as f:
        flags = set(next(line for line in f if line.startswith("flags")).split(":")[1].split())
    assert supported_hwcaps(flags) == searched


def test_hwcaps_levels_build_on_each_other():
    v2 = {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"}
    v3 = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
    assert supported_hwcaps(v2) == ("x86-64-v2",)
    assert supported_hwcaps(v2 | v3) == ("x86-64-v3", "x86-64-v2")
    assert supported_hwcaps(v3) == ()          # v3 without v2 is no level at all


def test_ld_preload_comes_first_and_a_missing_one_is_a_note(tree):
    leaf = str(tree / "deps/libleaf.so")
    env = environment(LD_PRELOAD=f"{leaf} libgs-cgen-no-such-preload.so")
    closure = library_closure(str(tree / "bin/app-narrow"), env)
    assert closure.libraries[0] == leaf
    (missing,) = closure.missing                      # libleaf.so: the preload serves it
    assert (missing.name, missing.needed_by) == ("libgs-cgen-no-such-preload.so", "LD_PRELOAD")
    found, _ = ldd(tree / "bin/app-narrow", LD_PRELOAD=leaf)
    assert found == list(closure.libraries)
