"""C++ names as text: what a user writes after `trace` or in an expression
(`ns::add`, `Shape::area(int) const`, `biggest<int>`) and what the
demangler prints for a symbol (`int geo::biggest<int>(int, int)`,
`geo::Shape::area(int) const [clone .isra.0]`), parsed into the same
shape, and gdb's rule for when one names the other.

Pure string work, shared by script/ (syntax checks) and dwarf/ (lookups).
gdb's `break NAME` matches "wild" (gdb/symtab.h symbol_name_match_type
WILD): NAME's `::` components must be the trailing components of the
function's qualified name, so `break add` stops in `geo::add` and
`other::add`, `break detail::scale` in `geo::detail::scale`, but
`break geo::scale` nowhere. A component written without template
arguments matches every instantiation (`biggest` is `biggest<int>` and
`biggest<double>`); a parameter list, when given, selects one overload.
"""
from __future__ import annotations

import re

from gs_cgen.lazydataclass import dataclass

_ANONYMOUS = "(anonymous namespace)"
_CLONE_SUFFIX = re.compile(r"( \[clone [^\]]*\])+$")
# Operator function names, longest spelling first (Itanium ABI 5.1.5.3).
_OPERATOR = re.compile(
    r"\boperator\s*(\(\)|\[\]|new\s*\[\]|delete\s*\[\]|new\b|delete\b|->\*|->|<=>|<<=|>>=|<<|>>|"
    r"&&|\|\||\+\+|--|[-+*/%^&|~!=<>]=|[-+*/%^&|~!=<>,]|\"\"\s*\w+)")
_IDENTIFIER_CHAR = re.compile(r"\w")
# Demangler texts that name no function or object a user writes.
_SPECIAL_PREFIXES = ("vtable for ", "VTT for ", "typeinfo for ", "typeinfo name for ",
                     "construction vtable for ", "guard variable for ", "TLS init function for ",
                     "TLS wrapper function for ", "non-virtual thunk to ", "virtual thunk to ",
                     "covariant return thunk to ", "reference temporary ", "transaction clone for ")


@dataclass(frozen=True)
class CppName:
    """A qualified name split into its `::` components (template
    arguments stay on their component: `biggest<int>`), with the
    parameter list and the cv/ref qualifiers after it when written.
    `params` None: no parameter list (a variable, or a pattern that
    leaves the overload open); "" is `()`."""

    components: tuple[str, ...]
    params: str | None = None
    qualifiers: str = ""

    @property
    def leaf(self) -> str:
        return self.components[-1]

    @property
    def qualified(self) -> str:
        """`geo::Shape::area`: the name without parameters."""
        return "::".join(self.components)

    def display(self) -> str:
        """As gdb lists a breakpoint location: `geo::Shape::area(int) const`."""
        text = self.qualified
        if self.params is not None:
            text += f"({self.params})"
        return text + (f" {self.qualifiers}" if self.qualifiers else "")

    def identifier(self) -> str | None:
        """The source identifier of the last component (`biggest` of
        `biggest<int>`, `Shape` of `~Shape`), None for an operator: what
        the mangled symbol spells as <length><identifier>."""
        leaf = _strip_template(self.leaf).lstrip("~")
        return leaf if leaf.isidentifier() and not leaf.startswith("operator") else None


def parse_cpp_name(text: str) -> CppName | None:
    """A user's or the demangler's C++ name; None when `text` is not one
    (unbalanced brackets, a special symbol such as `vtable for X`)."""
    text = _CLONE_SUFFIX.sub("", text.strip())
    if not text or text.startswith(_SPECIAL_PREFIXES):
        return None
    text, operators = _hide_operators(text.replace(_ANONYMOUS, "\x00"))
    split = _split_parameters(text)
    if split is None:
        return None
    head, params, qualifiers = split
    components = _split_scopes(_drop_return_type(head))
    if not all(components):
        return None
    restored = tuple(_restore(c, operators).replace("\x00", _ANONYMOUS) for c in components)
    if not all(restored):
        return None
    return CppName(restored, None if params is None else normalize(_restore(params, operators)),
                   normalize(qualifiers))


# Rust paths add `{closure#0}` / `{impl#1}` (DWARF's disambiguated
# names) and `<Type as Trait>` (the demangler's qualified self type).
_COMPONENT = re.compile(r"~?[A-Za-z_]\w*(<.*>)?|\{[a-z_]+#\d+\}(<.*>)?|<.+>")


def is_function_pattern(text: str) -> bool:
    """Whether a user's `trace` name is a well-formed C++ function name:
    each component an identifier (a destructor's `~`, template arguments
    allowed), `(anonymous namespace)` or an operator."""
    name = parse_cpp_name(text)
    return name is not None and all(
        c == _ANONYMOUS or c.startswith("operator") or _COMPONENT.fullmatch(c)
        for c in name.components)


