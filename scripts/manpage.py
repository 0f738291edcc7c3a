"""Write man/gs-cgen.1 from the click commands (gs_cgen/cli.py).

    .venv/bin/python scripts/manpage.py            # rewrite man/gs-cgen.1
    .venv/bin/python scripts/manpage.py --check    # exit 1 if it is stale

The synopsis, every command's help and every option (its flags, metavar,
help, default and range, as `--help` prints them) come from click's own
introspection (`collect_usage_pieces`, `get_help_record`), so the page
cannot drift from the CLI: tests/unit/test_manpage.py fails when the
committed page differs from what this writes. What click has no place for
(the arguments' meaning, exit status, environment, files, examples) is
the fixed text below. The page is committed, not built at install time,
so building a wheel needs nothing but setuptools; pyproject.toml installs
it as data under share/man/man1.

Why not click-man (PyPI, 0.6.0): it writes one page per subcommand
(gs-cgen-trace.1, ...) with options only; `man gs-cgen` should be one page
with the commands, their arguments and the sections above.
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "man" / "gs-cgen.1"

# click documents options, not arguments: (command, argument) -> meaning.
ARGUMENTS = {
    ("trace", "command"):
        "After \\fB\\-\\-\\fR: a command to start and trace. It is held before its first "
        "instruction until the probes are attached; gs\\-cgen exits when it exits and "
        "reports its exit status. With \\fB\\-t\\fR \\fIPATH\\fR, the probes go on PATH "
        "(a library the command may load later).",
    ("info", "kind"):
        "\\fBfunction\\fR \\fINAME\\fR, \\fBline\\fR \\fIFILE\\fR:\\fILINE\\fR (full path, "
        "relative path or unique suffix) or \\fBaddress\\fR [\\fIMODULE\\fR:]\\fI0xADDR\\fR "
        "(a module virtual address).",
    ("info", "what"): "The function name, FILE:LINE or address.",
}

DESCRIPTION = """\
gs\\-cgen is a source\\-aware tracer for live Linux x86_64 processes. Name a
function or a source line, write a few lines of trace script, and gs\\-cgen
reads the target's DWARF, works out where each variable lives at that exact
instruction, generates restricted C, has BCC compile it to eBPF, attaches it
as a uprobe and prints real, typed values \\(em without stopping the process.
.PP
\\fBtrace\\fR attaches a script; \\fBinfo\\fR lists probe sites and the
variables visible there, with their types and where they live. A script is
one or more blocks \\fBtrace\\fR \\fIPATTERN\\fR \\fB{\\fR ... \\fB}\\fR, where
PATTERN is a function name, \\fIFILE\\fR:\\fILINE\\fR, \\fI0xADDR\\fR,
\\fIMODULE\\fR:\\fI0xADDR\\fR or \\fIFUNC\\fR:\\fBreturn\\fR, holding \\fBprint\\fR,
\\fBlet\\fR, \\fBif\\fR/\\fBelse\\fR, \\fBbt\\fR and the aggregations
\\fBcount\\fR, \\fBsum\\fR and \\fBhist\\fR. The language and the rendering of
values are described in docs/reference.md of the source tree."""

SECTIONS = {
    "EXIT STATUS": """\
.TP
.B 0
a normal end: \\-\\-max\\-events, \\-\\-duration, the target's exit, SIGINT or SIGTERM.
.TP
.B 1
a user error (bad script, unreadable script file, unknown function, line or
variable, no debug info, no such PID, missing privilege), with a message on
stderr that names the script line and column where there is one.
.TP
.B 2
bad usage (an unknown option, no target).
.PP
On every exit path no uprobe of gs\\-cgen's is left behind.""",
    "ENVIRONMENT": """\
.TP
.B DEBUGINFOD_URLS
servers asked by build\\-id for the debug file of a module with no DWARF on
disk (elfutils' client: \\fBDEBUGINFOD_CACHE_PATH\\fR and
\\fBDEBUGINFOD_TIMEOUT\\fR apply).
.TP
.B GS_CGEN_DEBUG_ROOTS
more directories to look for separate debug files in.
.TP
.B GS_CGEN_NO_CACHE=1
use no on\\-disk cache (DWARF indexes, compiled programs).
.TP
.B GS_CGEN_PROGRAM_CACHE=off
compile the BPF program again instead of loading it from the cache.
.TP
.B GS_CGEN_SLEEPABLE=off
no sleepable uprobes: pages the target has not touched read as errors.
.TP
.B GS_CGEN_UPROBE_MULTI=off
attach perf\\-event uprobes instead of BPF uprobe\\-multi links.
.TP
.B GS_CGEN_DEBUG=1
let an internal error end with its Python traceback.""",
    "FILES": """\
.TP
.I ${XDG_CACHE_HOME:\\-~/.cache}/gs\\-cgen/
line tables, function lists and other indexes of each module, by build\\-id.
.TP
.I ${XDG_CACHE_HOME:\\-~/.cache}/gs\\-cgen/programs/
compiled BPF programs (the 256 most recently used); safe to delete.""",
    "EXAMPLES": """\
Print two parameters and a global at every call of \\fBadd\\fR in process 1234:
.PP
.RS
.nf
gs\\-cgen trace \\-p 1234 \\-s 'trace add { print "a={} b={} n={}", a, b, request_count; }'
.fi
.RE
.PP
Start a command and print each return value of \\fBfact\\fR with its argument:
.PP
.RS
.nf
gs\\-cgen trace \\-s 'trace fact:return { print "{} {}", $entry(n), $retval; }' \\-\\- ./retprobe
.fi
.RE
.PP
Where the variables of \\fBcompute\\fR live at each of its lines:
.PP
.RS
.nf
gs\\-cgen info \\-t ./variables function compute \\-\\-lines
.fi
.RE""",
    "SEE ALSO": """\
.BR bpftrace (8),
.BR perf\\-probe (1),
.BR gdb (1).
README.md and docs/ in the gs\\-cgen source tree: the user guide
(docs/guide.md) and the language reference (docs/reference.md).""",
}


