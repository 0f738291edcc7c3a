"""tests/fixtures/casts built into a directory: the executable casts_app
linking libcasta.so and libcastb.so (rpath to the directory), -g -O0, for
the DWARF, plan and live tests of casts and builtin lengths."""
from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "fixtures" / "casts"


def build_casts(directory: Path, debug: str = "-g") -> dict[str, Path]:
    """{"app", "liba", "libb"} paths, built once per directory."""
    out = {"liba": directory / "libcasta.so", "libb": directory / "libcastb.so",
           "app": directory / "casts_app"}
    if not out["app"].exists():
        for lib, source in (("liba", "liba.c"), ("libb", "libb.c")):
            subprocess.run(["gcc", debug, "-O0", "-shared", "-fPIC", "-o", str(out[lib]),
                            str(SOURCE / source)], check=True)
        subprocess.run(["gcc", debug, "-O0", "-fPIE", "-pie", "-o", str(out["app"]),
                        str(SOURCE / "app.c"), f"-L{directory}", "-lcasta", "-lcastb",
                        f"-Wl,-rpath,{directory}"], check=True)
    return out
