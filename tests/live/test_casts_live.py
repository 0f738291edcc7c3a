"""Live: cast(expr, "TYPE") with typedef, qualified, base-spelling,
pointer-to-array and other-module type names, and memcmp/strncmp lengths
computed at run time, on tests/fixtures/casts (an executable and two
libraries). Every value printed is compared with what gdb prints for the
same C expression at the same breakpoint of the same process (the
fixture's values never change): `print *(u8 *)raw`, `$_memeq(text, "hel",
n)` for the builtins (strncmp's meaning here is memcmp over min(n, the
literal's length) bytes)."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.casts_fixture import build_casts
from tests.live.conftest import gs_cgen, require

CASTS = [   # (gs-cgen expression, the C expression gdb prints)
    ('*cast(raw, "u8 *")', "*(u8 *)raw"),
    ('cast(raw, "const volatile CastNode *")->qualified_next->words[2]',
     "((const volatile CastNode *)raw)->qualified_next->words[2]"),
    ('cast(node->negative, "u8")', "(u8)node->negative"),
    ('cast(node->negative, "uint8_t")', "(uint8_t)node->negative"),
    ('cast(node->negative, "long unsigned")', "(long unsigned)node->negative"),
    ('cast(node->negative, "unsigned long long")', "(unsigned long long)node->negative"),
    ('cast(node->wide, "bool")', "(_Bool)node->wide"),
    ('cast(node->wide, "unsigned char")', "(unsigned char)node->wide"),
    ('cast(&node->words, "uint32_t (*)[4]")[0][3]', "((uint32_t (*)[4])&node->words)[0][3]"),
    ('cast(&node->words, "uint32_t[4]")[1]', "(*(uint32_t (*)[4])&node->words)[1]"),
    ('cast(other, "struct OnlyInA *")->a_value', "((struct OnlyInA *)other)->a_value"),
    ('cast(other, "OnlyInA *").a_bytes[1]', "((struct OnlyInA *)other)->a_bytes[1]"),
    ('cast(other, "struct Same *")->y', "((struct Same *)other)->y"),
    ('cast(&node->payload, "union CastPayload").signed_value',
     "((union CastPayload *)&node->payload)->signed_value"),
    ('cast(dup, "struct Duplicate *")->app_marker', "((struct Duplicate *)dup)->app_marker"),
    ('cast(node->kind, "int")', "(int)node->kind"),
    ('cast(node->payload.signed_value, "i16_alias")', "(i16_alias)node->payload.signed_value"),
]
LENGTHS = [
    ('memcmp(text, "hel", n)', '$_memeq(text, "hel", n)'),
    ('memcmp(text, "hex", n - 1)', '$_memeq(text, "hex", n - 1)'),
    ('memcmp(text, "hex", n)', '$_memeq(text, "hex", n)'),
    ('memcmp(text, hex("68 65 6c 6c"), n + 1)', '$_memeq(text, "hell", n + 1)'),
    ('memcmp(text, "hel", n - n)', '$_memeq(text, "hel", 0)'),
    ('memcmp(&node->words[0], &node->words[1], n)', "$_memeq(&node->words[0], &node->words[1], n)"),
    ('memcmp(&node->words[0], &node->words[0], n * 4)',
     "$_memeq(&node->words[0], &node->words[0], n * 4)"),
    ('strncmp(text, "help", n)', '$_memeq(text, "help", n)'),
    ('strncmp(text, "help", n + 1)', '$_memeq(text, "help", n + 1)'),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require(None if shutil.which("gdb") else "gdb is not installed")
    return build_casts(tmp_path_factory.mktemp("casts-live"))["app"]


def _traced(pid: int, script: str) -> dict[str, str]:
    result = gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", "1",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    return dict(line.split(" = ", 1) for line in result.stdout.splitlines() if " = " in line)


def _gdb_values(pid: int, function: str, expressions: list[str]) -> list[str]:
    """gdb's `print` of each expression at `break function`, first token."""
    commands = [f"break {function}", "continue", *(f"print {e}" for e in expressions)]
    out = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid),
                          *(a for c in commands for a in ("-ex", c))],
                         capture_output=True, text=True, timeout=60).stdout
    values = re.findall(r"^\$\d+ = (\S+)", out, re.M)
    assert len(values) == len(expressions), out
    return values


