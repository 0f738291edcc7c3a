"""`bt` in a Rust program against rust-gdb's at the same breakpoint: the
frames (Rust paths, generic instances, closures, inlined std frames),
their files and lines, innermost to `main` (tests/fixtures/rust/values.rs)."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests import rust_toolchain
from tests.live.conftest import gs_cgen

_PROBE = "values::orders::Ledger::total"


def _balanced_prefix(text: str) -> str:
    """`NAME (args)` -> NAME: strip the last parenthesised group (a Rust
    name may hold parentheses and spaces of its own: `(dyn Fn<()> + Sync)`)."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i].rstrip()
    return text


def _gdb_frames(binary: str) -> list[tuple[str, str | None]]:
    out = subprocess.run([rust_toolchain.tool("rust-gdb"), "-q", "-batch", "-ex",
                          f"break {_PROBE}", "-ex", "run", "-ex", "bt", "-ex", "kill", binary],
                         capture_output=True, text=True, timeout=60, env=rust_toolchain.tool_env(),
                         stdin=subprocess.DEVNULL)
    frames = []
    for line in out.stdout.splitlines():
        match = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(.*?)(?: at (\S+):(\d+))?$", line)
        if match:
            name, file, number = match.groups()
            where = f"{os.path.basename(file)}:{number}" if file else None
            frames.append((_balanced_prefix(name), where))
    return frames


def _our_frames(text: str) -> list[tuple[str, str | None]]:
    frames = []
    for line in text.splitlines():
        match = re.match(r"\s+#\d+ (.*?)(?: at (\S+):(\d+))? \[\S+\]( \(inlined\))?$", line)
        if match:
            name, file, number, _ = match.groups()
            frames.append((name, f"{os.path.basename(file)}:{number}" if file else None))
    return frames


@pytest.mark.parametrize("opt_level", ["0", "2"])
def test_rust_backtrace_is_rust_gdbs(opt_level, tmp_path_factory):
    binary = rust_toolchain.build("values.rs", tmp_path_factory.mktemp("rust-bt"), opt_level)
    expected = _gdb_frames(binary)
    assert expected and expected[0][0] == _PROBE, expected
    proc = subprocess.Popen([binary], stdout=subprocess.DEVNULL)
    try:
        result = gs_cgen("trace", "-p", str(proc.pid), "-s", f"trace {_PROBE} {{ bt; }}",
                         "--max-events", "1", timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert result.returncode == 0, result.stderr
    assert re.search(r"backtrace: complete, \d+ frames", result.stdout), result.stdout
    ours = _our_frames(result.stdout)
    assert ours[-1][0] == "main", result.stdout          # the walk ends at main, as in C
    assert ours == expected[:len(ours)], (ours, expected)
