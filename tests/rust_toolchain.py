"""rustc and rust-gdb for the Rust tests: rustup puts them in ~/.cargo/bin,
which a CI environment's PATH may leave out."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.prerequisites import require

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rust"
_CARGO_BIN = Path.home() / ".cargo" / "bin"


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(_CARGO_BIN))
    if found is None:
        require(f"{name} is not installed (rustup puts it in {_CARGO_BIN})")
    return found


def tool_env() -> dict[str, str]:
    """The environment with rustc's directory on PATH (rust-gdb runs rustc)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(tool('rustc')).parent}:{env.get('PATH', '')}"
    return env


def build(source: str, out: Path, opt_level: str) -> str:
    """`rustc -g -C opt-level=N` of tests/fixtures/rust/SOURCE into `out`."""
    target = out / f"{Path(source).stem}_O{opt_level}"
    if not target.exists():
        subprocess.run([tool("rustc"), "--edition", "2021", "-g", "-C", f"opt-level={opt_level}",
                        "-o", str(target), str(FIXTURES / source)],
                       check=True, capture_output=True, env=tool_env())
    return str(target)
