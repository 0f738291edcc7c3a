"""Fuzz the planner with every location expression of two real -O2/-O3
libraries (tests/locations_fuzz.py): libpython3.11 (DWARF 5, -O3) and
glibc's libc.so.6 (libc6-dbg). No expression may end in an internal
error; unsupported ones are counted, and printed when the test fails.
Takes ~25 s."""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import open_module
from tests.locations_fuzz import fuzz

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def _libpython() -> str | None:
    """The `python3.11` on PATH (built with libpython and DWARF), then ours."""
    dirs = []
    if shutil.which("python3.11"):
        out = subprocess.run(["python3.11", "-c", "import sysconfig; "
                              "print(sysconfig.get_config_var('LIBDIR'))"],
                             capture_output=True, text=True)
        dirs.append(out.stdout.strip())
    dirs.append(sysconfig.get_config_var("LIBDIR") or "/usr/lib")
    for path in (os.path.join(d, "libpython3.11.so.1.0") for d in dirs if d):
        if os.path.exists(path):
            return path
    return None


def _with_dwarf(path: str | None) -> str:
    if path is None or not os.path.exists(path) or not open_module(path).has_debug_info:
        require(f"{path or 'libpython3.11.so.1.0'}: not here or without DWARF")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("which", ["libpython", "libc"])
def test_no_location_expression_is_an_internal_error(which):
    path = _with_dwarf(_libpython() if which == "libpython" else LIBC)
    summary = fuzz(path)
    report = summary.report()
    print(report)
    assert summary.tried >= len(summary.shapes) > 100, report
    assert not summary.internal, report
    # The shapes the planner reads must be among the outcomes: a fuzz that
    # only ever says "unsupported" would prove nothing.
    assert any(outcome.startswith("read: register") for outcome in summary.outcomes), report
    assert any(outcome.startswith("read: memory") for outcome in summary.outcomes), report
