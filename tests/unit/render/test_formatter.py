"""A compiled format (render/formatter.py) writes exactly what the
%-format it stands for writes, whatever the literal text around the
values: quotes, braces, backslashes, newlines, `%%`, any character."""
from __future__ import annotations

import random

import pytest

from gs_cgen.render.formatter import compile_format

_ALPHABET = "ab {}{{}}'\"\\\n\t\x00\xe9\u20ac\U0001f600:,[]()=fL0C0"
_CONVERSIONS = ("%d", "%s", "%x", "%X", "0x%x")


def _random_case(rng: random.Random):
    pieces, indices, converters, values = [], [], [], []
    fields = tuple(rng.choice((0, 1, -1, 255, -(2 ** 63), 2 ** 64 - 1, 1234567890123456))
                   for _ in range(6))
    for _ in range(rng.randrange(0, 6)):
        pieces.append("".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 8)))
                      .replace("%", "%%"))
        if rng.random() < 0.2:
            pieces.append("%%")
        conversion = rng.choice(_CONVERSIONS)
        index = rng.randrange(len(fields))
        convert = None
        if conversion == "%s" and rng.random() < 0.5:
            convert = lambda n: f"<{n}>"                        # noqa: E731
        pieces.append(conversion)
        indices.append(index)
        converters.append(convert)
    pieces.append("".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 8))).replace("%", "%%"))
    fmt = "".join(pieces)
    for index, convert in zip(indices, converters):
        values.append(convert(fields[index]) if convert else fields[index])
    return fmt, tuple(indices), tuple(converters), fields, tuple(values)


@pytest.mark.parametrize("seed", range(40))
def test_the_same_text_as_the_percent_format(seed):
    rng = random.Random(seed)
    for _ in range(50):
        fmt, indices, converters, fields, values = _random_case(rng)
        assert compile_format(fmt, indices, converters)(fields) == fmt % values, fmt


def test_a_template_without_values_and_one_without_converters():
    assert compile_format("100%% {done}\n", ())(()) == "100% {done}\n"
    head = '{"trace": "t.c:3", "pid": %d, "tid": %d, "lines": ['
    assert compile_format(head, (2, 0))((5, 6, 7)) == head % (7, 5)


def test_templates_it_does_not_take_are_refused():
    with pytest.raises(ValueError, match="conversions"):
        compile_format("%d %d", (0,))
    with pytest.raises(ValueError, match="unsupported conversion %f"):
        compile_format("%f", (0,))