def roff(text: str) -> str:
    """Plain text as troff: backslashes and dashes escaped, no line may
    start with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line
                     for line in text.splitlines())


def _paragraphs(help_text: str) -> str:
    import inspect  # noqa: PLC0415
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n.PP\n".join(roff(" ".join(p.split())) for p in paragraphs)


def _command_section(name: str, command, parent) -> list[str]:
    import click  # noqa: PLC0415
    ctx = click.Context(command, info_name=name, parent=parent, **command.context_settings)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f'.SS "{roff(ctx.command_path)} {roff(usage)}"', _paragraphs(command.help or "")]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    for argument in arguments:
        metavar = argument.make_metavar(ctx) if _takes_ctx(argument) else argument.make_metavar()
        lines += [".TP", f".I {roff(metavar)}", ARGUMENTS[(name, argument.name)]]
    lines += _options(ctx, command)
    return lines


def _takes_ctx(param) -> bool:
    import inspect  # noqa: PLC0415
    return "ctx" in inspect.signature(param.make_metavar).parameters


def _options(ctx, command) -> list[str]:
    lines = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if param.param_type_name == "option" else None
        if record is None:
            continue
        flags, help_text = record
        lines += [".TP", f"\\fB{roff(flags)}\\fR", roff(help_text)]
    return lines


def render() -> str:
    sys.path.insert(0, str(REPO))
    import click  # noqa: PLC0415
    from gs_cgen.cli import cli  # noqa: PLC0415
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    top = click.Context(cli, info_name="gs-cgen", **cli.context_settings)
    lines = [
        '.\\" Generated by scripts/manpage.py from gs_cgen/cli.py. DO NOT EDIT.',
        f'.TH GS\\-CGEN 1 "" "gs\\-cgen {version}" "User Commands"',
        ".SH NAME",
        "gs\\-cgen \\- trace live processes at functions and source lines, with typed "
        "values read from DWARF through eBPF uprobes",
        ".SH SYNOPSIS",
    ]
    for name, command in cli.commands.items():
        ctx = click.Context(command, info_name=name, parent=top, **command.context_settings)
        pieces = " ".join(command.collect_usage_pieces(ctx))
        lines += [f".B gs\\-cgen {roff(name)}", roff(pieces), ".br"]
    lines += [".B gs\\-cgen \\-\\-version", ".SH DESCRIPTION", DESCRIPTION,
              ".SH COMMANDS"]
    for name, command in cli.commands.items():
        lines += _command_section(name, command, top)
    lines += [".SS \"gs\\-cgen [OPTIONS]\""] + _options(top, cli)
    for title, body in SECTIONS.items():
        lines += [f".SH {title}", body]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(REPO)} is stale: run scripts/manpage.py", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
