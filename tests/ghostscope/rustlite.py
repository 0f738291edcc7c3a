"""Just enough Rust lexing to read GhostScope's e2e test files.

A token list (strings decoded), the test functions of a file with their
bodies as token slices, and a three-valued evaluator for the assertion
conditions those tests write (`stdout.contains("x") && !stdout.contains(..)`).
Anything it cannot evaluate is UNKNOWN, never guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<raw>b?r(?P<hashes>\#*)")
  | (?P<str>b?"(?:\\.|[^"\\])*")
  | (?P<char>'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^'\\\n])')
  | (?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>0x[0-9a-fA-F_]+|0b[01_]+|0o[0-7_]+|\d[\d_]*(?:\.\d+)?(?:[iu](?:8|16|32|64|128|size)|f32|f64)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>::|->|=>|==|!=|<=|>=|&&|\|\||\.\.=|\.\.|[-+*/%^!&|<>=(){}\[\],.;:?\#@$~])
""", re.X | re.S)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n in _ESCAPES:
            out.append(_ESCAPES[n])
            i += 2
        elif n == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif n == "u":
            end = body.index("}", i)
            out.append(chr(int(body[i + 3:end], 16)))
            i = end + 1
        elif n == "\n":                      # line continuation: skip leading spaces
            i += 2
            while i < len(body) and body[i] in " \t\n":
                i += 1
        else:
            out.append(n)
            i += 2
    return "".join(out)


@dataclass
class Tok:
    kind: str          # ident num str punct char lifetime
    text: str          # source text (for str: the decoded value)
    pos: int
    line: int

    def is_(self, text: str) -> bool:
        return self.kind in ("punct", "ident") and self.text == text


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(src)
    line_starts = [0] + [m.end() for m in re.finditer("\n", src)]

    def line_of(p: int) -> int:
        import bisect
        return bisect.bisect_right(line_starts, p)

    while i < n:
        m = _TOKEN.match(src, i)
        if not m:
            i += 1
            continue
        kind = m.lastgroup
        if kind == "hashes":
            kind = "raw"
        if m.group("raw") is not None:
            hashes = m.group("hashes")
            end = src.index('"' + hashes, m.end())
            toks.append(Tok("str", src[m.end():end], m.start(), line_of(m.start())))
            i = end + 1 + len(hashes)
            continue
        text = m.group(0)
        if kind == "str":
            body = text[2:-1] if text.startswith("b") else text[1:-1]
            toks.append(Tok("str", _unescape(body), m.start(), line_of(m.start())))
        elif kind in ("ws", "lcomment", "bcomment"):
            pass
        else:
            toks.append(Tok(kind, text, m.start(), line_of(m.start())))
        i = m.end()
    return toks


_OPEN = {"(": ")", "[": "]", "{": "}"}


