"""`gs-cgen info` and `--emit-c` import only what they use: no BCC, no
capstone, no pycparser (when the ABI cache answers), no prometheus_client
(--metrics only), no plan IR, no lark
(a plain pattern needs no parser, script/plain_pattern.py) and no hashlib
(it loads OpenSSL; gs_cgen/digest.py) for info.
Each import costs start-up time on every run (issue #10)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.prerequisites import require

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "inlined.c"
_WATCHED = ("bcc", "capstone", "pycparser", "gs_cgen.plan.ir", "ctypes", "lark", "hashlib",
            "prometheus_client")

_RUN = """
import contextlib, io, json, sys
from gs_cgen.cli import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        cli.main(args=sys.argv[1:], prog_name="gs-cgen", standalone_mode=False)
    except SystemExit:
        pass
print(json.dumps({"out": out.getvalue(), "modules": [m for m in %r if m in sys.modules]}))
""" % (_WATCHED,)


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> str:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("imports") / "inlined"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(out), str(FIXTURE)], check=True)
    return str(out)


def _imported(*args: str) -> tuple[str, list[str]]:
    env = {**os.environ}
    # Twice: the first run may fill the caches (and import what writing takes).
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True,
                              text=True, check=True, env=env)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["out"], result["modules"]


def test_info_imports_no_bcc_capstone_pycparser_ir_lark_or_hashlib(binary):
    out, modules = _imported("info", "-t", binary, "function", "scale")
    assert "scale at" in out
    assert modules == []


def test_emit_c_imports_no_bcc_or_capstone(binary):
    out, modules = _imported("trace", "-t", binary, "-s", "trace scale { print k; }", "--emit-c")
    assert "SEC(" in out or "int " in out
    assert not {"bcc", "capstone", "pycparser", "prometheus_client"} & set(modules)
