"""parse(): every construct, literal and pattern kind to the expected AST."""
import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import ast, parse
from gs_cgen.script.ast import BinaryOp as B
from gs_cgen.script.ast import UnaryOp as U
from gs_cgen.source import SourceSpan


def span(line, column, end_column, end_line=None):
    return SourceSpan(line, column, end_line or line, end_column)


def body(text):
    """Statements of the only trace block in `text`."""
    (trace,) = parse(text).traces
    return trace.body


def expr(source):
    """The expression of `print <source>;`, spans stripped for comparison."""
    (statement,) = body(f"trace f {{ print {source}; }}")
    assert isinstance(statement, ast.PrintExpr)
    return shape(statement.expr)


def let_value(source):
    """The value node of `let v = <source>;`, spans kept."""
    (statement,) = body(f"trace f {{ let v = {source}; }}")
    return statement.value


def shape(node):
    """A span-free nested tuple, so precedence tests stay readable."""
    match node:
        case ast.Binary(op=op, left=left, right=right):
            return (op.value, shape(left), shape(right))
        case ast.Unary(op=op, operand=operand):
            return (op.value + "u", shape(operand))
        case ast.Name(ident=ident):
            return ident
        case ast.IntLiteral(value=value) | ast.StringLiteral(value=value):
            return value
        case ast.Member(base=base, field=field):
            return (".", shape(base), field)
        case ast.Index(base=base, index=index):
            return ("[]", shape(base), shape(index))
        case ast.Call(function=function, args=args):
            return (function, *map(shape, args))
        case ast.Cast(operand=operand, type_name=type_name):
            return ("cast", shape(operand), type_name)
    return node


# ------------------------------------------------------------ whole nodes

def test_print_expression_whole_node():
    script = parse("trace main { print a.b; }")
    a = ast.Name("a", span(1, 20, 21))
    member = ast.Member(a, "b", span(1, 20, 23))
    print_stmt = ast.PrintExpr(member, "a.b", span(1, 14, 24))
    assert script == ast.Script(
        (ast.TraceBlock(ast.FunctionPattern("main"), "main", (print_stmt,),
                        span(1, 1, 26), span(1, 7, 11)),),
        "trace main { print a.b; }")


def test_print_format_whole_node():
    (statement,) = body('trace f { print "v={:x}", $pid; }')
    assert statement == ast.PrintFormat(
        ast.FormatString(("v=", ast.Placeholder(ast.FormatKind.HEX)),
                         span(1, 17, 25)),
        (ast.SpecialVar("pid", span(1, 27, 31)),), span(1, 11, 32))


def test_let_whole_node():
    (statement,) = body("trace f { let n = -1; }")
    assert statement == ast.Let(
        "n", ast.Unary(U.NEG, ast.IntLiteral(1, span(1, 20, 21)),
                       span(1, 19, 21)), span(1, 11, 22))


def test_if_else_if_else_nests_in_else_body():
    text = ("trace f {\n"
            "    if x > 1 { bt; } else if y { backtrace; } else { print z; }\n"
            "}")
    (outer,) = body(text)
    assert outer.condition_text == "x > 1"
    assert outer.then_body == (ast.Backtrace(span(2, 16, 19)),)
    (inner,) = outer.else_body
    assert isinstance(inner, ast.If) and inner.condition_text == "y"
    assert inner.then_body == (ast.Backtrace(span(2, 34, 44)),)
    (last,) = inner.else_body
    assert last == ast.PrintExpr(ast.Name("z", span(2, 60, 61)), "z",
                                 span(2, 54, 62))
    assert outer.span == span(2, 5, 64)


def test_if_without_else_has_empty_else_body():
    (statement,) = body("trace f { if ok { } }")
    assert statement.then_body == () and statement.else_body == ()


def test_print_text_and_condition_text_are_sliced_as_written():
    statements = body("trace f { print ( a+b )*  c; if (x)||!y { } }")
    assert statements[0].text == "( a+b )*  c"
    assert statements[1].condition_text == "(x)||!y"


def test_multiline_expression_text():
    (statement,) = body("trace f { print a +\n    b; }")
    assert statement.text == "a +\n    b"
    assert statement.expr.span == span(1, 17, 6, end_line=2)


def test_print_plain_string_is_a_format_without_placeholders():
    (statement,) = body('trace f { print "hello"; }')
    assert isinstance(statement, ast.PrintFormat)
    assert statement.format.pieces == ("hello",) and statement.args == ()


# ------------------------------------------------------------- precedence

@pytest.mark.parametrize("source, tree", [
    ("a || b && c", ("||", "a", ("&&", "b", "c"))),
    ("a && b | c", ("&&", "a", ("|", "b", "c"))),
    ("a | b ^ c", ("|", "a", ("^", "b", "c"))),
    ("a ^ b & c", ("^", "a", ("&", "b", "c"))),
    ("a & b == c", ("&", "a", ("==", "b", "c"))),
    ("a != b < c", ("!=", "a", ("<", "b", "c"))),
    ("a <= b << c", ("<=", "a", ("<<", "b", "c"))),
    ("a >> b + c", (">>", "a", ("+", "b", "c"))),
    ("a - b % c", ("-", "a", ("%", "b", "c"))),
    ("a - b - c", ("-", ("-", "a", "b"), "c")),
    ("a / b * c", ("*", ("/", "a", "b"), "c")),
    ("a > b >= c", (">=", (">", "a", "b"), "c")),
    ("(a + b) * c", ("*", ("+", "a", "b"), "c")),
    ("-a * b", ("*", ("-u", "a"), "b")),
    ("!a && ~b", ("&&", ("!u", "a"), ("~u", "b"))),
    ("*p.next", ("*u", (".", "p", "next"))),
    ("&arr[1]", ("&u", ("[]", "arr", 1))),
    ("- -a", ("-u", ("-u", "a"))),
    ("a * *p", ("*", "a", ("*u", "p"))),
    ("a & &b", ("&", "a", ("&u", "b"))),
    ("a.b[i + 1].c", (".", ("[]", (".", "a", "b"), ("+", "i", 1)), "c")),
])
def test_precedence(source, tree):
    assert expr(source) == tree


