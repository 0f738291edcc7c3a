"""Every console block of README.md and docs/*.md that is not marked
`skip` runs here, command by command, against the fixtures the docs
name, and prints what the docs say it prints (convention:
tests/docs_examples.py, docs/tests.md "Doc tests"). A command a block
needs that is not installed (gcc, g++, rustc) skips it, and fails it
under CI=true."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.docs_examples import (REPO, Block, Command, all_blocks, argv, build_commands, commands,
                                 output_matches)
from tests.prerequisites import require

EXECUTED = [b for b in all_blocks() if b.kind == "console" and b.skip_reason is None]
TIMEOUT = 60


def _environment() -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    cargo_bin = Path.home() / ".cargo" / "bin"      # where rustup puts rustc
    env = dict(os.environ, PATH=f"{venv_bin}:{os.environ.get('PATH', '')}:{cargo_bin}")
    for name in ("GS_CGEN_NO_CACHE", "GS_CGEN_PROGRAM_CACHE", "DEBUGINFOD_URLS"):
        env.pop(name, None)
    return env


def _shell_text(command: Command, last_pid: int | None) -> str:
    text = command.text.strip()
    if text.startswith("sudo ") and os.geteuid() == 0:
        text = text[len("sudo "):]
    if "$!" in text:
        assert last_pid is not None, f"line {command.line}: `$!` with no command in the background"
        text = text.replace("$!", str(last_pid))
    return text


def _tools_of(block: Block) -> set[str]:
    tools = set()
    for command in commands(block):
        words = argv(command)
        if words and words[0] in ("gcc", "g++", "rustc", "python3.11"):
            tools.add(words[0])
    return tools


def _build_what_it_uses(block: Block, env) -> None:
    """A block that runs a binary another block builds (`gcc ... -o PATH`)
    builds it first, so that each block runs alone, in any order; a
    recipe's `-lNAME` is built before it when the docs build libNAME.so."""
    recipes = build_commands()
    by_library = {f"-l{Path(p).stem[3:]}": p for p in recipes if Path(p).name.startswith("lib")}
    words = [argv(c) for c in commands(block)]
    own = {w[w.index("-o") + 1] for w in words if "-o" in w}
    wanted = [p for p in recipes if p in {word for w in words for word in w} and p not in own]
    done: set[str] = set()

    def build(path: str) -> None:
        if path in done:
            return
        done.add(path)
        for word in recipes[path].split():
            if word in by_library:
                build(by_library[word])
        subprocess.run(["bash", "-c", recipes[path]], cwd=REPO, env=env, check=True, timeout=120)
    for path in wanted:
        build(path)


def _start_background(text: str, env) -> subprocess.Popen:
    text = text.rstrip().rstrip("&")
    simple = not any(mark in text for mark in ("|", ";", "&&", "("))
    # exec: `$!` is then the program's PID, as in the reader's shell
    proc = subprocess.Popen(["bash", "-c", "exec " + text if simple else text], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.5)             # let it reach its loop, as a reader's shell would
    assert proc.poll() is None, f"{text!r} exited with status {proc.returncode}"
    return proc


def _actual(result: subprocess.CompletedProcess, mode: str) -> list[str]:
    out, err = result.stdout.splitlines(), result.stderr.splitlines()
    return {"stdout": out, "stderr": err, "both": out + err}[mode]


def _check(block: Block, command: Command, result: subprocess.CompletedProcess) -> None:
    mode = block.directives.get("output", "stdout")
    status = int(block.directives.get("status", "0")) if command.expected else 0
    shown = f"$ {command.text}\n--- stdout:\n{result.stdout}--- stderr:\n{result.stderr}"
    assert result.returncode == status, \
        f"{block.path.name}:{command.line}: exit status {result.returncode}, not {status}\n{shown}"
    if command.expected:
        assert output_matches(command.expected, _actual(result, mode)), \
            f"{block.path.name}:{command.line}: the output is not what the docs show\n" \
            f"--- docs:\n" + "\n".join(command.expected) + f"\n{shown}"


@pytest.mark.parametrize("block", EXECUTED, ids=[b.where for b in EXECUTED])
def test_doc_console_block(block: Block):
    for tool in sorted(_tools_of(block)):
        require(None if shutil.which(tool) or Path.home().joinpath(".cargo/bin", tool).exists()
                else f"{tool} is not installed (needed by {block.where})")
    env = _environment()
    (REPO / "build" / "docs").mkdir(parents=True, exist_ok=True)
    (REPO / "examples" / "build").mkdir(exist_ok=True)
    _build_what_it_uses(block, env)
    background: list[subprocess.Popen] = []
    try:
        for command in commands(block):
            text = _shell_text(command, background[-1].pid if background else None)
            if command.background:
                background.append(_start_background(text, env))
                continue
            result = subprocess.run(["bash", "-c", text], cwd=REPO, env=env, capture_output=True,
                                    text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
            _check(block, command, result)
    finally:
        for proc in background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_docs_run_commands_here():
    """The parametrized test above is not empty: the docs hold executed
    blocks, and each shows at least one gs-cgen command."""
    assert len(EXECUTED) >= 10
    for block in EXECUTED:
        assert any("gs-cgen" in argv(c) for c in commands(block)), block.where
