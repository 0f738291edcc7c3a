"""check(): let scoping rules and print argument counts."""
import pytest

from gs_cgen.errors import ScriptError
from gs_cgen.script import check, parse


def error(text):
    with pytest.raises(ScriptError) as info:
        check(parse(text))
    return info.value.render("t.gs", text)


def ok(text):
    check(parse(text))


# ------------------------------------------------------------- let rules

def test_redeclaration_in_same_scope():
    assert error("trace f {\n  let x = 1;\n  let x = 2;\n}") == (
        "t.gs:3:3: error: Redeclaration in the same scope is not allowed: "
        "'x'\n"
        "    let x = 2;\n"
        "    ^^^^^^^^^^")


def test_shadowing_an_outer_variable():
    assert error("trace f {\n  let x = 1;\n  if c { let x = 2; }\n}") == (
        "t.gs:3:10: error: Shadowing is not allowed for immutable variables: "
        "'x'\n"
        "    if c { let x = 2; }\n"
        "           ^^^^^^^^^^\n"
        "hint: pick a different name for the inner variable")


def test_shadowing_is_checked_through_several_levels():
    with pytest.raises(ScriptError, match="Shadowing"):
        ok("trace f { let x = 1; if a { if b { let x = 2; } } }")


def test_use_after_the_declaring_block_ended():
    assert error("trace f {\n  if c { let y = 1; }\n  print y;\n}") == (
        "t.gs:3:9: error: Use of variable 'y' outside of its scope\n"
        "    print y;\n"
        "          ^\n"
        "hint: a 'let' inside { ... } is visible only up to that block's "
        "closing '}'")


def test_use_in_sibling_branch_is_out_of_scope():
    with pytest.raises(ScriptError, match="Use of variable 'y' outside"):
        ok("trace f { if c { let y = 1; } else { print y; } }")


@pytest.mark.parametrize("where", [
    "if y { }", "let z = y + 1;", 'print "{}", y.field;',
    "print strncmp(y, \"a\", 1);", "print arr[y];", "print cast(y, \"int\");",
])
def test_out_of_scope_use_found_in_every_position(where):
    with pytest.raises(ScriptError, match="outside of its scope"):
        ok(f"trace f {{ if c {{ let y = 1; }} {where} }}")


def test_valid_scoping():
    ok("""
    trace f {
        let a = 1;
        if a > 0 { let b = a; print b; } else { let b = 2; print b; }
        if a { if a { print a; } }
        let b = 3;               // the branch-local b's are gone: allowed
        print "{:x.b$}", buf;
    }
    trace g { let a = 5; print a; }   // each trace block is its own scope
    """)


def test_unknown_names_are_left_for_dwarf():
    ok("trace f { print counter + x.y[i]; if flag { print *p; } }")


def test_member_field_named_like_dead_variable_is_fine():
    ok("trace f { if c { let len = 1; } print s.len; }")


def test_let_value_is_checked_before_the_name_is_bound():
    with pytest.raises(ScriptError, match="Use of variable 'n' outside"):
        ok("trace f { if c { let n = 1; } let n = n; }")


# -------------------------------------------------------- print arguments

def test_too_few_arguments_points_at_format_string():
    assert error('trace f { print "{} {}", a; }') == (
        "t.gs:1:17: error: format string expects 2 arguments but 1 was given\n"
        '  trace f { print "{} {}", a; }\n'
        "                  ^^^^^^^")


def test_too_many_arguments_points_at_first_surplus():
    assert error('trace f { print "{}", a, b.c, d; }') == (
        "t.gs:1:26: error: format string expects 1 argument but 3 were given\n"
        '  trace f { print "{}", a, b.c, d; }\n'
        "                           ^^^")


def test_plain_string_with_argument():
    with pytest.raises(ScriptError, match="expects 0 arguments but 1 was"):
        ok('trace f { print "no placeholders", x; }')


def test_star_needs_length_and_value():
    assert error('trace f { print "{:x.*}", buf; }') == (
        "t.gs:1:17: error: format string expects 2 arguments but 1 was given\n"
        '  trace f { print "{:x.*}", buf; }\n'
        "                  ^^^^^^^^\n"
        "hint: each '.*' placeholder takes two arguments: the length, then "
        "the value")


def test_counts_that_match():
    ok('trace f { print "{:s.*} {:x.16} {}", n, p, q, r; }')
    ok('trace f { let n = 4; print "{:s.n$}", p; }')
    ok('trace f { print "{{}} literal"; }')


def test_length_variable_must_be_a_script_variable_in_scope():
    assert error('trace f { print "{:s.n$}", p; }') == (
        "t.gs:1:17: error: length variable 'n' in '{:s.n$}' is not a script "
        "variable in scope\n"
        '  trace f { print "{:s.n$}", p; }\n'
        "                  ^^^^^^^^^\n"
        "hint: declare it first: let n = ...;")


def test_length_variable_out_of_scope():
    with pytest.raises(ScriptError, match="'n' in '{:x.n\\$}'"):
        ok('trace f { if c { let n = 4; } print "{:x.n$}", p; }')


def test_counts_checked_inside_nested_blocks():
    with pytest.raises(ScriptError, match="expects 1 argument but 0"):
        ok('trace f { if a { } else if b { print "{}"; } }')


def test_a_script_without_trace_blocks_is_an_error():
    from gs_cgen.errors import ScriptError
    from gs_cgen.script.check import check
    from gs_cgen.script.parser import parse
    import pytest
    with pytest.raises(ScriptError, match="the script has no trace blocks"):
        check(parse("// only a comment\n"))
