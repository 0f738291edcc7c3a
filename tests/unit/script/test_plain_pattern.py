"""`gs-cgen info` classifies the plain spellings of a pattern without the
parser (script/plain_pattern.py): each answer must be the block the
parser makes of `trace TEXT { }`, and whatever the parser rejects or reads
another way must be left to it (None)."""
from __future__ import annotations

import random

import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import ast
from gs_cgen.script.parser import parse
from gs_cgen.script.plain_pattern import plain_trace_block

PLAIN = ["main", "_start", "PyDict_SetItem", "memcpy@@GLIBC_2.14", "memcpy@GLIBC_2.2.5",
         "trace", "if", "print", "a.c:1", "Objects/dictobject.c:1875", "./x-y.c:007",
         "/abs/path/f.c:42", "0x401234", "0XAB", "libc.so.6:0x1f00", "a-b/c.so:0xdead"]
LEFT_TO_THE_PARSER = ["geo::add", "'ns::add(int, int)'", "max<int>", "~Shape", "operator_x",
                      "a.c:0", "a.c", "0x12:5", "0xlib:0x12", "0x1G", "a:b:3", "f@@", "a b",
                      "a.c:12x", "", "foo:return", "x{", "1abc"]


def _parsed(text: str):
    try:
        (block,) = parse(f"trace {text} {{ }}").traces
    except (ScriptError, ValueError):
        return None
    return block


@pytest.mark.parametrize("text", PLAIN)
def test_plain_spellings_equal_the_parsed_block(text):
    block = plain_trace_block(text)
    assert block is not None
    assert block == _parsed(text)


@pytest.mark.parametrize("text", LEFT_TO_THE_PARSER)
def test_other_spellings_are_left_to_the_parser(text):
    assert plain_trace_block(text) is None


def test_random_spellings_never_disagree_with_the_parser():
    rng = random.Random(10)
    plain = 0
    for alphabet in ("ab_Z09x.:/@-", "ab_Z09x.:/@-~<(' "):
        for _ in range(2000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9)))
            block = plain_trace_block(text)
            if block is None:
                continue
            plain += 1
            assert block == _parsed(text), text
            assert isinstance(block.pattern, (ast.FunctionPattern, ast.LinePattern,
                                              ast.AddressPattern))
    assert plain > 300          # the plain spellings were exercised
