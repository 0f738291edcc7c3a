"""The examples of README.md and docs/*.md, as data, for the doc tests
(tests/unit/docs/test_doc_examples.py offline, tests/live/
test_doc_commands_live.py with root). The convention is docs/tests.md's
"Doc tests":

- every fenced block names its kind: ```console (commands and what they
  print), ```gs (a trace script), or anything else (```text, ```c,
  ```yaml, ```ini, ...) for text no test runs;
- in a console block a command starts with `$ `; it goes on over lines that
  end in `\\` or while a quote is open; the lines up to the next `$ ` are
  its expected output. In expected output `...` stands for any text within
  a line, and a line that is only `...` for any number of lines;
- an HTML comment right before a block carries directives:
  `<!-- doc-test: skip REASON -->` (not executed, with the reason),
  `output=stdout|stderr|both` (what the expected lines are compared with;
  default stdout; both = stdout's lines, then stderr's), `status=N` (the
  exit status of the commands that show output; default 0), for ```gs
  blocks `file=PATH` (the block is that file's text) and `target=PATH`
  (`--emit-c` compiles the script against that binary, built by the docs'
  own `gcc`/`g++` command that writes it).

Commands run from the top of the checkout with the venv's bin/ first on
PATH; a leading `sudo ` is dropped when running as root; a command ending
in `&` runs in the background (its PID is `$!` for the commands after it)
and is killed when the block ends.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(.*?)\s*-->", re.S)
FENCE = re.compile(r"^(```+)\s*([\w+-]*)\s*(.*)$")
RUN_KINDS = {"console"}
SCRIPT_KINDS = {"gs"}
TEXT_KINDS = {"text", "c", "cpp", "rust", "yaml", "ini", "json", "python", "sh", "make", "toml"}


@dataclass
class Block:
    path: Path
    line: int                       # of the opening fence, 1-based
    kind: str
    text: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        return self.directives.get("skip")


@dataclass
class Command:
    text: str                       # as a shell reads it (continuations joined)
    expected: list[str]             # the output lines shown after it
    line: int

    @property
    def background(self) -> bool:
        return self.text.rstrip().endswith("&") and not self.text.rstrip().endswith("&&")


def parse_directives(text: str) -> dict[str, str]:
    text = " ".join(text.split())
    if text.startswith("skip"):
        return {"skip": text[4:].strip(" :") or ""}
    found = {}
    for word in text.split():
        key, _, value = word.partition("=")
        found[key] = value
    return found


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, kind = match.group(1), match.group(2)
        start = i
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        found.append(Block(path, start + 1, kind, "\n".join(body), _directives_before(lines, start)))
    return found


def _directives_before(lines: list[str], start: int) -> dict[str, str]:
    j = start - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0 or not lines[j].rstrip().endswith("-->"):
        return {}
    text = lines[j]
    while "<!--" not in text and j > 0:
        j -= 1
        text = lines[j] + "\n" + text
    match = DIRECTIVE.search(text)
    return parse_directives(match.group(1)) if match else {}


def all_blocks() -> list[Block]:
    return [b for path in DOCUMENTS for b in blocks(path)]


def _complete(text: str) -> bool:
    if text.endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:          # an open quote
        return False
    return True


def commands(block: Block) -> list[Command]:
    found: list[Command] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if found:
                found[-1].expected.append(line)
            elif line.strip():
                raise ValueError(f"{block.where}: output before the first command: {line!r}")
            i += 1
            continue
        text, first = line[2:], i
        while not _complete(text) and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip() if text.endswith("\\") \
                else text + "\n" + lines[i]
        found.append(Command(text, [], block.line + 1 + first))
        i += 1
    for command in found:
        while command.expected and not command.expected[-1].strip():
            command.expected.pop()
    return found


def argv(command: Command) -> list[str]:
    """The words of a `gs-cgen ...` command (without `sudo`, env settings
    and redirections), for checking it against the click CLI."""
    words = shlex.split(command.text, comments=True)
    while words and (words[0] == "sudo" or re.match(r"^[A-Z_]+=", words[0])):
        words.pop(0)
    return words


def line_matches(expected: str, actual: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """`...` within a line: any text; a line of only `...`: any lines."""
    memo: dict[tuple[int, int], bool] = {}

    def at(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(expected):
            result = j == len(actual)
        elif expected[i].strip() == "...":
            result = at(i + 1, j) or (j < len(actual) and at(i, j + 1))
        else:
            result = j < len(actual) and line_matches(expected[i].rstrip(), actual[j].rstrip()) \
                and at(i + 1, j + 1)
        memo[i, j] = result
        return result
    return at(0, 0)


def build_commands() -> dict[str, str]:
    """`gcc`/`g++`/`rustc` commands of the docs' console blocks, by the
    path they write (`-o PATH`)."""
    found = {}
    for block in all_blocks():
        if block.kind != "console":
            continue
        for command in commands(block):
            words = argv(command)
            if words and words[0] in ("gcc", "g++", "rustc") and "-o" in words:
                found[words[words.index("-o") + 1]] = command.text
    return found
