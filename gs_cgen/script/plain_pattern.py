"""The common spellings of a trace pattern, classified without the parser.

`gs-cgen info` takes one pattern from the command line; loading lark and
its tables for it costs ~40 ms, more than the look-up on a small binary.
The plain spellings (a C identifier with an optional symbol version,
PATH:LINE, 0xADDR, MODULE:0xADDR) are classified here exactly as
parser.trace_pattern classifies them inside `trace PATTERN { }`; anything
else (C++ names, quoted names, anything malformed) returns None and goes
through the parser, errors and all. tests/unit/script/test_plain_pattern.py
holds the two to the same answers.
"""
from __future__ import annotations

import re

from gs_cgen.script import ast
from gs_cgen.source import SourceSpan

# What parser.py's _FUNCTION accepts, minus what cppnames.looks_like_cpp
# would send to the C++ path (a name starting with "operator").
_FUNCTION = re.compile(r"(?!operator)[A-Za-z_][A-Za-z0-9_]*(@@?[A-Za-z_][A-Za-z0-9_.]*)?")
# A path of the PATTERN token's plain characters (grammar.lark), one colon;
# trace_pattern rejects a pattern that starts with 0x and is no address.
_PATH = r"[A-Za-z0-9_./\-]+"
_LINE = re.compile(rf"(?!0[xX])({_PATH}):([0-9]+)")
_ADDRESS = re.compile(rf"(?:(?!0[xX])({_PATH}):)?0[xX]([0-9a-fA-F]+)")


def plain_pattern(text: str) -> ast.TracePattern | None:
    """The pattern `trace TEXT { }` would have, or None when TEXT is not
    one of the plain spellings (the caller then parses it)."""
    if _FUNCTION.fullmatch(text):
        return ast.FunctionPattern(text)
    if (line := _LINE.fullmatch(text)) and int(line.group(2)) > 0:
        return ast.LinePattern(line.group(1), int(line.group(2)))
    if address := _ADDRESS.fullmatch(text):
        return ast.AddressPattern(int(address.group(2), 16), module=address.group(1))
    return None


def plain_trace_block(text: str) -> ast.TraceBlock | None:
    """The empty block `trace TEXT { }` parses to, spans included, or None."""
    pattern = plain_pattern(text)
    if pattern is None:
        return None
    end = 7 + len(text)                     # columns are 1-based: "trace " is 6 wide
    return ast.TraceBlock(pattern, text, (), SourceSpan(1, 1, 1, end + 4),
                          SourceSpan(1, 7, 1, end))
