"""gs-cgen installs as a normal Python package: a wheel built from this
tree, installed into a fresh venv that sees nothing of this machine's
site-packages, runs `--version` and `--emit-c` from outside the checkout
(so nothing is found through the source tree), and ships the man page
where `man gs-cgen` finds it from that venv."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.prerequisites import require

REPO = Path(__file__).resolve().parents[2]


def run(*argv, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}: {result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "-w", work / "dist", REPO, timeout=300)
    (built,) = (work / "dist").glob("gs_cgen-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """bin/ of a fresh venv holding the wheel and the pinned dependencies."""
    work = tmp_path_factory.mktemp("venv")
    run("/usr/bin/python3", "-m", "venv", work / "env", timeout=120)
    run(work / "env" / "bin" / "pip", "install", "-q", "--disable-pip-version-check",
        "-c", REPO / "constraints.txt", wheel, timeout=600)
    return work / "env" / "bin"


def test_the_wheel_ships_the_abi_header_and_runs_emit_c(installed, tmp_path):
    binary = tmp_path / "live_basic"
    run("gcc", "-g", "-O0", "-o", binary, REPO / "tests" / "fixtures" / "live_basic.c")
    result = run(installed / "gs-cgen", "trace", "-t", binary, "--emit-c", "-s",
                 'trace add { print "{} {}", a, b; }', cwd=tmp_path, timeout=120)
    assert '#include "gs_abi.h"' in result.stdout
    assert "int gs_probe_0(struct pt_regs *ctx)" in result.stdout
    header = run(installed / "python", "-c",
                 "from gs_cgen.abi import HEADER_PATH; print(HEADER_PATH)", cwd=tmp_path)
    assert "site-packages/gs_cgen/bpf_headers/gs_abi.h" in header.stdout


def test_the_installed_version_report_names_every_dependency(installed, tmp_path):
    report = run(installed / "gs-cgen", "--version", cwd=tmp_path).stdout
    assert report.startswith("gs-cgen 0.1.0\n")
    for name in ("pyelftools", "pycparser", "click", "lark", "rich", "capstone"):
        assert f"  {name} " in report and f"  {name} not installed" not in report


MAN_PAGE = "gs_cgen-0.1.0.data/data/share/man/man1/gs-cgen.1"


def test_the_wheel_carries_the_man_page_as_data(wheel):
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(MAN_PAGE) == (REPO / "man" / "gs-cgen.1").read_bytes()


def _man_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    return dict(env, LANG="C.UTF-8", MANWIDTH="100", **extra)


def test_man_finds_and_renders_the_installed_page(installed, tmp_path):
    """man-db adds ../share/man of each PATH directory to its search path,
    so with the venv's bin/ on PATH (an activated venv) and MANPATH unset,
    `man gs-cgen` is the installed page."""
    require(None if shutil.which("man") else "man-db is not installed (scripts/setup.sh installs it)")
    page = installed.parent / "share" / "man" / "man1" / "gs-cgen.1"
    assert page.is_file()
    rendered = run("man", "--warnings", "-l", page, env=_man_env(), cwd=tmp_path)
    assert rendered.stderr == ""
    assert rendered.stdout.lstrip().startswith("GS-CGEN(1)")
    assert "gs-cgen trace [OPTIONS] [COMMAND]..." in rendered.stdout
    path = f"{installed}:/usr/bin:/bin"
    found = run("man", "-w", "gs-cgen", env=_man_env(PATH=path), cwd=tmp_path)
    assert found.stdout.strip() == str(page)
    shown = run("man", "gs-cgen", env=_man_env(PATH=path, MANPAGER="cat"), cwd=tmp_path)
    assert "--backtrace-depth INTEGER RANGE" in shown.stdout
