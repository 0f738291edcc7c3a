"""The parser's LALR tables are cached by grammar digest: the cache is
used when it matches, and a changed grammar, a damaged or foreign file, or
GS_CGEN_NO_CACHE=1 never yields a parser for anything but the grammar
given."""
from __future__ import annotations

import os

import lark.lark
import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import parser as parser_mod
from gs_cgen.script.parser import cached_lark, parse, parser_cache_path

SAMPLE = 'trace add { let n = a + 1; if n > 2 { print "a={} n={:x}", a, n; } else { bt; } }'
# A grammar of its own, for cache files of another grammar.
TINY = 'start: WORD+\n%import common.WORD\n%ignore " "\n'
TINY_DIGITS = 'start: NUMBER+\n%import common.NUMBER\n%ignore " "\n'


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    return tmp_path


@pytest.fixture
def grammar_builds(monkeypatch):
    """How often lark compiled a grammar (a cache hit compiles none)."""
    calls = []
    real = lark.lark.load_grammar

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(lark.lark, "load_grammar", counting)
    return calls


OPTIONS = {"parser": "lalr"}


def _build(grammar: str, path: str | None):
    return cached_lark(grammar, OPTIONS, path)


def _path(grammar: str) -> str | None:
    return parser_cache_path(grammar, OPTIONS)


def test_tables_are_built_once_then_loaded(cache_home, grammar_builds):
    path = _path(TINY)
    assert path.startswith(str(cache_home / "gs-cgen" / "parser"))
    first = _build(TINY, path)
    assert os.path.isfile(path) and len(grammar_builds) == 1
    second = _build(TINY, path)
    assert len(grammar_builds) == 1                      # loaded, not rebuilt
    assert second.parse("a b c") == first.parse("a b c")
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".tmp-")]


def test_another_grammar_or_other_options_have_another_cache_file(cache_home):
    assert _path(TINY) != _path(TINY_DIGITS)
    assert _path(TINY) == _path(TINY)
    assert parser_cache_path(TINY, {"parser": "lalr", "propagate_positions": True}) != _path(TINY)


def test_a_cache_file_of_another_grammar_is_not_used(cache_home, grammar_builds):
    # The file at the new grammar's path holds the old grammar's tables
    # (a digest collision, or a file copied there): lark's own digest
    # check rejects it and the parser is the new grammar's.
    old_path = _path(TINY)
    _build(TINY, old_path)
    new_path = _path(TINY_DIGITS)
    os.replace(old_path, new_path)
    parser = _build(TINY_DIGITS, new_path)
    assert len(grammar_builds) == 2
    assert [str(t) for t in parser.parse("1 2").children] == ["1", "2"]
    with pytest.raises(lark.exceptions.UnexpectedInput):
        parser.parse("abc")


@pytest.mark.parametrize("damage", [b"", b"garbage\n", None])
def test_a_damaged_cache_file_is_rebuilt(cache_home, grammar_builds, damage):
    path = _path(TINY)
    _build(TINY, path)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2] if damage is None else damage)
    parser = _build(TINY, path)
    assert len(grammar_builds) == 2
    assert [str(t) for t in parser.parse("x y").children] == ["x", "y"]


def test_a_file_others_can_write_is_not_loaded(cache_home, grammar_builds):
    path = _path(TINY)
    _build(TINY, path)
    os.chmod(path, 0o666)
    parser = _build(TINY, path)
    assert len(grammar_builds) == 2
    assert parser.parse("w").children[0] == "w"


def test_no_cache_when_switched_off(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    assert _path(TINY) is None
    assert _build(TINY, None).parse("v").children[0] == "v"
    assert not os.listdir(tmp_path)


def test_an_unwritable_cache_directory_still_parses(cache_home, grammar_builds):
    (cache_home / "gs-cgen").write_text("not a directory")
    path = _path(TINY)
    assert _build(TINY, path).parse("u").children[0] == "u"


def test_the_script_parser_from_its_cache_parses_as_a_fresh_one(cache_home, monkeypatch):
    """The real grammar: cached tables give the same AST and the same
    syntax errors (built from the parser state) as freshly built ones."""
    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    parser_mod._lark.cache_clear()
    fresh_ast = parse(SAMPLE)
    with pytest.raises(ScriptError) as fresh_error:
        parse("trace add { print a b; }")
    monkeypatch.delenv("GS_CGEN_NO_CACHE")
    for _ in range(2):                       # the first call writes, the second loads
        parser_mod._lark.cache_clear()
        assert parse(SAMPLE) == fresh_ast
        with pytest.raises(ScriptError) as cached_error:
            parse("trace add { print a b; }")
        assert cached_error.value.render("s", "") == fresh_error.value.render("s", "")
    assert len(os.listdir(cache_home / "gs-cgen" / "parser")) == 1
    parser_mod._lark.cache_clear()


def test_lexer_callbacks_are_part_of_the_cache_name(cache_home):
    # The pickle refers to the callbacks by name: others name another file.
    def one(token):
        return token

    def other(token):
        return token

    with_one = parser_cache_path(TINY, {**OPTIONS, "lexer_callbacks": {"WORD": one}})
    assert with_one != parser_cache_path(TINY, {**OPTIONS, "lexer_callbacks": {"WORD": other}})
    assert with_one == parser_cache_path(TINY, {**OPTIONS, "lexer_callbacks": {"WORD": one}})
