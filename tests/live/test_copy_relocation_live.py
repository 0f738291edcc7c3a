"""A library global read by a non-PIE executable lives in the executable's
copy (R_X86_64_COPY): ld.so binds every reference, the library's own too,
to it, and the library's original keeps its initial value. Found by the
fidelity harness: gs-cgen printed the stale original (5) where gdb prints
the live copy."""
from __future__ import annotations

import re
import shutil
import subprocess

from tests.live.conftest import FIXTURES, gs_cgen, require


def _build(build_dir):
    source = FIXTURES / "copyreloc"
    lib = build_dir / "libcopyreloc.so"
    app = build_dir / "copyreloc_app"
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", "-o", str(lib),
                    str(source / "lib.c")], check=True)
    subprocess.run(["gcc", "-g", "-O0", "-fno-pie", "-no-pie", "-o", str(app),
                    str(source / "app.c"), f"-L{build_dir}", "-lcopyreloc",
                    f"-Wl,-rpath,{build_dir}"], check=True)
    relocations = subprocess.run(["readelf", "-r", str(app)], capture_output=True,
                                 text=True).stdout
    assert re.search(r"R_X86_64_COPY .* lib_counter", relocations), relocations
    return app


def _on_schedule(value: int) -> bool:
    # main adds 100, then lib_bump adds 1: at lib_bump's entry 5 + 100 + 101 k
    return value != 5 and (value - 105) % 101 == 0


def test_library_reads_the_executables_copy(build_dir, start_target):
    require(None if shutil.which("gdb") else "gdb is not installed")
    target = start_target(_build(build_dir))
    result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace lib_bump { print lib_counter; }",
                     "--max-events", "3", "--output", "plain")
    assert result.returncode == 0, result.stderr
    values = [int(line.removeprefix("lib_counter = ")) for line in result.stdout.splitlines()]
    assert len(values) == 3 and all(_on_schedule(v) for v in values), values
    assert values == sorted(values)
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-p", str(target.pid), "-ex", "break lib_bump",
                          "-ex", "continue", "-ex", "print lib_counter"],
                         capture_output=True, text=True, timeout=60).stdout
    seen = int(re.search(r"^\$1 = (\d+)$", gdb, re.M).group(1))
    assert _on_schedule(seen) and seen > values[-1], (seen, values)


def test_library_alone_reads_the_object_its_got_names(build_dir, start_target):
    """`-t LIB` alone knows no executable when it plans: the global is read
    where the library's own GOT slot points in each process (the
    executable's copy here), exactly as the library's code reads it."""
    app = _build(build_dir)
    target = start_target(app)
    result = gs_cgen("trace", "-t", str(build_dir / "libcopyreloc.so"), "-s",
                     "trace lib_bump { print lib_counter; }", "--max-events", "2",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    values = [int(line.removeprefix("lib_counter = ")) for line in result.stdout.splitlines()]
    assert len(values) == 2 and all(_on_schedule(v) for v in values), values
    assert target.proc.poll() is None