def _number(text: str) -> str:
    return {"true": "1", "false": "0"}.get(text, text)


@pytest.mark.parametrize("pairs", [CASTS, LENGTHS], ids=["casts", "lengths"])
def test_values_equal_gdbs(app, start_target, pairs):
    target = start_target(app)
    script = "trace cast_probe { " + " ".join(f"print {gs};" for gs, _ in pairs) + " }"
    printed = _traced(target.pid, script)
    expected = _gdb_values(target.pid, "cast_probe", [g for _, g in pairs])
    assert [_number(printed[gs]) for gs, _ in pairs] == [_number(v) for v in expected]


def test_a_library_probe_takes_its_own_modules_type(app, start_target):
    """struct Duplicate is app.c's and liba.c's, each its own: in liba's
    probe the cast means liba's (gdb too: the current unit first)."""
    target = start_target(app)
    printed = _traced(target.pid, 'trace liba_probe { '
                                  'print cast(duplicate, "struct Duplicate *")->lib_value; }')
    (gdb,) = _gdb_values(target.pid, "liba_probe", ["((struct Duplicate *)duplicate)->lib_value"])
    assert printed['cast(duplicate, "struct Duplicate *")->lib_value'] == gdb == "1100"


def test_lengths_beyond_what_is_compared_are_errors(app, start_target):
    target = start_target(app)
    result = gs_cgen("trace", "-p", str(target.pid), "-s",
                     'trace cast_probe { print memcmp(text, "hel", n + 1); '
                     'print memcmp(&node->words[0], &node->words[0], n * 100); '
                     'print memcmp(text, "hel", 0 - n); '
                     'if memcmp(text, "hel", n + 1) { print "no"; } else { print "no"; } }',
                     "--max-events", "1", "--output", "plain")
    assert result.returncode == 0, result.stderr
    four = "length 4 is more than the 3 bytes this comparison can compare"
    assert result.stdout.splitlines() == [
        f'ExprError: memcmp(text, "hel", n + 1) ({four})',
        f'memcmp(text, "hel", n + 1) = <error: {four}>',
        "ExprError: memcmp(&node->words[0], &node->words[0], n * 100) (length 300 is more "
        "than the 64 bytes this comparison can compare)",
        "memcmp(&node->words[0], &node->words[0], n * 100) = <error: length 300 is more than "
        "the 64 bytes this comparison can compare>",
        'memcmp(text, "hel", 0 - n) = true',                     # negative: 0 bytes, as GhostScope
        f'ExprError: memcmp(text, "hel", n + 1) ({four})']


def test_type_errors(app, start_target):
    target = start_target(app)
    ambiguous = gs_cgen("trace", "-p", str(target.pid), "-s",
                        'trace cast_probe { print cast(other, "struct Twice *")->a_first; }',
                        "--dry-run")
    assert ambiguous.returncode == 1
    assert "error: type 'struct Twice' is ambiguous: the probe's module does not define it, " \
           "and other modules define it differently: " in ambiguous.stderr
    assert "libcasta.so (struct Twice { int a_first; int a_second; }, 8 bytes)" in ambiguous.stderr
    assert "libcastb.so (struct Twice { long int b_only; }, 8 bytes)" in ambiguous.stderr
    unknown = gs_cgen("trace", "-p", str(target.pid), "-s",
                      'trace cast_probe { print cast(other, "CastNod *")->words[0]; }',
                      "--dry-run")
    assert unknown.returncode == 1
    assert "error: unknown type 'CastNod' in cast: no loaded module's DWARF defines it" \
        in unknown.stderr
    assert "did you mean: CastNode" in unknown.stderr
