"""Fixtures shared by the unit tests of several stages: small ELF files
built from tests/fixtures and the real libc.so.6 of this machine."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SYMBOLS = FIXTURES / "symbols"


@pytest.fixture(scope="session")
def symbols_lib(tmp_path_factory) -> str:
    """libsymbols.so: aliases, symbol versions, an IFUNC, an assembly
    function and one built without -g (recipe in tests/fixtures/symbols/lib.c)."""
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("symbols")
    nodebug = out / "nodebug.o"
    subprocess.run(["gcc", "-O1", "-fPIC", "-c", "-o", str(nodebug), str(SYMBOLS / "nodebug.c")],
                   check=True)
    lib = out / "libsymbols.so"
    subprocess.run(["gcc", "-g", "-O1", "-fPIC", "-shared",
                    f"-Wl,--version-script={SYMBOLS / 'lib.map'}", str(SYMBOLS / "lib.c"),
                    str(SYMBOLS / "asm.S"), "-x", "none", str(nodebug), "-o", str(lib)],
                   check=True)
    return str(lib)


def readelf(*args: str) -> str:
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True,
                          check=True).stdout


def process_libc() -> str:
    """The libc.so.6 this Python process runs on (every glibc machine has one)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libc.so"):
                return os.path.realpath(path)
    require("this process maps no libc.so.6")


@pytest.fixture(scope="session")
def wide_types_bin(tmp_path_factory) -> str:
    """tests/fixtures/wide_types.c, -g -O0 -no-pie: every g_* initialiser is
    a constant, so the file's .data holds gcc's bytes for each value."""
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("wide_types") / "wide_types"
    subprocess.run(["gcc", "-g", "-O0", "-no-pie", "-o", str(out),
                    str(FIXTURES / "wide_types.c")], check=True)
    return str(out)


def gdb_prints(binary: str, *expressions: str) -> dict[str, str]:
    """gdb's `print` text of each expression, read from the file without
    running it (initialised globals); repeats are not collapsed."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    args = ["gdb", "-nx", "-batch", "-ex", "set print repeats unlimited"]
    for expression in expressions:
        args += ["-ex", f"print {expression}"]
    text = subprocess.run(args + [binary], capture_output=True, text=True, check=True).stdout
    values = re.findall(r"^\$\d+ = (.*)$", text, re.M)
    assert len(values) == len(expressions), text
    return dict(zip(expressions, values))


@pytest.fixture(scope="session")
def cpp_bases_bins(tmp_path_factory) -> dict[str, str]:
    """tests/fixtures/cpp_bases.cpp, `g++ -g` at -O0 and -O2 and in DWARF 4:
    classes with base classes; the g_* globals are constant-initialised."""
    if shutil.which("g++") is None:
        require("g++ is not installed")
    out = tmp_path_factory.mktemp("cpp_bases")
    builds = {"O0": ["-g", "-O0"], "O2": ["-g", "-O2"], "O0-dwarf4": ["-gdwarf-4", "-O0"]}
    paths = {}
    for name, flags in builds.items():
        paths[name] = str(out / f"cpp_bases_{name}")
        subprocess.run(["g++", *flags, "-fPIE", "-pie", "-o", paths[name],
                        str(FIXTURES / "cpp_bases.cpp")], check=True)
    return paths
