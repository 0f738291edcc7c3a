"""Fixture binaries for the DWARF tests, compiled once per session.

Recipe (the C sources live in tests/fixtures/): every program links
dwarf_basic.c, dwarf_a/util.c, dwarf_b/util.c and dwarf_inline.c, built with
`gcc -g -O0 -fPIE -pie` and `-O2`, in DWARF 5 (gcc 12 default) and
`-gdwarf-4`, plus one copy without -g.

gdb is the oracle for probe addresses: `gdb_breaks` runs one `gdb -batch`
per binary with all the `break` commands a test module needs.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SOURCES = [FIXTURES / "dwarf_basic.c", FIXTURES / "dwarf_a" / "util.c", FIXTURES / "dwarf_b" / "util.c",
           FIXTURES / "dwarf_inline.c"]
VARIANTS = {
    "O0": ["-g", "-O0"],
    "O2": ["-g", "-O2"],
    "O0-dwarf4": ["-gdwarf-4", "-O0"],
    "O2-dwarf4": ["-gdwarf-4", "-O2"],
    "nodebug": ["-O0"],
}
_BREAK = re.compile(r"Breakpoint \d+ at (0x[0-9a-f]+): (?:file (.+), line (\d+)\.|(.+)\.)")


@pytest.fixture(scope="session")
def binaries(tmp_path_factory) -> dict[str, str]:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("dwarf_bins")
    paths = {}
    for name, flags in VARIANTS.items():
        target = out / f"basic_{name}"
        subprocess.run(["gcc", *flags, "-fPIE", "-pie", "-o", str(target), *map(str, SOURCES)],
                       check=True)
        paths[name] = str(target)
    return paths


@pytest.fixture(scope="session")
def gdb_breaks():
    """gdb_breaks(binary, specs) -> {spec: (address, line or None)}."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")
    cache: dict[tuple[str, tuple[str, ...]], dict] = {}

    def run(binary: str, specs: tuple[str, ...]) -> dict[str, tuple[int, int | None]]:
        key = (binary, tuple(specs))
        if key not in cache:
            args = ["gdb", "-nx", "-batch"]
            for spec in specs:
                args += ["-ex", f"break {spec}"]
            text = subprocess.run(args + [binary], capture_output=True, text=True, check=True).stdout
            hits = _BREAK.findall(text)
            assert len(hits) == len(specs), text
            cache[key] = {spec: (int(addr, 16), int(line) if line else None)
                          for spec, (addr, _, line, _) in zip(specs, hits)}
        return cache[key]
    return run


@pytest.fixture(scope="session")
def gdb_text():
    """Raw `gdb -batch` output for a list of commands."""
    if shutil.which("gdb") is None:
        require("gdb is not installed")

    def run(binary: str, *commands: str) -> str:
        args = ["gdb", "-nx", "-batch"]
        for command in commands:
            args += ["-ex", command]
        return subprocess.run(args + [binary], capture_output=True, text=True, check=True).stdout
    return run


@pytest.fixture(scope="session", autouse=True)
def _private_index_cache(tmp_path_factory):
    """Keep the build-id index cache (gs_cgen/indexcache.py) of fixture
    binaries out of the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))
        yield

