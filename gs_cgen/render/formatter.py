"""A render plan's %-format, compiled once into a function of the event's
unpacked fields.

`fmt % tuple(...)` scans its whole template for every event, and a JSON
event's template is ~180 characters of literal text around five numbers:
~0.9 µs an event, a third of what the reader spends on one. The same text
built by one f-string (its literal pieces joined, its numbers formatted in
place) takes ~0.6 µs. The generated source names only its arguments and
field indices: every literal piece and converter is bound as a default
argument, so no text of a script ever becomes code.
"""
from __future__ import annotations

import re
from typing import Callable

_CONVERSION = re.compile(r"%(.)", re.DOTALL)
# %-conversion -> f-string format spec, for the conversions render plans use
_SPECS = {"d": "", "s": "", "x": ":x", "X": ":X"}


def compile_format(fmt: str, indices, converters=()) -> Callable[[tuple], str]:
    """fields -> fmt % (fields[i] for i in indices), each value passed
    through its converter first where `converters` has one (not None)."""
    literals, specs = _split(fmt)
    if len(specs) != len(indices):
        raise ValueError(f"{fmt!r} has {len(specs)} conversions for {len(indices)} values")
    converters = tuple(converters) or (None,) * len(indices)
    bound: dict[str, object] = {}
    body = []
    for i, literal in enumerate(literals):
        if literal:
            bound[f"L{i}"] = literal
            body.append(f"{{L{i}}}")
        if i == len(specs):
            break
        value = f"f[{int(indices[i])}]"
        if converters[i] is not None:
            bound[f"C{i}"] = converters[i]
            value = f"C{i}({value})"
        body.append(f"{{{value}{specs[i]}}}")
    parameters = "".join(f", {name}={name}" for name in bound)
    return eval(f"lambda f{parameters}: f'{''.join(body)}'", {}, bound)  # noqa: S307 - see above


def _split(fmt: str) -> tuple[list[str], list[str]]:
    """(literal pieces, one more than the conversions; the conversions'
    f-string specs), `%%` unescaped into the literals."""
    literals, specs, current, pos = [], [], [], 0
    for found in _CONVERSION.finditer(fmt):
        current.append(fmt[pos:found.start()])
        pos = found.end()
        code = found.group(1)
        if code == "%":
            current.append("%")
            continue
        if code not in _SPECS:
            raise ValueError(f"unsupported conversion %{code} in {fmt!r}")
        literals.append("".join(current))
        specs.append(_SPECS[code])
        current = []
    current.append(fmt[pos:])
    literals.append("".join(current))
    return literals, specs
