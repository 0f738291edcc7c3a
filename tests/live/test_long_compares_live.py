"""Comparisons with literals far longer than the 64 bytes two target
buffers can be compared over: compared whole, with fixed and run-time
lengths (they used to be cut to 64 bytes and called equal). The target's
string is 599 'x' (tests/fixtures/long_strings.c), so each expected truth
follows from the literal alone; strcmp-style truth is what C's
strncmp(...) == 0 would say."""
from __future__ import annotations

from tests.live.conftest import compile_fixture, gs_cgen

X = "x" * 510


def test_long_literals_are_compared_whole(build_dir, start_target):
    binary = compile_fixture(build_dir, "long_strings.c")
    target = start_target(binary)
    script = ("trace compare_probe { let n = 501; "
              f'print starts_with(text, "{X}"); '
              f'print starts_with(text, "{X[:100]}y"); '
              f'print strncmp(text, "{X[:500]}yyyyy", n - 1); '
              f'print strncmp(text, "{X[:500]}yyyyy", n); '
              f'print strncmp(text, "{X[:503]}y", n + 3); '
              f'print memcmp(text, "{X[:300]}", n - 300); '
              f'if text == "{X[:509]}" {{ print "equal"; }} else {{ print "differs"; }} }}')
    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--max-events", "1",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    values = [line.rsplit(" = ", 1)[-1] for line in result.stdout.splitlines()]
    assert values == ["true", "false", "true", "false", "false", "true", "differs"]
