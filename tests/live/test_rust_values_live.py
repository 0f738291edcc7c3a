"""Rust std values against rust-gdb (gdb with rustc's pretty printers) at
the same functions, value by value, at -C opt-level=0 and 2
(tests/fixtures/rust/values.rs). rust-gdb spells values its own way
(`core::option::Option<u32>::Some(7)`, `Vec(size=2) = {1, 2}`); `_as_debug`
turns its text into `{:?}`'s, which gs-cgen prints, and nothing else."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests import rust_toolchain
from tests.live.conftest import gs_cgen

# (function, expression): values that do not change between calls.
_VALUES = {
    "enums": ["a", "none", "nz", "*ok", "*err", "*s1", "*s2", "*s3"],
    "strings": ["s", "*owned", "*os", "*path"],
    "sequences": ["*v", "sl", "*arr", "*dq", "*words"],
    "maps": ["*m", "*hs", "*big", "*b", "*bs", "*bigb"],  # *big: 50 entries; *bigb: 100, 2 levels
    "cells": ["*rcv", "*arc", "*t", "*pt"],       # rust-gdb shows a Box as its pointer
}

_HASHED = {"*hs", "*big"}


def _rust_gdb(binary: str) -> dict[tuple[str, str], str]:
    """{(function, expression): rust-gdb's `output EXPR`} at the first
    stop in each function."""
    script = ["set pagination off", "set print elements 1000", "set confirm off"]
    for function, exprs in _VALUES.items():
        prints = [line for e in exprs
                  for line in (f'printf "@@ {function} {e}\\n"', f"output {e}", 'printf "\\n"')]
        script += [f"tbreak values::{function}", "commands", "silent", *prints, "continue",
                   "end"]
    # called after the others in each round of main's loop
    script += ["break values::orders::Ledger::total", "commands", "kill", "quit", "end"]
    path = binary + ".gdb"
    with open(path, "w") as f:
        f.write("\n".join(script + ["run"]) + "\n")
    out = subprocess.run([rust_toolchain.tool("rust-gdb"), "-q", "-batch", "-x", path, binary],
                         capture_output=True, text=True, timeout=30, env=rust_toolchain.tool_env(),
                         stdin=subprocess.DEVNULL)
    found: dict[tuple[str, str], str] = {}
    lines = out.stdout.splitlines()
    for i, line in enumerate(lines):
        match = re.fullmatch(r"@@ (\S+) (.+)", line)
        if match and i + 1 < len(lines) and (match[1], match[2]) not in found:
            found[(match[1], match[2])] = lines[i + 1]
    return found


def _as_debug(text: str) -> str:
    """rust-gdb's spelling of a value -> Rust's `{:?}`."""
    text = re.sub(r"(?:\b(?:Vec|VecDeque)|&\[\w+\])\(size=\d+\) = \{(.*?)\}", r"[\1]", text)
    text = re.sub(r"\b(?:HashSet|BTreeSet)\(size=\d+\) = \{(.*?)\}", r"{\1}", text)
    if re.match(r"(HashMap|BTreeMap)\(size=\d+\) = \{", text):
        body = text.split(" = {", 1)[1][:-1]
        text = "{" + re.sub(r"\[(.*?)\] = ", r"\1: ", body) + "}"
    text = re.sub(r"^std::path::PathBuf \{inner: (.*)\}$", r"\1", text)   # Debug: the path
    text = re.sub(r"\bRc\(strong=\d+, weak=\d+\) = \{value = (.*), strong = \d+, weak = \d+\}",
                  r"\1", text)
    text = re.sub(r"\bArc\(strong=\d+, weak=\d+\) = \{value = (.*), strong = \d+, weak = \d+\}",
                  r"\1", text)
    # paths before a type or variant: core::option::Option<u32>::Some -> Some
    text = re.sub(r"(?:[\w]+::)+(?:\w+(?:<[^(){}]*?>)?::)?(\w+)(?=[({ ,)\]]|$)", r"\1", text)
    text = re.sub(r"(\w)\{([^{}]*)\}", r"\1 { \2 }", text)      # `Circle{r: 1.5}`
    text = re.sub(r"(\w) \(", r"\1(", text)                   # `Point (2, 3)`
    return text.replace("{  }", "{}")


@pytest.mark.parametrize("opt_level", ["0", "2"])
def test_rust_values_are_rust_gdbs(opt_level, tmp_path_factory):
    binary = rust_toolchain.build("values.rs", tmp_path_factory.mktemp("rust-live"), opt_level)
    expected = _rust_gdb(binary)
    assert expected, "rust-gdb printed nothing"
    script = " ".join(f"trace values::{function} {{ " +
                      " ".join(f"print {e};" for e in exprs) + " }"
                      for function, exprs in _VALUES.items())
    proc = subprocess.Popen([binary], stdout=subprocess.DEVNULL)
    try:
        result = gs_cgen("trace", "-p", str(proc.pid), "-s", script,
                         "--max-events", str(len(_VALUES)), timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert result.returncode == 0, result.stderr
    ours = dict(line.split(" = ", 1) for line in result.stdout.splitlines() if " = " in line)
    compared = 0
    for (function, expr), gdb_text in expected.items():
        unread = re.search(r"\(size=\d+\)$", gdb_text)      # a length without its data
        if not gdb_text or unread or "<optimized out>" in gdb_text or expr not in ours:
            continue                   # gdb cannot read it here either (its error: stderr)
        want, got = _as_debug(gdb_text), ours[expr]
        if expr in _HASHED:     # each process seeds its own hasher: the same entries, any order
            want, got = (sorted(text.strip("{}").split(", ")) for text in (want, got))
        assert got == want, (function, expr, gdb_text, result.stdout)
        compared += 1
    assert compared >= (15 if opt_level == "0" else 4), (expected, result.stdout)


@pytest.mark.parametrize("opt_level", ["0", "2"])
def test_rust_values_are_what_debug_formatting_prints(opt_level, tmp_path_factory):
    """Values rust-gdb has no printer for (Ref, RefMut, `()`, Vec<()>, a
    string's escapes, an OsString that is not UTF-8, tuple fields, a
    static by its bare name) and hash tables in Rust's own iteration
    order, against the `{:?}` text the fixture writes of the same values
    (the process writes it at its first round, the probe reads a later
    one: the values are the same, the maps the same objects)."""
    out = tmp_path_factory.mktemp("rust-debug")
    binary = rust_toolchain.build("values.rs", out, opt_level)
    forms_path = out / f"forms-{opt_level}.txt"
    probe = "trace values::debug_forms { " + \
        " ".join(f"print {e};" for e in _DEBUG_FORMS) + " }"
    env = {**os.environ, "GS_DEBUG_FORMS": str(forms_path)}
    proc = subprocess.Popen([binary], stdout=subprocess.DEVNULL, env=env)
    try:
        result = gs_cgen("trace", "-p", str(proc.pid), "-s", probe, "--max-events",
                         str(len(_DEBUG_FORMS)), timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert result.returncode == 0, result.stderr
    rust_says = dict(line.split("\t", 1) for line in forms_path.read_text().splitlines())
    ours = dict(line.split(" = ", 1) for line in result.stdout.splitlines() if " = " in line)
    # rust-gdb reads neither `unit` nor `esc`'s pointer at -O2 (optimized out)
    compared = [e for e in _DEBUG_FORMS if "<OPTIMIZED_OUT>" not in ours.get(e, "")]
    for expr in compared:
        assert ours[expr] == rust_says[expr], (expr, result.stdout)
    assert len(compared) >= (len(_DEBUG_FORMS) if opt_level == "0" else 3), result.stdout


_DEBUG_FORMS = ["unit", "*zv", "rcs", "*r", "*rm", "pair.0", "pair.1", "*pair", "esc", "*os",
                "*ur", "GREETING", "*hm", "*hs"]