def test_builtin_calls_and_cast():
    assert expr('strncmp(s, "ab", 2)') == ("strncmp", "s", b"ab", 2)
    assert expr('starts_with(s, "ab")') == ("starts_with", "s", b"ab")
    assert expr("memcmp(&a[0], b, n)") == ("memcmp", ("&u", ("[]", "a", 0)),
                                           "b", "n")
    assert expr('memcmp(p, hex("de ad"))') == ("memcmp", "p", ("hex", b"de ad"))
    assert expr('cast(p, " struct s * ").f') == (
        ".", ("cast", "p", "struct s *"), "f")


def test_literals_and_special_variables():
    assert expr("true") == ast.BoolLiteral(True, span(1, 17, 21))
    assert expr("false") == ast.BoolLiteral(False, span(1, 17, 22))
    for ident in ("pid", "tid", "host_pid", "input_pid", "timestamp"):
        assert expr(f"${ident}") == ast.SpecialVar(
            ident, span(1, 17, 18 + len(ident)))


def test_keywords_are_names_where_no_keyword_fits():
    # The contextual lexer only reserves a word where the grammar could use
    # it, so DWARF variables called `bt` or `print` stay reachable.
    assert expr("bt + print") == ("+", "bt", "print")


# --------------------------------------------------------------- literals

@pytest.mark.parametrize("source, value", [
    ("0", 0), ("42", 42), ("0x1F", 31), ("0XfF", 255), ("0o17", 15),
    ("0b1010", 10), ("1_000_000", 1_000_000), ("0xdead_beef", 0xDEADBEEF),
    ("0xffffffffffffffff", 2**64 - 1),
])
def test_integer_literals(source, value):
    assert expr(source) == value


@pytest.mark.parametrize("source, value", [
    (r'"a\nb"', b"a\nb"), (r'"\t\r"', b"\t\r"), (r'"\\"', b"\\"),
    (r'"say \"hi\""', b'say "hi"'), (r'"\x41\x7a"', b"Az"), (r'"\0"', b"\0"),
    (r'"\101"', b"A"), ('"é"', "é".encode()), ('""', b""),
])
def test_string_escapes(source, value):
    assert let_value(source) == ast.StringLiteral(
        value, span(1, 19, 19 + len(source)))


# ------------------------------------------------------ comments / blocks

def test_comments_are_ignored():
    text = ("// leading\n"
            "trace f { /* inline */ print x; // trailing\n"
            "  /* multi\n  line */ bt;\n"
            "}\n/* after */")
    assert [type(s) for s in body(text)] == [ast.PrintExpr, ast.Backtrace]


def test_comment_markers_inside_strings_are_text():
    (statement,) = body('trace f { print "// not /* a comment"; }')
    assert statement.format.pieces == ("// not /* a comment",)


def test_several_trace_blocks_and_empty_script():
    script = parse("trace a { }\ntrace b.c:3 { bt; }\ntrace 0x10 { }")
    assert [t.pattern_text for t in script.traces] == ["a", "b.c:3", "0x10"]
    assert script.traces[1].span == span(2, 1, 20)
    assert parse("  // nothing\n").traces == ()


# ----------------------------------------------------------- trace patterns

@pytest.mark.parametrize("text, pattern", [
    ("main", ast.FunctionPattern("main")),
    ("_do_work2", ast.FunctionPattern("_do_work2")),
    ("foo.c:12", ast.LinePattern("foo.c", 12)),
    ("src/foo.c:42", ast.LinePattern("src/foo.c", 42)),
    ("/abs/path/x.c:7", ast.LinePattern("/abs/path/x.c", 7)),
    ("../my-lib_2/a.cpp:100", ast.LinePattern("../my-lib_2/a.cpp", 100)),
    ("0x401234", ast.AddressPattern(0x401234)),
    ("libfoo.so:0x1234", ast.AddressPattern(0x1234, "libfoo.so")),
    ("libc.so.6:0x1a2b", ast.AddressPattern(0x1A2B, "libc.so.6")),
    ("/usr/lib/libz.so.1:0xFF", ast.AddressPattern(0xFF, "/usr/lib/libz.so.1")),
])
def test_trace_patterns(text, pattern):
    (trace,) = parse(f"trace {text} {{ }}").traces
    assert trace.pattern == pattern
    assert trace.pattern_text == text
    assert trace.pattern_span == span(1, 7, 7 + len(text))


@pytest.mark.parametrize("keyword", ["true", "false", "if", "print", "let", "bt", "trace"])
def test_keywords_cannot_be_bound(keyword):
    with pytest.raises(ScriptError) as err:
        parse(f"trace f {{ let {keyword} = 1; print {keyword}; }}")
    assert err.value.message == f"'{keyword}' is a keyword and cannot be bound with let"
    assert (err.value.span.line, err.value.span.column) == (1, 15)
