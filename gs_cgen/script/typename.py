"""The TYPE of `cast(expr, "TYPE")`: a C type name (C11 6.7.7) -> ast.TypeName.

Accepted: base types in any C spelling (`unsigned`, `long int`,
`long unsigned`, `_Bool`/`bool`), typedef names, `struct/union/enum/class X`
(the keyword may be left out), the qualifiers `const`, `volatile`,
`restrict`, `_Atomic` anywhere among the specifiers or after a `*`,
pointers of any depth, arrays `T[N]` / `T[]`, and parenthesized
declarators for pointers to arrays (`int (*)[4]`). Function types are not
(nothing a probe reads has one).

The base spelling is normalized here, where C's rules for it live
(6.7.2p2: the specifier multiset decides, order does not); which DWARF
name a compiler gives it is the DWARF layer's business.
"""
from __future__ import annotations

import re
from collections import Counter

from gs_cgen.errors import ScriptError
from gs_cgen.script import ast
from gs_cgen.script.format import int_value
from gs_cgen.source import SourceSpan

TAG_KEYWORDS = ("struct", "union", "enum", "class")
_QUALIFIERS = {"const": "const", "volatile": "volatile", "restrict": "restrict",
               "__restrict": "restrict", "_Atomic": "atomic"}
_BASE_WORDS = frozenset({"void", "char", "short", "int", "long", "signed", "unsigned",
                         "float", "double", "_Bool", "bool", "_Complex", "__int128",
                         "_Float128", "__float128", "_Float16", "_Float32", "_Float64"})
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(0[xXoObB][0-9A-Fa-f_]+|[0-9][0-9_]*)"
                    r"|(\S))")
# Specifier multisets (6.7.2p2) -> one canonical C spelling.
_CANONICAL = {}
for _spelling, _lists in {
    "void": ["void"], "char": ["char"], "signed char": ["signed char"],
    "unsigned char": ["unsigned char"],
    "short": ["short", "signed short", "short int", "signed short int"],
    "unsigned short": ["unsigned short", "unsigned short int"],
    "int": ["int", "signed", "signed int"], "unsigned int": ["unsigned", "unsigned int"],
    "long": ["long", "signed long", "long int", "signed long int"],
    "unsigned long": ["unsigned long", "unsigned long int"],
    "long long": ["long long", "signed long long", "long long int", "signed long long int"],
    "unsigned long long": ["unsigned long long", "unsigned long long int"],
    "float": ["float"], "double": ["double"], "long double": ["long double"],
    "_Bool": ["_Bool", "bool"], "__int128": ["__int128", "signed __int128"],
    "unsigned __int128": ["unsigned __int128"],
    "_Complex float": ["_Complex float"], "_Complex double": ["_Complex double"],
    "_Complex long double": ["_Complex long double"],
    "_Float128": ["_Float128"], "__float128": ["__float128"], "_Float16": ["_Float16"],
    "_Float32": ["_Float32"], "_Float64": ["_Float64"],
}.items():
    for _words in _lists:
        _CANONICAL[frozenset(Counter(_words.split()).items())] = _spelling


def parse_type_name(text: str, span: SourceSpan) -> ast.TypeName:
    """`text` (a cast's string, escapes decoded) as a TypeName; ScriptError
    at `span` (the string literal) when it is not a C type name."""
    tokens = _tokens(text, span)
    parser = _Parser(tokens, text, span)
    base = parser.specifiers()
    derivations = parser.declarator()
    if parser.peek() is not None:
        parser.fail(f"unexpected '{parser.peek()}'")
    return ast.TypeName(base[0], base[1], base[2], base[3], tuple(derivations), " ".join(text.split()))


def _tokens(text: str, span: SourceSpan) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:          # only trailing blanks are left
            break
        out.append(match.group(0).strip())
        pos = match.end()
    return [t for t in out if t]


class _Parser:
    def __init__(self, tokens: list[str], text: str, span: SourceSpan) -> None:
        self.tokens, self.pos, self.text, self.span = tokens, 0, text, span

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        self.pos += 1
        return token

    def fail(self, why: str):
        raise ScriptError(f"bad type name '{self.text.strip()}' in cast: {why}", self.span,
                          hints=('write a C type name, e.g. "struct node *", "uint8_t", '
                                 '"const char *", "int[4]"',))

    # ------------------------------------------------------- specifiers
    def specifiers(self) -> tuple[str | None, str, bool, tuple[str, ...]]:
        """(tag keyword, name or canonical base spelling, is_base, qualifiers)."""
        qualifiers, words, keyword, name = [], [], None, None
        while (token := self.peek()) is not None:
            if token in _QUALIFIERS:
                qualifiers.append(_QUALIFIERS[self.take()])
            elif token in TAG_KEYWORDS:
                if keyword or name or words:
                    self.fail(f"'{token}' after another type")
                keyword = self.take()
                name = self.take() if _is_identifier(self.peek()) else \
                    self.fail(f"'{keyword}' needs a name")
            elif token in _BASE_WORDS:
                if keyword or name:
                    self.fail(f"'{token}' after another type")
                words.append(self.take())
            elif _is_identifier(token) and not (keyword or name or words):
                name = self.take()
            else:
                break
        if words:
            return None, self._base_spelling(words), True, _unique(qualifiers)
        if name is None:
            self.fail("no type")
        return keyword, name, False, _unique(qualifiers)

    def _base_spelling(self, words: list[str]) -> str:
        spelling = _CANONICAL.get(frozenset(Counter(words).items()))
        if spelling is None:
            self.fail(f"'{' '.join(words)}' is not a C type")
        return spelling

    # ------------------------------------------------------- declarator
    def declarator(self) -> list:
        """An abstract declarator (6.7.7) as the derivations that build the
        type from its base, innermost first: `int *[4]` is pointer, then
        array of 4; `int (*)[4]` array of 4, then pointer."""
        pointers = []
        while self.peek() == "*":
            self.take()
            qualifiers = []
            while self.peek() in _QUALIFIERS:
                qualifiers.append(_QUALIFIERS[self.take()])
            pointers.append(ast.PointerTo(_unique(qualifiers)))
        inner = []
        if self.peek() == "(":
            self.take()
            inner = self.declarator()
            if not inner:
                self.fail("'()' declares a function type, which a cast cannot take")
            if self.take() != ")":
                self.fail("missing ')'")
        arrays = []
        while self.peek() == "[":
            self.take()
            count = None if self.peek() == "]" else self._count()
            if self.take() != "]":
                self.fail("missing ']'")
            arrays.append(ast.ArrayOf(count))
        if self.peek() == "(":
            self.fail("function types are not supported in casts")
        # `T ptrs (inner) [a][b]`: ptrs apply first, then [b], then [a]
        # (the rightmost dimension is innermost), then the parenthesized part.
        return pointers + arrays[::-1] + inner

    def _count(self) -> int:
        token = self.take()
        if token is None or not token[0].isdigit():
            self.fail("an array length must be an integer")
        try:
            return int_value(token)
        except ValueError:
            self.fail(f"bad array length '{token}'")


def _is_identifier(token: str | None) -> bool:
    return token is not None and (token[0].isalpha() or token[0] == "_") and \
        token not in _QUALIFIERS and token not in TAG_KEYWORDS and token not in _BASE_WORDS


def _unique(qualifiers: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(qualifiers))
