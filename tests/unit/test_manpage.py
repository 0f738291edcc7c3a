"""man/gs-cgen.1 is what scripts/manpage.py writes from the click commands
today, names every option and argument, and renders cleanly with man(1)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from tests.prerequisites import require

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "man" / "gs-cgen.1"


def _generator():
    spec = importlib.util.spec_from_file_location("manpage", REPO / "scripts" / "manpage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_up_to_date():
    assert PAGE.read_text() == _generator().render(), \
        "man/gs-cgen.1 is stale: run .venv/bin/python scripts/manpage.py"


def _rendered() -> str:
    require(None if shutil.which("man") else "man-db is not installed")
    env = dict(os.environ, MANWIDTH="200", LANG="C.UTF-8", MAN_KEEP_FORMATTING="")
    result = subprocess.run(["man", "--warnings", "-l", str(PAGE)], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", f"troff warnings: {result.stderr}"
    return result.stdout


def test_every_option_and_argument_of_the_cli_is_on_the_page():
    from gs_cgen.cli import cli
    text = _rendered()
    for name, command in cli.commands.items():
        assert f"gs-cgen {name} [OPTIONS]" in text
        for param in command.params:
            if param.param_type_name == "option":
                for flag in param.opts:
                    assert flag in text, f"{name} {flag}"
            else:
                assert (name, param.name) in _generator().ARGUMENTS
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS",
                    "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"):
        assert f"\n{section}\n" in text
    assert "--max-events INTEGER RANGE\n" in text
    assert "[default: 16384; x>=512]" in text


def test_roff_escapes_what_troff_would_read_as_requests():
    roff = _generator().roff
    assert roff("a-b \\n") == "a\\-b \\en"
    assert roff(".TH x\n'quote") == "\\&.TH x\n\\&'quote"
