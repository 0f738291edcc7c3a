"""gdb's libstdc++ pretty printers' text, read back as values and written
in gs-cgen's forms (CONTRACT.md "Rust and C++ programs"), for the live
tests that hold gs-cgen to gdb.

gdb writes `std::vector of length 3, capacity 3 = {1, 2, 3}`,
`std::map with 2 elements = {["a"] = 1, ["b"] = 2}`,
`std::optional<int> [no contained value]`... `parse` turns that text
into a small tree (what the value is, not how gdb spells it); `plain`
and `as_json` write the tree as gs-cgen's contract says it prints. Only
presentation changes: every element, key, count and address is gdb's.
The differences the contract makes: collections as `[...]` / `{k: v}`,
gdb's element limit (`...`) as `... <N more>` with N from gdb's own
length, std::array as its elements (gdb 13 prints its `_M_elems`), a
struct with its class name (gdb's `print` shows none: `names` maps its
member names to it), a smart pointer with the object it points at (gdb
shows the address: the caller parses `*p` and passes it in)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field


@dataclass
class Scalar:
    text: str


@dataclass
class Text:
    text: str
    cut: bool = False


@dataclass
class Seq:
    items: list
    more: int = 0
    counted: bool = True          # a forward_list keeps no length: its cut is `... <truncated>`


@dataclass
class Mapping:
    pairs: list                   # [(key, value)]; a set's are (key, None)
    is_set: bool
    more: int = 0


@dataclass
class Optional:
    value: object = None


@dataclass
class Variant:
    index: int
    value: object


@dataclass
class Tuple:
    items: list


@dataclass
class Struct:
    fields: list                  # [(name, value)]


@dataclass
class Handle:
    label: str                    # std::unique_ptr, std::shared_ptr, std::weak_ptr
    address: int
    use_count: int | None = None
    pointee: object = None


class GdbFormError(ValueError):
    pass


_SEQUENCE = re.compile(
    r"std::(?:vector(?:<bool>)? of length (\d+), capacity \d+|deque with (\d+) elements?|"
    r"span of length (\d+)|(?:__cxx11::)?list|forward_list)")
_MAPPING = re.compile(r"std::(?:__debug::)?(map|multimap|set|multiset|unordered_map|unordered_set|"
                      r"unordered_multimap|unordered_multiset) with (\d+) elements?")
_REFERENCE = re.compile(r"(?:\([^()]*&\) )?@0x[0-9a-f]+: ")     # `(char &) @0x7ffe...: `
_HANDLE = re.compile(r"(std::(?:unique_ptr|shared_ptr|weak_ptr))<")
_COUNTS = re.compile(r" \((?:use count (\d+), weak count \d+|empty|expired, weak count \d+)\)")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def fail(self, why: str):
        raise GdbFormError(f"{why} at {self.at} of {self.text!r}")

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.at)

    def eat(self, s: str) -> None:
        if not self.peek(s):
            self.fail(f"expected {s!r}")
        self.at += len(s)

    def match(self, pattern: re.Pattern):
        found = pattern.match(self.text, self.at)
        if found:
            self.at = found.end()
        return found

    def angle(self) -> None:
        """Skip a template argument list `<...>` (nested)."""
        depth = 0
        while self.at < len(self.text):
            c = self.text[self.at]
            self.at += 1
            depth += {"<": 1, ">": -1}.get(c, 0)
            if depth == 0:
                return
        self.fail("unbalanced <>")

    def value(self):
        self.match(_REFERENCE)
        if self.peek('"') or self.peek("'"):
            return self.text_value()
        if found := self.match(_SEQUENCE):
            length = next((int(g) for g in found.groups() if g is not None), None)
            items = [v for _, v in self.body()] if self.peek(" = {") else []
            return Seq(items, 0 if length is None else length - len(items),
                       "forward_list" not in found[0])
        if found := self.match(_MAPPING):
            is_set = "set" in found[1]
            pairs = self.body() if self.peek(" = {") else []
            pairs = [(v, None) for _, v in pairs] if is_set else pairs
            return Mapping(pairs, is_set, int(found[2]) - len(pairs))
        if self.peek("std::optional<"):
            self.eat("std::optional")
            self.angle()
            if self.peek(" [no contained value]"):
                self.eat(" [no contained value]")
                return Optional()
            ((_, inner),) = self.body()
            return Optional(inner)
        if self.peek("std::variant<"):
            self.eat("std::variant")
            self.angle()
            index = int(self.match(re.compile(r" \[index (\d+)\]"))[1])
            ((_, inner),) = self.body()
            return Variant(index, inner)
        if self.peek("std::tuple containing"):
            self.eat("std::tuple containing")
            return Tuple([v for _, v in self.body()])
        if found := self.match(_HANDLE):
            self.at -= 1
            self.angle()
            counts = self.match(_COUNTS)
            use = int(counts[1]) if counts and counts[1] else (0 if counts and "expired" in
                                                                 counts[0] else None)
            ((_, pointer),) = self.body()
            return Handle(found[1], int(pointer.text.split()[0], 16), use)
        if self.peek("{"):
            return self.braces()
        found = self.match(re.compile(r"[^,{}\]]+"))
        if not found:
            self.fail("no value")
        text = found[0].strip()
        char = re.fullmatch(r"(-?\d+) '.*'", text)    # gdb's char: `104 'h'`
        return Scalar(char[1] if char else text)

    def body(self) -> list:
        self.eat(" = ")
        return self.items()

    def items(self) -> list:
        """`{a, b}`, `{[k] = v, ...}`, `{name = v, ...}` -> [(key, value)]."""
        self.eat("{")
        found = []
        while not self.peek("}"):
            key = None
            if self.peek("["):
                self.eat("[")
                key = self.value()
                self.eat("] = ")
            elif name := self.match(re.compile(r"(<[^=]*>|[A-Za-z_][\w]*|get\(\)) = ")):
                key = name[1]
            found.append((key, self.value()))
            if self.peek("..."):          # gdb's element limit
                self.eat("...")
            if self.peek(", "):
                self.eat(", ")
        self.eat("}")
        return found

    def braces(self):
        found = self.items()
        names = [k for k, _ in found]
        if names == ["_M_elems"]:
            return found[0][1]            # std::array
        if names == ["first", "second"]:
            return Tuple([v for _, v in found])
        if found and all(isinstance(k, str) for k in names):
            return Struct(found)
        return Seq([v for _, v in found])

    def text_value(self) -> Text:
        """`"ab"`, or `...` after it when gdb cut it. gdb runs with `set
        print repeats unlimited`: no `'x' <repeats 200 times>` pieces."""
        found = self.match(re.compile(r'"((?:[^"\\]|\\.)*)"'))
        if found is None:
            self.fail("no string")
        text = found[1].encode().decode("unicode_escape")
        if self.peek("..."):
            self.eat("...")
            return Text(text, True)
        return Text(text)


def parse(text: str):
    parser = _Parser(text)
    found = parser.value()
    if parser.at != len(text):
        parser.fail("text after the value")
    return found


def attach_pointees(value, pointees: list) -> None:
    """Give each non-null smart pointer in `value` (in order) the object
    gdb printed for it (parsed)."""
    queue = list(pointees)

    def visit(node) -> None:
        if isinstance(node, Handle):
            if node.address and node.use_count != 0 and queue:
                node.pointee = queue.pop(0)
            return
        for child in _children(node):
            visit(child)
    visit(value)


def length(node) -> int:
    """The element count gdb's printer shows (a string's length)."""
    match node:
        case Text(text=text):
            return len(text.encode())
        case Seq(items=items, more=more):
            return len(items) + more
        case Mapping(pairs=pairs, more=more):
            return len(pairs) + more
    raise GdbFormError(f"no length for {node!r}")


def _children(node) -> list:
    match node:
        case Seq(items=items) | Tuple(items=items):
            return items
        case Mapping(pairs=pairs):
            return [x for pair in pairs for x in pair if x is not None]
        case Optional(value=v) | Variant(value=v):
            return [v] if v is not None else []
        case Struct(fields=fields):
            return [v for _, v in fields]
    return []


@dataclass
class Forms:
    """`names`: a tuple of member names -> the class name; `max_elements`:
    gs-cgen's --max-elements, applied to what gdb printed whole (`set
    print elements unlimited`: gdb's own limit counts a map's keys and
    values apart)."""

    names: dict = field(default_factory=dict)
    max_elements: int = 200

    def cut(self, node):
        """`node` cut at max_elements as gs-cgen cuts it."""
        limit = self.max_elements
        match node:
            case Text(text=text, cut=cut) if len(text) > limit:
                return Text(text[:limit], True)
            case Seq(items=items, more=more, counted=False) if len(items) > limit:
                return Seq(items[:limit], -1, False)          # cut, uncounted
            case Seq(items=items, more=more) if len(items) > limit:
                return Seq(items[:limit], more + len(items) - limit)
            case Mapping(pairs=pairs, is_set=is_set, more=more) if len(pairs) > limit:
                return Mapping(pairs[:limit], is_set, more + len(pairs) - limit)
        return node

    def plain(self, node) -> str:
        node = self.cut(node)
        match node:
            case Scalar(text=text):
                return text
            case Text(text=text, cut=cut):
                return json.dumps(text) + ("... <truncated>" if cut else "")
            case Seq(items=items, more=-1):
                return "[" + ", ".join([self.plain(i) for i in items] + ["... <truncated>"]) + "]"
            case Seq(items=items, more=more):
                return "[" + self._join([self.plain(i) for i in items], more) + "]"
            case Mapping(pairs=pairs, is_set=True, more=more):
                return "{" + self._join([self.plain(k) for k, _ in pairs], more) + "}"
            case Mapping(pairs=pairs, more=more):
                return "{" + self._join([f"{self.plain(k)}: {self.plain(v)}"
                                         for k, v in pairs], more) + "}"
            case Optional(value=None):
                return "std::nullopt"
            case Optional(value=v):
                return f"std::optional({self.plain(v)})"
            case Variant(index=index, value=v):
                return f"std::variant({index}: {self.plain(v)})"
            case Tuple(items=items):
                return "(" + ", ".join(self.plain(i) for i in items) + ")"
            case Struct(fields=fields):
                name = self.names[tuple(n for n, _ in fields)]
                return f"{name} {{ " + ", ".join(f"{n}: {self.plain(v)}" for n, v in fields) + " }"
            case Handle(address=0):
                return "nullptr"
            case Handle(label=label, address=address, use_count=use, pointee=pointee):
                count = "" if use is None else f"use_count {use}, "
                target = "" if pointee is None else f" -> {self.plain(pointee)}"
                return f"{label}({count}0x{address:x}{target})"
        raise GdbFormError(f"no plain form for {node!r}")

    @staticmethod
    def _join(parts: list[str], more: int) -> str:
        return ", ".join(parts + ([f"... <{more} more>"] if more else []))

    def as_json(self, node):
        node = self.cut(node)
        match node:
            case Scalar(text=text):
                return _json_scalar(text)
            case Text(text=text):
                return text
            case Seq(items=items, more=-1):                   # status "truncated"
                return [self.as_json(i) for i in items]
            case Seq(items=items, more=more):
                return _cut("elements", [self.as_json(i) for i in items], more)
            case Mapping(pairs=pairs, is_set=True, more=more):
                return _cut("elements", [self.as_json(k) for k, _ in pairs], more)
            case Mapping(pairs=pairs, more=more):
                return _cut("entries", [{"key": self.as_json(k), "value": self.as_json(v)}
                                        for k, v in pairs], more)
            case Optional(value=None):
                return "std::nullopt"
            case Optional(value=v):
                return [self.as_json(v)]
            case Variant(index=index, value=v):
                return {"variant": index, "fields": [self.as_json(v)]}
            case Tuple(items=items):
                return [self.as_json(i) for i in items]
            case Struct(fields=fields):
                return {n: self.as_json(v) for n, v in fields}
            case Handle(address=0):
                return "nullptr"
            case Handle(address=address, use_count=use, pointee=pointee):
                found = {"address": address,
                         "value": None if pointee is None else self.as_json(pointee)}
                return found if use is None else {**found, "use_count": use}
        raise GdbFormError(f"no JSON form for {node!r}")


def _cut(name: str, shown: list, more: int):
    return {name: shown, "length": len(shown) + more, "truncated": True} if more else shown


def _json_scalar(text: str):
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return float(text)
