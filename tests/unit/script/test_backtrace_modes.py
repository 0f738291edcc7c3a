"""`bt` mode words combine (GhostScope's backtrace flags): every
combination parses to its modes, and what each shows; a word given twice
or contradicted is an error at that word."""
import itertools

import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import ast, parse

M = ast.BacktraceMode


def backtrace(words: str) -> ast.Backtrace:
    (trace,) = parse(f"trace f {{ bt {words}; }}").traces
    (statement,) = trace.body
    return statement


def rendered(text):
    with pytest.raises(ScriptError) as info:
        parse(text)
    return info.value.render("t.gs", text)


INLINE_WORDS = ((), (M.INLINE,), (M.NOINLINE,))
COMBINATIONS = [(*extra, *inline) for r in range(3)
                for extra in itertools.combinations((M.RAW, M.FULL), r)
                for inline in INLINE_WORDS]


@pytest.mark.parametrize("modes", COMBINATIONS, ids=lambda m: " ".join(w.value for w in m) or "bt")
def test_every_combination_in_any_order(modes):
    for order in itertools.permutations(modes):
        assert backtrace(" ".join(m.value for m in order)).modes == frozenset(modes)


@pytest.mark.parametrize(("words", "raw", "inlined", "full"), [
    ("", False, True, False),
    ("inline", False, True, False),
    ("noinline", False, False, False),
    ("raw", True, False, False),            # one address per machine frame
    ("raw inline", True, True, False),
    ("raw noinline", True, False, False),
    ("full", False, True, True),
    ("full noinline", False, False, True),
    ("full inline", False, True, True),
    ("raw full", True, False, True),
    ("raw full inline", True, True, True),
    ("noinline full raw", True, False, True),
])
def test_what_each_combination_shows(words, raw, inlined, full):
    statement = backtrace(words)
    assert (statement.raw, statement.inlined, statement.full) == (raw, inlined, full)


def test_backtrace_is_bt():
    text = "trace f { backtrace inline; backtrace raw noinline; }"
    (trace,) = parse(text).traces
    assert [s.modes for s in trace.body] == [frozenset({M.INLINE}),
                                             frozenset({M.RAW, M.NOINLINE})]


def test_a_contradicting_word():
    assert rendered("trace f { bt inline noinline; }") == (
        "t.gs:1:21: error: 'noinline' contradicts 'inline' in this bt\n"
        "  trace f { bt inline noinline; }\n"
        "                      ^^^^^^^^\n"
        "hint: write one of 'inline' (inlined calls as their own frames) or "
        "'noinline' (machine frames only)")


def test_a_repeated_word():
    assert rendered("trace f { bt raw full raw; }") == (
        "t.gs:1:23: error: 'raw' is given twice in this bt\n"
        "  trace f { bt raw full raw; }\n"
        "                        ^^^")


def test_an_unknown_word_lists_the_mode_words():
    assert rendered("trace f { bt depth; }") == (
        "t.gs:1:14: error: expected ';' or a bt mode (raw, full, inline, noinline), "
        "found 'depth'\n"
        "  trace f { bt depth; }\n"
        "               ^^^^^")
