"""`bt`'s mode words, each combination (`bt raw noinline`, `bt full
noinline`, `backtrace inline`, ...), equal what gdb shows at the same stop
(tests/gdb_stack.py): the same frames, inlined ones kept or left out, each
frame's pc for `raw`, each frame's arguments for `full`.

gs-cgen and gdb each run tests/fixtures/unwind's chain_main to its first
stop in chain_leaf (the 6-deep chain with two inlined levels in libchain.so
and one in main), both with address randomization off (gdb's default;
`setarch -R` for gs-cgen), so a frame's pc is the same number in both."""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.conftest import REPO, require
from tests.live.test_unwind_live import FRAME, chain  # noqa: F401 - fixture

GDB_STACK = Path(__file__).resolve().parents[1] / "gdb_stack.py"
INLINE_WORDS = ("", "inline", "noinline")
COMBINATIONS = [" ".join(w for w in (*extra, inline) if w)
                for r in range(3) for extra in itertools.combinations(("raw", "full"), r)
                for inline in INLINE_WORDS]
OPTIMIZED_OUT = "<OPTIMIZED_OUT>"


def gdb_stack(argv: list[str], breakpoint: str) -> list[dict]:
    env = dict(os.environ, GS_GDB_BREAK=breakpoint)
    out = subprocess.run(["gdb", "-nx", "-batch", "-x", str(GDB_STACK), "--args", *argv],
                         capture_output=True, text=True, timeout=180, env=env).stdout
    (line,) = [line for line in out.splitlines() if line.startswith("GS-STACK ")]
    return json.loads(line.removeprefix("GS-STACK "))


def shows(words: str) -> tuple[bool, bool, bool]:
    """(raw, inlined, full) of `bt WORDS` (docs/reference.md "Backtraces")."""
    raw = "raw" in words.split()
    inlined = "inline" in words.split() or (not raw and "noinline" not in words.split())
    return raw, inlined, "full" in words.split()


def backtrace_blocks(stdout: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """(header, [(frame line, its parameter line or None)]) of each `bt`."""
    blocks = []
    for line in stdout.splitlines():
        if line.startswith("backtrace: "):
            blocks.append((line, []))
        elif blocks and line.startswith("  #"):
            blocks[-1][1].append((line, None))
        elif blocks and line.startswith("      ") and blocks[-1][1]:
            frame, parameters = blocks[-1][1][-1]
            assert parameters is None, line
            blocks[-1][1][-1] = (frame, line.strip())
    return blocks


def assert_frame_is_gdbs(line: str, frame: dict, raw: bool):
    inlined = " (inlined)" if frame["inlined"] else ""
    if raw:
        assert line.split(" ", 3)[3] == f"0x{frame['pc']:x}{inlined}", (line, frame)
        return
    match = FRAME.fullmatch(line)
    assert match, line
    _, _, function, file, number, _, _, marker = match.groups()
    assert (function, os.path.basename(file), int(number), marker or "") == \
        (frame["function"], frame["file"], frame["line"], inlined), (line, frame)


def assert_parameters_are_gdbs(text: str | None, frame: dict) -> int:
    """Names as gdb lists them; each value recovered is gdb's (pointers
    into the stack differ: the two processes' environments do)."""
    expected = frame["arguments"]
    if not expected:
        assert text is None
        return 0
    ours = re.findall(r"(\w+) = (<OPTIMIZED_OUT>|[^,]+)", text)
    assert [name for name, _ in ours] == [name for name, _ in expected], (text, frame)
    recovered = 0
    for (name, value), (_, gdb_value) in zip(ours, expected):
        if re.fullmatch(r"-?\d+", value):
            assert value == gdb_value, (name, text, frame)
            recovered += 1
        else:
            assert value == OPTIMIZED_OUT or value.startswith("0x"), (name, text)
    return recovered


def test_every_mode_combination_is_gdbs(chain):  # noqa: F811 - the fixture
    for tool in ("gdb", "setarch"):
        require(None if shutil.which(tool) else f"{tool} is not installed")
    statements = " ".join(f"bt {words};" for words in COMBINATIONS) + " backtrace inline;"
    script = f"trace chain_leaf {{ if path == 1 {{ {statements} }} }}"
    result = subprocess.run(["setarch", "-R", sys.executable, "-m", "gs_cgen.cli", "trace",
                             "-s", script, "--output", "plain", "--", str(chain), "once"],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    stack = gdb_stack([str(chain), "once"], "chain_leaf")
    assert sum(frame["inlined"] for frame in stack) == 3     # the case that tells modes apart
    found = backtrace_blocks(result.stdout)
    assert len(found) == len(COMBINATIONS) + 1
    recovered = 0
    for words, (header, pairs) in zip([*COMBINATIONS, "inline"], found):
        raw, inlined, full = shows(words)
        expected = [f for f in stack if inlined or not f["inlined"]]
        assert header == f"backtrace: complete, {len(expected)} frames", (words, header)
        assert len(pairs) == len(expected), (words, pairs)
        for index, ((line, parameters), frame) in enumerate(zip(pairs, expected)):
            assert line.startswith(f"  #{index} "), (words, line)
            assert_frame_is_gdbs(line, frame, raw)
            if full:
                recovered += assert_parameters_are_gdbs(parameters, frame)
            else:
                assert parameters is None, (words, line, parameters)
    # chain_leaf's path and depth, and run_paths's i in the 3 `full`s that
    # show inlined frames; the first two in the 3 that do not
    assert recovered == 3 * 3 + 3 * 2, recovered


@pytest.mark.parametrize("words", ["inline noinline", "raw raw"])
def test_contradicting_or_repeated_words_fail_before_attaching(words):
    result = subprocess.run([sys.executable, "-m", "gs_cgen.cli", "trace", "-s",
                             f"trace chain_leaf {{ bt {words}; }}", "--", "/bin/true"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 1
    assert "in this bt" in result.stderr and "Traceback" not in result.stderr, result.stderr
