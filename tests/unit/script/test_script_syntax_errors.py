"""Syntax errors: the whole rendered message, position and wording."""
import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import parse


def rendered(text):
    with pytest.raises(ScriptError) as info:
        parse(text)
    return info.value.render("t.gs", text)


def test_missing_semicolon_before_closing_brace():
    assert rendered("trace main {\n    print x\n}") == (
        "t.gs:3:1: error: expected ';', ',' or an operator after expression, "
        "found '}'\n"
        "  }\n"
        "  ^")


def test_missing_semicolon_after_let():
    assert rendered("trace f { let n = 1 }") == (
        "t.gs:1:21: error: expected ';' or an operator after expression, "
        "found '}'\n"
        "  trace f { let n = 1 }\n"
        "                      ^")


def test_unexpected_character_uses_parser_state():
    assert rendered("trace f { print x @ 1; }") == (
        "t.gs:1:19: error: expected ';', ',' or an operator after expression, "
        "found '@'\n"
        "  trace f { print x @ 1; }\n"
        "                    ^")


def test_missing_expression():
    assert rendered("trace f { let v = ; }") == (
        "t.gs:1:19: error: expected an expression, found ';'\n"
        "  trace f { let v = ; }\n"
        "                    ^")


def test_missing_pattern():
    assert rendered("trace { }") == (
        "t.gs:1:7: error: expected a trace pattern (FUNCTION, FILE:LINE, "
        "0xADDR or MODULE:0xADDR), found '{'\n"
        "  trace { }\n"
        "        ^")


def test_statement_outside_trace_block():
    assert rendered("print x;") == (
        "t.gs:1:1: error: expected 'trace' or end of input, found 'print'\n"
        "  print x;\n"
        "  ^^^^^\n"
        "hint: statements go inside a block: trace <pattern> { ... }")


def test_unclosed_block_points_after_last_text():
    assert rendered("trace f {\n  bt;\n\n") == (
        "t.gs:2:6: error: expected a statement or '}', found end of input\n"
        "    bt;\n"
        "       ^")


def test_two_strings_in_a_row():
    assert rendered('trace f { print "a" "b"; }') == (
        "t.gs:1:21: error: expected ';', ',' or an operator after expression, "
        'found string "b"\n'
        '  trace f { print "a" "b"; }\n'
        "                      ^^^")


def test_unterminated_string():
    assert rendered('trace f {\n  print "abc;\n}') == (
        "t.gs:2:9: error: unterminated string literal\n"
        '    print "abc;\n'
        "          ^^^^^\n"
        "hint: close it with '\"' on the same line; write \\n for a newline "
        "inside a string")


def test_unterminated_comment():
    assert rendered("trace f { bt; } /* never closed\n") == (
        "t.gs:1:17: error: unterminated comment: '/*' has no matching '*/'\n"
        "  trace f { bt; } /* never closed\n"
        "                  ^^")


def test_assignment_is_rejected_with_ghostscope_wording():
    assert rendered("trace f {\n  let x = 1;\n  x = 2;\n}") == (
        "t.gs:3:3: error: Assignment is not supported: variables are "
        "immutable. Use 'let a = ...' to bind once.\n"
        "    x = 2;\n"
        "    ^^^^^^")


def test_expression_statement_suggests_print():
    assert rendered("trace f { a.b; }") == (
        "t.gs:1:11: error: an expression on its own is not a statement\n"
        "  trace f { a.b; }\n"
        "            ^^^^\n"
        "hint: to show its value, write: print a.b;")


def test_single_equals_in_expression_hints_at_comparison():
    message = rendered("trace f { if a = 1 { } }")
    assert message.startswith("t.gs:1:16: error: expected '{' or an operator "
                              "after expression, found '='")
    assert message.endswith("hint: to compare, write '=='; script variables "
                            "are bound once with 'let'")


def test_unknown_special_variable_lists_valid_ones():
    assert rendered("trace f { print $tdi; }") == (
        "t.gs:1:17: error: unknown special variable '$tdi'\n"
        "  trace f { print $tdi; }\n"
        "                  ^^^^\n"
        "did you mean: $tid?\n"
        "hint: special variables are $pid, $tid, $host_pid, $input_pid, "
        "$timestamp, $pc, $sp, $retval, $duration, $args, $locals")


@pytest.mark.parametrize("source, message", [
    ("0x1g", "invalid digit 'g' in hex literal '0x1g'"),
    ("0b102", "invalid digit '2' in binary literal '0b102'"),
    ("0o8", "invalid digit '8' in octal literal '0o8'"),
    ("12ab", "invalid digit 'a' in decimal literal '12ab'"),
    ("0x", "'0x' has no digits after its prefix"),
    ("017", "leading zero in '017': write 0o17 for octal or 17 for decimal"),
    ("18446744073709551616",
     "integer literal '18446744073709551616' does not fit in 64 bits"),
])
def test_bad_integer_literals(source, message):
    assert rendered(f"trace f {{ print {source}; }}").startswith(
        f"t.gs:1:17: error: {message}\n")


@pytest.mark.parametrize("pattern, message", [
    ("foo.c", "trace pattern 'foo.c' names a file but no line"),
    ("main:entry", "invalid trace pattern 'main:entry': expected a line "
                   "number or 0xADDR after ':'"),
    ("foo.c:0", "invalid trace pattern 'foo.c:0': expected a line number or "
                "0xADDR after ':'"),
    ("0x", "invalid address '0x' in trace pattern"),
])
def test_bad_trace_patterns(pattern, message):
    assert rendered(f"trace {pattern} {{ }}").startswith(
        f"t.gs:1:7: error: {message}\n")


@pytest.mark.parametrize("call, message", [
    ("foo(a)", "unknown function 'foo'"),
    ('strncmp(a, "x")', "strncmp takes 3 arguments, got 2"),
    ("starts_with(a)", "starts_with takes 2 arguments, got 1"),
    ("memcmp(a)", "memcmp takes 2 or 3 arguments, got 1"),
    ("memcmp(a, b)", "memcmp needs a length unless one side is hex(...)"),
    ("hex(x)", 'hex takes a string literal, e.g. hex("de ad")'),
    ('hex("abc")', "hex string needs an even number of digits (two per byte)"),
    ('hex("0xab")', "hex string may contain only hex digits and spaces"),
    ('cast(p, "")', 'cast needs a type name, e.g. cast(p, "int *")'),
])
def test_bad_builtin_calls(call, message):
    text = f"trace f {{ print {call}; }}"
    assert f"error: {message}\n" in rendered(text)


def test_unknown_function_suggests_builtin():
    assert "did you mean: strncmp?" in rendered("trace f { print strcmp(a); }")


def test_several_values_without_format_string():
    assert rendered("trace f { print a, b; }") == (
        "t.gs:1:17: error: print with several values needs a format string "
        "first\n"
        "  trace f { print a, b; }\n"
        "                  ^\n"
        'hint: write: print "{} {}", a, b;')


def test_no_lark_exception_escapes_on_garbage():
    for text in ["trace", "trace f {", "}", "trace f { print ((( }",
                 "trace f { if } }", "\x00", "trace f { print 1.5; }",
                 "trace f { else { } }", 'trace "x" { }']:
        with pytest.raises(ScriptError) as info:
            parse(text)
        assert info.value.span is not None