def matches(pattern: CppName, name: CppName) -> bool:
    """gdb's wild match of `break PATTERN` against a function (or of a
    name in an expression against a global): see the module docstring."""
    wanted, have = pattern.components, name.components
    if len(wanted) > len(have):
        return False
    for mine, theirs in zip(wanted, have[len(have) - len(wanted):]):
        if not _component_matches(mine, theirs):
            return False
    if pattern.params is None:
        return True
    if name.params is None or _no_void(pattern.params) != _no_void(name.params):
        return False
    return not pattern.qualifiers or pattern.qualifiers == name.qualifiers


def looks_like_cpp(text: str) -> bool:
    """Whether a trace pattern or name can only be C++ (`::`, a template,
    a parameter list, a destructor, an operator, a quoted name)."""
    return any(mark in text for mark in ("::", "<", "(", "~")) or text.startswith("operator")


def normalize(text: str) -> str:
    """Whitespace as the demangler writes it: one space between words,
    none around punctuation except after a comma (`int, int`,
    `char const*`, `std::vector<int, std::allocator<int> >` keeps the
    space that separates `> >`)."""
    out: list[str] = []
    for token in re.findall(r"\w+|\S", text):
        if out and _IDENTIFIER_CHAR.match(token[0]) and _IDENTIFIER_CHAR.match(out[-1][-1]):
            out.append(" ")
        elif out and out[-1] == ",":
            out.append(" ")
        elif out and token == ">" and out[-1] == ">":
            out.append(" ")
        out.append(token)
    return "".join(out)


def _component_matches(mine: str, theirs: str) -> bool:
    mine, theirs = normalize(mine), normalize(theirs)
    return mine == theirs or ("<" not in mine and _strip_template(theirs) == mine)


def _strip_template(component: str) -> str:
    """`biggest` of `biggest<int>`; an operator's own `<` stays."""
    if component.startswith("operator") or not component.endswith(">"):
        return component
    depth = 0
    for i in range(len(component) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(component[i], 0)
        if depth == 0:
            return component[:i].rstrip()
    return component


def _no_void(params: str) -> str:
    return "" if params == "void" else params


def _hide_operators(text: str) -> tuple[str, list[str]]:
    """Operator names replaced by \x01N placeholders, so that `operator<`
    and `operator()` do not count as brackets."""
    found: list[str] = []

    def hide(match: re.Match) -> str:
        symbol = re.sub(r"\s+", " ", match.group(1))
        found.append("operator" + (" " if symbol[0].isalpha() else "") + symbol)
        return f"\x01{len(found) - 1}\x02"
    # `operator< <char>`: the space only keeps `<<` apart; it is no return-type space.
    return re.sub("\x02\\s+<", "\x02<", _OPERATOR.sub(hide, text)), found


def _restore(text: str, operators: list[str]) -> str:
    def restore(match: re.Match) -> str:
        operator = operators[int(match.group(1))]
        # `operator< <char>` keeps the space that tells it from `operator<<`.
        apart = operator.endswith("<") and text.startswith("<", match.end())
        return operator + (" " if apart else "")
    return re.sub(r"\x01(\d+)\x02", restore, text)


def _split_parameters(text: str):
    """(head, params or None, qualifiers): the parameter list is the last
    top-level parenthesized group, followed only by qualifiers."""
    depth, open_at, close_at = 0, None, None
    for i, char in enumerate(text):
        if char in "(<[":
            if char == "(" and depth == 0:
                open_at = i
            depth += 1
        elif char in ")>]":
            depth -= 1
            if depth < 0:
                return None
            if char == ")" and depth == 0:
                close_at = i
    if depth != 0:
        return None
    if open_at is None:
        return text, None, ""
    if close_at is None or close_at < open_at:
        return None
    qualifiers = text[close_at + 1:].strip()
    if not re.fullmatch(r"((const|volatile|&&|&)\s*)*", qualifiers):
        return None
    return text[:open_at].strip(), text[open_at + 1:close_at], qualifiers


def _split_scopes(head: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(head):
        char = head[i]
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif head.startswith("::", i) and depth == 0:
            parts.append(head[start:i].strip())
            start = i + 2
            i += 1
        i += 1
    parts.append(head[start:].strip())
    return parts


def _drop_return_type(head: str) -> str:
    """The demangler writes a template function's return type first
    (`std::string geo::name<int>`): keep what follows the last top-level
    space, unless that space is a conversion operator's (`operator int`)."""
    if re.search(r"\boperator ", head):
        return head
    depth, cut = 0, -1
    for i, char in enumerate(head):
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == " " and depth == 0:
            cut = i
    return head[cut + 1:] if cut >= 0 else head