def match_close(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at toks[i]."""
    want = [_OPEN[toks[i].text]]
    j = i + 1
    while j < len(toks):
        t = toks[j]
        if t.kind == "punct":
            if t.text in _OPEN:
                want.append(_OPEN[t.text])
            elif t.text in (")", "]", "}"):
                want.pop()
                if not want:
                    return j
        j += 1
    raise ValueError("unbalanced bracket at line %d" % toks[i].line)


def split_top(toks: list[Tok], sep: str = ",") -> list[list[Tok]]:
    """Split a token slice at top-level `sep`."""
    parts: list[list[Tok]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == "punct" and t.text in _OPEN:
            depth += 1
        elif t.kind == "punct" and t.text in (")", "]", "}"):
            depth -= 1
        if depth == 0 and t.kind == "punct" and t.text == sep:
            parts.append([])
            continue
        parts[-1].append(t)
    if parts and not parts[-1]:
        parts.pop()
    return parts


@dataclass
class RustFn:
    name: str
    is_test: bool
    ignored: bool
    body: list[Tok]          # tokens strictly inside the braces
    line: int
    attrs: list[str] = field(default_factory=list)


def functions(toks: list[Tok]) -> list[RustFn]:
    """Top-level (and mod-level) fns with their attributes."""
    fns: list[RustFn] = []
    attrs: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.is_("#") and i + 1 < len(toks) and toks[i + 1].is_("["):
            end = match_close(toks, i + 1)
            attrs.append(" ".join(x.text for x in toks[i + 2:end]))
            i = end + 1
            continue
        if t.is_("fn") and i + 1 < len(toks) and toks[i + 1].kind == "ident":
            name = toks[i + 1].text
            j = i + 2
            # find the body's `{` (skip generics / params / return type / where)
            while j < len(toks) and not toks[j].is_("{") and not toks[j].is_(";"):
                if toks[j].text in ("(", "["):
                    j = match_close(toks, j)
                j += 1
            if j < len(toks) and toks[j].is_("{"):
                end = match_close(toks, j)
                is_test = any(a in ("test", "tokio :: test") or a.startswith("tokio :: test")
                              for a in attrs)
                ignored = any(a.startswith("ignore") for a in attrs)
                fns.append(RustFn(name, is_test, ignored, toks[j + 1:end], t.line, list(attrs)))
                i = end + 1
                attrs = []
                continue
            i = j
            attrs = []
            continue
        if t.is_(";") or t.is_("}"):
            attrs = []
        i += 1
    return fns


# ----------------------------------------------------------------- evaluation

UNKNOWN = "unknown"


class Unsupported(Exception):
    pass


def _and(a, b):
    if a is False or b is False:
        return False
    if a is True and b is True:
        return True
    return UNKNOWN


def _or(a, b):
    if a is True or b is True:
        return True
    if a is False and b is False:
        return False
    return UNKNOWN


def _not(a):
    return UNKNOWN if a is UNKNOWN else (not a)


def squash(s: str) -> str:
    """Spacing-insensitive form: all whitespace removed."""
    return re.sub(r"\s+", "", s)


class Env:
    """What names mean while evaluating one run's assertions.

    texts: variable name -> captured text (stdout; stderr is UNKNOWN-valued
    because its wording is GhostScope's, not part of the language).
    bools: bound boolean results. lists: names bound to lists of literals.
    exit_var / exit_code: the run's status variable and value.
    """

    def __init__(self) -> None:
        self.texts: dict[str, str | None] = {}
        self.bools: dict[str, object] = {}
        self.lists: dict[str, list[str]] = {}
        self.strs: dict[str, str] = {}
        self.exit_vars: set[str] = set()
        self.counts: dict[str, int] = {}            # event counts a helper returned
        self.exit_code: int | None = None
        self.checked: list[tuple[str, bool]] = []   # (needle, found) for the report

    def contains(self, hay: str | None, needle: str, negated: bool = False):
        if hay is None:
            return UNKNOWN
        found = needle in hay or squash(needle) in squash(hay)
        self.checked.append((needle, found if not negated else not found))
        return found


class Evaluator:
    def __init__(self, toks: list[Tok], env: Env, line_var: tuple[str, str] | None = None):
        self.t = toks
        self.i = 0
        self.env = env
        self.line_var = line_var       # (name, line text) inside .lines().any(|l| ..)
        self.negated = False

    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def take(self) -> Tok:
        tok = self.peek()
        if tok is None:
            raise Unsupported("unexpected end")
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok.text != text:
            raise Unsupported(f"expected {text!r} got {tok.text!r}")

    def parse(self):
        v = self.or_()
        if self.peek() is not None:
            raise Unsupported(f"trailing {self.peek().text!r}")
        return v

    def or_(self):
        v = self.and_()
        while self.peek() is not None and self.peek().is_("||"):
            self.take()
            v = _or(v, self.and_())
        return v

    def and_(self):
        v = self.cmp()
        while self.peek() is not None and self.peek().is_("&&"):
            self.take()
            v = _and(v, self.cmp())
        return v

    def cmp(self):
        start = self.i
        tok, op = self.peek(), self.peek(1)
        if tok is not None and tok.kind == "ident" and \
                (tok.text in self.env.exit_vars or tok.text in self.env.counts) and \
                op is not None and op.text in ("==", "!=", ">", "<", ">=", "<="):
            self.take()
            left = None
        else:
            left = self.unary()
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text in ("==", "!=", ">", "<", ">=", "<="):
            # only `exit_code OP NUM`
            lhs = self.t[start:self.i]
            op = self.take().text
            rhs = self.take()
            if len(lhs) == 1 and rhs.kind == "num" and \
                    (lhs[0].text in self.env.exit_vars or lhs[0].text in self.env.counts):
                code = self.env.counts.get(lhs[0].text, self.env.exit_code)
                if code is None:
                    return UNKNOWN
                n = int(rhs.text.rstrip("iu3264"))
                return {"==": code == n, "!=": code != n, ">": code > n, "<": code < n,
                        ">=": code >= n, "<=": code <= n}[op]
            raise Unsupported("comparison")
        return left

    def unary(self):
        if self.peek() is not None and self.peek().is_("!"):
            self.take()
            saved = self.negated
            self.negated = not saved
            v = self.unary()
            self.negated = saved
            return _not(v)
        return self.primary()

    def _string_arg(self, toks: list[Tok]) -> list[str]:
        """A contains() argument: a literal, &literal, a str var, a loop var."""
        toks = [t for t in toks if not t.is_("&")]
        if len(toks) == 1 and toks[0].kind == "str":
            return [toks[0].text]
        if len(toks) == 1 and toks[0].kind == "ident":
            name = toks[0].text
            if name in self.env.strs:
                return [self.env.strs[name]]
            if name in self.env.lists:
                return self.env.lists[name]
            if name == "*":
                pass
        if len(toks) == 2 and toks[0].is_("*") and toks[1].kind == "ident" and toks[1].text in self.env.lists:
            return self.env.lists[toks[1].text]
        if len(toks) == 2 and toks[0].is_("*") and toks[1].kind == "ident" and toks[1].text in self.env.strs:
            return [self.env.strs[toks[1].text]]
        raise Unsupported("contains() argument " + " ".join(t.text for t in toks))

    def primary(self):
        tok = self.take()
        if tok.is_("("):
            v = self.or_()
            self.expect(")")
            return v
        if tok.is_("true"):
            return True
        if tok.is_("false"):
            return False
        if tok.kind != "ident":
            raise Unsupported(f"token {tok.text!r}")
        name = tok.text
        # receiver: name, optionally with .trim() / .as_str() etc.
        hay: str | None
        is_text = False
        if self.line_var is not None and name == self.line_var[0]:
            hay, is_text = self.line_var[1], True
        elif name in self.env.texts:
            hay, is_text = self.env.texts[name], True
        elif name in self.env.bools and not (self.peek() is not None and self.peek().is_(".")):
            return self.env.bools[name]
        else:
            raise Unsupported(f"name {name}")
        while self.peek() is not None and self.peek().is_("."):
            self.take()
            meth = self.take().text
            self.expect("(")
            close = self.i - 1
            end = match_close(self.t, close)
            args = self.t[self.i:end]
            self.i = end + 1
            if meth in ("trim", "as_str", "to_string", "trim_end", "trim_start"):
                continue
            if meth == "contains" and is_text:
                needles = self._string_arg(args)
                result = True
                for needle in needles:
                    result = _and(result, self.env.contains(hay, needle, self.negated))
                return result
            if meth == "starts_with" and is_text and self.line_var is not None:
                needles = self._string_arg(args)
                if hay is None:
                    return UNKNOWN
                return hay.lstrip().startswith(needles[0]) or squash(hay).startswith(squash(needles[0]))
            if meth == "lines" and is_text and not args:
                self.expect(".")
                how = self.take().text
                if how not in ("any", "all"):
                    raise Unsupported("lines()." + how)
                self.expect("(")
                end = match_close(self.t, self.i - 1)
                lam = self.t[self.i:end]
                self.i = end + 1
                if not (len(lam) >= 3 and lam[0].is_("|") and lam[2].is_("|")):
                    raise Unsupported("closure")
                var = lam[1].text
                body = lam[3:]
                if hay is None:
                    return UNKNOWN
                results = []
                for line in hay.splitlines():
                    sub = Evaluator(body, _QuietEnv(self.env), (var, line))
                    results.append(sub.parse())
                if how == "any":
                    v = False
                    for r in results:
                        v = _or(v, r)
                else:
                    v = True
                    for r in results:
                        v = _and(v, r)
                needles = [t.text for t in body if t.kind == "str"]
                if v is True or not needles:
                    desc = " ".join(t.text for t in body)
                    self.env.checked.append((f"some line: {desc}" if how == "any"
                                             else f"every line: {desc}", v is True))
                else:                       # report the literals the lines were searched for
                    for needle in needles:
                        self.env.checked.append((needle, False))
                return v
            if meth == "is_empty" and is_text:
                return UNKNOWN if hay is None else (hay.strip() == "")
            raise Unsupported("method " + meth)
        raise Unsupported("bare text")


class _QuietEnv(Env):
    """An Env view that does not record per-line checks."""

    def __init__(self, parent: Env) -> None:
        self.__dict__.update(parent.__dict__)
        self.checked = []


def evaluate(toks: list[Tok], env: Env):
    return Evaluator(toks, env).parse()
