"""The TYPE of cast(expr, "TYPE") parsed as a C type name (C11 6.7.7)."""
from __future__ import annotations

import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script.ast import ArrayOf, PointerTo
from gs_cgen.script.parser import parse
from gs_cgen.script.typename import parse_type_name
from gs_cgen.source import SourceSpan

SPAN = SourceSpan(1, 1, 1, 2)
P = PointerTo()


def shape(text: str):
    t = parse_type_name(text, SPAN)
    return t.keyword, t.name, t.is_base, t.qualifiers, t.derivations


@pytest.mark.parametrize("text, expected", [
    ("u8 *", (None, "u8", False, (), (P,))),
    ("uint8_t", (None, "uint8_t", False, (), ())),
    ("struct CastNode *", ("struct", "CastNode", False, (), (P,))),
    ("CastNode", (None, "CastNode", False, (), ())),
    ("enum CastKind", ("enum", "CastKind", False, (), ())),
    ("union  U", ("union", "U", False, (), ())),
    ("const volatile CastNode *", (None, "CastNode", False, ("const", "volatile"), (P,))),
    ("CastNode const volatile*", (None, "CastNode", False, ("const", "volatile"), (P,))),
    ("char * const * volatile",
     (None, "char", True, (), (PointerTo(("const",)), PointerTo(("volatile",))))),
    ("int ** restrict", (None, "int", True, (), (P, PointerTo(("restrict",))))),
    ("uint32_t[4]", (None, "uint32_t", False, (), (ArrayOf(4),))),
    ("int[2][3]", (None, "int", True, (), (ArrayOf(3), ArrayOf(2)))),     # 2 arrays of 3
    ("int *[4]", (None, "int", True, (), (P, ArrayOf(4)))),               # array of pointers
    ("int (*)[4]", (None, "int", True, (), (ArrayOf(4), P))),             # pointer to array
    ("char[]", (None, "char", True, (), (ArrayOf(None),))),
    ("int[0x10]", (None, "int", True, (), (ArrayOf(16),))),
])
def test_type_names(text, expected):
    assert shape(text) == expected


@pytest.mark.parametrize("spellings, canonical", [
    (["unsigned", "unsigned int", "int unsigned"], "unsigned int"),
    (["signed", "int", "signed int"], "int"),
    (["long", "long int", "signed long", "long signed int"], "long"),
    (["unsigned long", "long unsigned", "long unsigned int"], "unsigned long"),
    (["long long", "long long int"], "long long"),
    (["unsigned long long", "long long unsigned int"], "unsigned long long"),
    (["short", "short int"], "short"), (["unsigned short", "short unsigned int"], "unsigned short"),
    (["char"], "char"), (["signed char", "char signed"], "signed char"),
    (["unsigned char"], "unsigned char"), (["_Bool", "bool"], "_Bool"),
    (["long double"], "long double"), (["void"], "void"),
    (["unsigned __int128"], "unsigned __int128"),
])
def test_base_spellings_are_normalized(spellings, canonical):
    for text in spellings:
        keyword, name, is_base, _, _ = shape(text)
        assert (keyword, name, is_base) == (None, canonical, True), text


@pytest.mark.parametrize("text, why", [
    ("struct", "'struct' needs a name"),
    ("long char", "'long char' is not a C type"),
    ("long long long", "'long long long' is not a C type"),
    ("unsigned foo", "unexpected 'foo'"),
    ("int x", "unexpected 'x'"),
    ("struct a b", "unexpected 'b'"),
    ("const", "no type"),
    ("int (*)(int)", "function types are not supported in casts"),
    ("int[", "an array length must be an integer"),
    ("int[4", "missing ']'"),
    ("int (*[4]", "missing ')'"),
])
def test_bad_type_names(text, why):
    with pytest.raises(ScriptError) as info:
        parse_type_name(text, SPAN)
    assert info.value.message == f"bad type name '{text}' in cast: {why}"


def test_cast_errors_point_at_the_type_string():
    with pytest.raises(ScriptError) as info:
        parse('trace f { print cast(p, "long char"); }')
    assert (info.value.span.line, info.value.span.column) == (1, 25)


def test_arrow_is_member_access():
    (block,) = parse('trace f { print a->b.c; print cast(p, "u8 *")->q; print x - 1 > 2; }').traces
    first, second, third = block.body
    assert (first.expr.field, first.expr.base.field, first.expr.base.base.ident) == ("c", "b", "a")
    assert second.expr.field == "q" and second.expr.base.type.name == "u8"
    assert third.expr.op.value == ">"
