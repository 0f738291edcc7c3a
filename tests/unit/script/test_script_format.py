"""parse_format / decode_string on string literals as written."""
import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import decode_string, parse_format
from gs_cgen.script.ast import DumpLength as D
from gs_cgen.script.ast import FormatKind as K
from gs_cgen.script.ast import FormatString, Placeholder
from gs_cgen.source import SourceSpan

# The literal starts at column 10 of line 3 in every test.
AT = SourceSpan(3, 10, 3, 40)


def pieces(literal):
    return parse_format(literal, AT).pieces


def test_whole_format_string():
    assert parse_format('"a={} b={:x}"', AT) == FormatString(
        ("a=", Placeholder(K.DEFAULT), " b=", Placeholder(K.HEX)), AT)


@pytest.mark.parametrize("spec, placeholder", [
    ("{}", Placeholder(K.DEFAULT)),
    ("{:x}", Placeholder(K.HEX)),
    ("{:X}", Placeholder(K.HEX_UPPER)),
    ("{:p}", Placeholder(K.POINTER)),
    ("{:s}", Placeholder(K.STRING)),
    ("{:x.16}", Placeholder(K.HEX, D.STATIC, static_length=16)),
    ("{:s.0x20}", Placeholder(K.STRING, D.STATIC, static_length=32)),
    ("{:x.0o10}", Placeholder(K.HEX, D.STATIC, static_length=8)),
    ("{:x.0b100}", Placeholder(K.HEX, D.STATIC, static_length=4)),
    ("{:s.1_024}", Placeholder(K.STRING, D.STATIC, static_length=1024)),
    ("{:x.*}", Placeholder(K.HEX, D.STAR)),
    ("{:X.16}", Placeholder(K.HEX_UPPER, D.STATIC, static_length=16)),
    ("{:X.*}", Placeholder(K.HEX_UPPER, D.STAR)),
    ("{:X.len$}", Placeholder(K.HEX_UPPER, D.VARIABLE, length_variable="len")),
    ("{:s.*}", Placeholder(K.STRING, D.STAR)),
    ("{:x.len$}", Placeholder(K.HEX, D.VARIABLE, length_variable="len")),
    ("{:s._n2$}", Placeholder(K.STRING, D.VARIABLE, length_variable="_n2")),
])
def test_each_placeholder_form(spec, placeholder):
    assert pieces(f'"<{spec}>"') == ("<", placeholder, ">")


def test_escaped_braces_and_escapes_in_text():
    assert pieces(r'"{{}} {{x}}\t\x7b"') == ("{} {x}\t{",)


def test_escape_cannot_open_a_placeholder():
    # `\x7b` is a literal '{' byte, never the start of a placeholder.
    assert pieces(r'"\x7b}}"') == ("{}",)


def test_argument_count_counts_star_twice():
    fmt = parse_format('"{} {:x.*} {:s.n$}"', AT)
    assert fmt.argument_count == 4


def test_empty_format():
    assert pieces('""') == ()


@pytest.mark.parametrize("literal, message, column, width", [
    ('"a {"', "unclosed '{' in format string", 13, 1),
    ('"a } b"', "unmatched '}' in format string", 13, 1),
    ('"{x}"', "invalid placeholder '{x}'", 11, 3),
    ('"{:q}"', "unknown format specifier '{:q}'", 11, 4),
    ('"{:08X}"', "unknown format specifier '{:08X}'", 11, 6),
    ('"{:xz}"', "unknown format specifier '{:xz}'", 11, 5),
    ('"ab{:p.4}"', "'{:p.4}': a memory dump length only works with ':x', ':X' or "
                   "':s'", 13, 6),
    ('"{:x.0}"', "memory dump length must be at least 1", 11, 6),
    ('"{:x.}"', "invalid memory dump length ''", 11, 5),
    ('"{:x.n}"', "invalid memory dump length 'n'", 11, 6),
    ('"{:x.1$}"', "invalid memory dump length '1$'", 11, 7),
    ('"{:x.0xg}"', "invalid digit 'g' in hex literal '0xg'", 11, 8),
    (r'"ok \q"', "unknown escape sequence '\\q'", 14, 2),
    (r'"\x4"', "'\\x' must be followed by two hex digits", 11, 2),
    (r'"\777"', "octal escape '\\777' is larger than a byte", 11, 4),
])
def test_errors_point_inside_the_literal(literal, message, column, width):
    with pytest.raises(ScriptError) as info:
        parse_format(literal, AT)
    assert info.value.message == message
    assert info.value.span == SourceSpan(3, column, 3, column + width)


def test_placeholder_hint_explains_positional_arguments():
    with pytest.raises(ScriptError) as info:
        parse_format('"{x}"', AT)
    assert info.value.hints == (
        "placeholders are positional: write '{}' and pass the value as an "
        "argument after the format string",)


def test_rendered_format_error_inside_a_script():
    from gs_cgen.script import parse
    text = 'trace f {\n  print "n={:q}", n;\n}'
    with pytest.raises(ScriptError) as info:
        parse(text)
    assert info.value.render("t.gs", text) == (
        "t.gs:2:12: error: unknown format specifier '{:q}'\n"
        '    print "n={:q}", n;\n'
        "             ^^^^\n"
        "hint: valid placeholders: {}, {:x}, {:X}, {:p}, {:s}, {:x.N}, "
        "{:s.N}, {:x.*}, {:s.*}, {:x.name$}, {:s.name$}")


def test_decode_string_non_utf8_byte_survives_in_pieces():
    assert decode_string(r'"\xff\n"', AT) == b"\xff\n"
    (text,) = pieces(r'"\xff"')
    assert text.encode("utf-8", "surrogateescape") == b"\xff"
