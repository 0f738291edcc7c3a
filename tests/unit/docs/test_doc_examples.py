"""The examples of README.md and docs/*.md, checked without root
(convention: docs/tests.md "Doc tests", tests/docs_examples.py):

- every fenced block says what it is, and a block of `$ ` commands is a
  console block, executed by tests/live/test_doc_commands_live.py or
  marked `skip` with a reason;
- every `gs-cgen` command shown (executed or not, in blocks and in inline
  code) is a valid command line for today's CLI;
- every ```gs script, and every script a command shows (`-s TEXT`,
  `-f FILE`), parses and passes the static checks; a gs block that names
  its file is that file; one that names a target compiles against it
  (`--emit-c`, which needs no root);
- the links between the pages resolve.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from gs_cgen.cli import cli
from tests.docs_examples import (DOCUMENTS, REPO, RUN_KINDS, SCRIPT_KINDS, TEXT_KINDS, Block,
                                 Command, all_blocks, argv, build_commands, commands,
                                 output_matches, parse_directives)
from tests.prerequisites import require

BLOCKS = all_blocks()
SCRIPTS = [b for b in BLOCKS if b.kind in SCRIPT_KINDS]
CONSOLES = [b for b in BLOCKS if b.kind in RUN_KINDS]
INLINE = re.compile(r"`(gs-cgen (?:trace|info)\b[^`]*)`")


def _ids(blocks: list[Block]) -> list[str]:
    return [b.where for b in blocks]


def test_every_block_says_what_it_is():
    for block in BLOCKS:
        assert block.kind in RUN_KINDS | SCRIPT_KINDS | TEXT_KINDS, \
            f"{block.where}: fenced block of kind {block.kind!r}: say console, gs or text"
        if block.kind not in RUN_KINDS:
            assert not any(line.startswith("$ ") for line in block.text.splitlines()), \
                f"{block.where}: commands ($ ...) belong in a console block"


def test_every_console_block_is_run_or_says_why_not():
    for block in CONSOLES:
        assert commands(block), f"{block.where}: a console block without a `$ ` command"
        if block.skip_reason is not None:
            assert len(block.skip_reason.split()) >= 3, f"{block.where}: skip needs a reason"


def test_directives_are_known():
    known = {"skip", "output", "status", "file", "target"}
    for block in BLOCKS:
        assert set(block.directives) <= known, f"{block.where}: {block.directives}"
        assert block.directives.get("output", "stdout") in ("stdout", "stderr", "both")
        if block.kind in SCRIPT_KINDS:
            assert set(block.directives) <= {"file", "target"}, block.where


def _cli_check(words: list[str], where: str) -> None:
    """Parse a gs-cgen command line as click would, without running it."""
    assert words[0] == "gs-cgen", where
    command = cli.commands.get(words[1])
    assert command is not None, f"{where}: no command {words[1]!r}"
    # a placeholder (PID, HOSTPID, PATH) stands for a value of its option
    args = ["1" if re.fullmatch(r"[A-Z][A-Z0-9_]+", w) else w for w in words[2:]]
    # the group's context as parent, as `gs-cgen` makes it: click caches each
    # command's help option from the first context it sees (-h, --help)
    top = click.Context(cli, info_name="gs-cgen", **cli.context_settings)
    try:
        command.make_context(words[1], args, parent=top)
    except click.exceptions.Exit:
        pass
    except click.UsageError as exc:
        pytest.fail(f"{where}: `{shlex.join(words)}` is not a valid command: {exc}")


def _gs_cgen_words(command: Command) -> list[str] | None:
    text = re.sub(r'"?\$\([^)]*\)"?', "1", command.text)     # $(pgrep ...)
    words = argv(Command(text, [], command.line))
    for i, word in enumerate(words):        # `... | gs-cgen`, `podman run ... gs-cgen ...`
        if word == "gs-cgen" or word.endswith("/gs-cgen"):
            words = ["gs-cgen", *words[i + 1:]]
            for stop in ("|", "&&", ";", ">", "2>&1", "&"):
                if stop in words:
                    words = words[:words.index(stop)]
            return words
    return None


def test_every_gs_cgen_command_shown_is_valid():
    checked = 0
    for block in CONSOLES:
        for command in commands(block):
            words = _gs_cgen_words(command)
            if words and len(words) > 1:
                _cli_check([w.replace("$!", "1") for w in words], f"{block.where} line {command.line}")
                checked += 1
    for path in DOCUMENTS:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        for match in INLINE.finditer(" ".join(text.split())):
            try:
                words = shlex.split(match.group(1).replace("…", "..."))
            except ValueError:
                continue                    # a fragment with an open quote
            if not {"-p", "-t", "--"} & set(words) or {"|", "(-t"} & set(words) \
                    or any("..." in w for w in words):
                continue                    # a name (`gs-cgen info --lines`), a synopsis
            _cli_check(words, f"{path.name}: `{match.group(1)}`")
            checked += 1
    assert checked >= 20


def _command_scripts() -> list[tuple[str, str]]:
    """(where, script text) of each `-s TEXT` / `-f FILE` of the gs-cgen
    commands in console blocks, executed or not."""
    found = []
    for block in CONSOLES:
        for command in commands(block):
            words = _gs_cgen_words(command) or []
            for flag, value in zip(words, words[1:]):
                where = f"{block.where} line {command.line}"
                if flag in ("-s", "--script"):
                    found.append((where, value))
                elif flag in ("-f", "--script-file") and (REPO / value).exists():
                    found.append((where, (REPO / value).read_text()))
    return found


def test_the_scripts_of_the_commands_parse_and_check():
    from gs_cgen.errors import GsError
    from gs_cgen.script import check, parse
    scripts = _command_scripts()
    assert len(scripts) >= 20
    for where, text in scripts:
        try:
            check(parse(text))
        except GsError as exc:
            pytest.fail(f"{where}: {exc.render('<doc>', text)}")


@pytest.mark.parametrize("block", SCRIPTS, ids=_ids(SCRIPTS))
def test_script_parses_and_checks(block: Block):
    from gs_cgen.errors import GsError
    from gs_cgen.script import check, parse
    try:
        check(parse(block.text))
    except GsError as exc:
        pytest.fail(f"{block.where}: {exc.render('<doc>', block.text)}")
    if "file" in block.directives:
        assert (REPO / block.directives["file"]).read_text().rstrip("\n") == block.text, \
            f"{block.where}: not the text of {block.directives['file']}"


TARGETED = [b for b in SCRIPTS if "target" in b.directives]


@pytest.mark.parametrize("block", TARGETED, ids=_ids(TARGETED))
def test_script_compiles_against_its_target(block: Block, tmp_path):
    target = block.directives["target"]
    recipe = build_commands().get(target)
    assert recipe, f"{block.where}: no console block builds {target}"
    compiler = shlex.split(recipe)[0]
    require(None if shutil.which(compiler) else f"{compiler} is not installed")
    (REPO / Path(target).parent).mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", "-c", recipe], cwd=REPO, check=True, timeout=120)
    result = subprocess.run([sys.executable, "-m", "gs_cgen.cli", "trace", "-t", target,
                             "--emit-c", "-s", block.text], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"{block.where}: {result.stderr}"
    assert "int gs_probe_0(struct pt_regs *ctx)" in result.stdout


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def _anchors(path: Path) -> set[str]:
    anchors = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add("#" + re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_links_between_the_pages_resolve():
    for path in DOCUMENTS:
        for match in LINK.finditer(path.read_text()):
            target, anchor = match.group(1), match.group(2)
            if target.startswith("http"):
                continue
            linked = (path.parent / target).resolve()
            assert linked.exists(), f"{path.name}: link to missing {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), f"{path.name}: no {anchor} in {target}"


def test_the_readme_stays_a_front_door():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    assert "make test" in readme and "make demo" in readme
    for path in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{path.name}" in readme, f"README does not link docs/{path.name}"


def test_the_matcher():
    assert output_matches(["a=... b=2"], ["a=17 b=2"])
    assert not output_matches(["a=... b=2"], ["a=17 b=3"])
    assert output_matches(["first", "...", "last"], ["first", "x", "y", "last"])
    assert output_matches(["first", "...", "last"], ["first", "last"])
    assert not output_matches(["first"], ["first", "more"])
    assert not output_matches(["a", "b"], ["a"])
    assert output_matches(["[1, ... <1 more>]"], ["[1, ... <1 more>]"])


def test_the_console_parser():
    block = Block(REPO / "README.md", 1, "console",
                  "$ gcc -o x \\\n    y.c\n$ gs-cgen trace -s 'trace f {\n  print 1; }' -- ./x\n"
                  "1 = 1\n\n$ ./x &\n")
    found = commands(block)
    assert [c.text for c in found] == ["gcc -o x  y.c",
                                       "gs-cgen trace -s 'trace f {\n  print 1; }' -- ./x",
                                       "./x &"]
    assert found[1].expected == ["1 = 1"] and found[2].background
    assert parse_directives("skip needs a podman image") == {"skip": "needs a podman image"}
    assert parse_directives("output=both status=1") == {"output": "both", "status": "1"}


def test_counts(capsys):
    executed = [b for b in CONSOLES if b.skip_reason is None]
    skipped = [b for b in CONSOLES if b.skip_reason is not None]
    with capsys.disabled():
        print(f"\ndoc examples: {len(executed)} console blocks executed "
              f"({sum(len(commands(b)) for b in executed)} commands), {len(skipped)} not executed, "
              f"{len(SCRIPTS)} gs blocks checked ({len(TARGETED)} compiled against their target), "
              f"{len(_command_scripts())} scripts of commands checked")
        for block in skipped:
            print(f"  not executed: {block.where}: {block.skip_reason}")
    assert executed and SCRIPTS
