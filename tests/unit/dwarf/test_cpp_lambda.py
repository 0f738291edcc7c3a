"""A lambda's operator() is a function with debug info (gdb's view): g++
nests its DW_TAG_subprogram in the closure type, inside the function that
defines the lambda, not among the CU's children where the function index
used to look (`no function with debug info covers address`). At a line of
the lambda's body gs-cgen sees the frame gdb stops in: the same function
and the same variables (the closure pointer, the parameter, and g++'s
proxies for the captures)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from tests.gdb_oracle import frame_names, gdb_frames
from tests.prerequisites import require

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "cpp_lambda.cpp"
LINE = next(n for n, text in enumerate(FIXTURE.read_text().splitlines(), 1)
            if "// in the lambda" in text)
SPEC = f"cpp_lambda.cpp:{LINE}"


@pytest.fixture(scope="module", params=["O0", "O2"])
def binary(request, tmp_path_factory) -> str:
    if shutil.which("g++") is None:
        require("g++ is not installed")
    path = str(tmp_path_factory.mktemp("cpp_lambda") / f"cpp_lambda_{request.param}")
    subprocess.run(["g++", "-g", f"-{request.param}", "-fno-inline", "-o", path, str(FIXTURE)],
                   check=True)
    return path


def test_the_lambda_body_has_gdbs_frame_and_variables(binary):
    stops = [s for s in gdb_frames(binary, [SPEC]) if s["function"] is not None]
    assert stops, "gdb never stopped in the lambda"
    module = open_module(binary)
    for stop in stops:
        assert "operator()" in stop["function"]
        names = [v.name for v in module.variables_at(stop["address"])]
        assert sorted(names) == sorted(frame_names(stop)), stop
        assert {"__closure", "amount"} <= set(names)
