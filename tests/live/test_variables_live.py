"""`print $args;` / `print $locals;` and `gs-cgen info --lines`, live, with
gdb as the oracle (issue #12, items 2 and 4).

gdb runs tests/fixtures/variables.c to each breakpoint (tests/gdb_frames.py:
every symbol of the frame's blocks, innermost first, as `info args` and
`info locals` list them) and gs-cgen traces the same first hit: the names
must be the same, in the same order, and each value the same (compared by
meaning: gdb writes `0x... "Alice"`, gs-cgen `"Alice"`; pointers to the
stack differ between runs, so only their nullness is compared).
The availability map's ✓ and · must be what gdb's `info locals` shows at
each address of each line: a value, or `<optimized out>` / not listed."""
from __future__ import annotations

import json
import re

import pytest

from tests.gdb_oracle import gdb_frames
from tests.live.conftest import compile_fixture, gs_cgen, marker_line, our_uprobes

SOURCE = "variables.c"
BUILDS = {"O0": "-g -O0 -fPIE -pie", "O2": "-g -O2 -fPIE -pie"}


@pytest.fixture(params=sorted(BUILDS))
def binary(request, build_dir):
    return compile_fixture(build_dir, SOURCE, BUILDS[request.param],
                           output=f"variables-{request.param}")


def _first_events(binary, specs) -> dict[str, dict]:
    script = "\n".join(f"trace {spec} {{ print $args; print $locals; }}" for spec in specs)
    result = gs_cgen("trace", "--output", "json", "-s", script, "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    first: dict[str, dict] = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            first.setdefault(event["trace"], event)
    return first


def _same_value(ours: dict, gdb: dict) -> bool:
    if gdb["optimized_out"]:
        return ours["status"] == "optimized_out"
    if ours["status"] != "ok":
        return False
    value, text = ours["value"], gdb["value"]
    if isinstance(value, dict) and "address" in value:           # a pointer
        return (value["address"] == 0) == (text in ("0x0", "0"))
    if isinstance(value, str) and ours["type"].endswith("char*"):
        quoted = re.search(r'"(.*)"$', text)
        return quoted is not None and quoted.group(1) == value
    if isinstance(value, str):                                    # an enum: mode::MODE_IDLE
        return value.split("::")[-1] == text
    return str(value) == text


def test_args_and_locals_are_gdbs_info_args_and_info_locals(binary):
    specs = ["compute", f"{SOURCE}:{marker_line(SOURCE, 'inner')}",
             f"{SOURCE}:{marker_line(SOURCE, 'after')}", "nothing"]
    found = gdb_frames(binary, specs)
    frames = {frame["spec"]: frame for frame in found}
    assert sorted(frame["spec"] for frame in found) == sorted(specs)   # one location each
    events = _first_events(binary, specs)
    assert set(events) == set(specs)
    for spec in specs:
        symbols = [s for block in frames[spec]["blocks"] for s in block["symbols"]]
        gdb_args = [s for s in symbols if s["argument"]]
        gdb_locals = [s for s in symbols if not s["argument"]]
        event = events[spec]
        values = event["values"]
        assert [v["expr"] for v in values] == [s["name"] for s in gdb_args + gdb_locals], spec
        for ours, theirs in zip(values, gdb_args + gdb_locals):
            assert _same_value(ours, theirs), (spec, ours, theirs)
        args_line, locals_line = event["lines"]
        assert args_line.startswith("$args: ") and locals_line.startswith("$locals: ")
        if not gdb_args:
            assert args_line == "$args: (none)"
        if not gdb_locals:
            assert locals_line == "$locals: (none)"
    # the shadowed `sum` is listed twice at the inner line, innermost first
    inner = events[specs[1]]["values"]
    assert [v["expr"] for v in inner if v["expr"] == "sum"] == ["sum", "sum"]
    assert our_uprobes() == []


def test_availability_map_matches_gdb_at_every_line(binary):
    result = gs_cgen("info", "-t", str(binary), "function", "compute", "--lines",
                     "--output", "json")
    assert result.returncode == 0, result.stderr
    (found,) = json.loads(result.stdout)["maps"]
    names = [column["name"] for column in found["variables"]]
    rows = found["lines"]
    assert len(rows) >= 5
    specs = [f"{SOURCE}:{row['line']}" for row in rows]
    gdb = {(frame["spec"], frame["address"]): frame for frame in gdb_frames(binary, specs)}
    compared = 0
    for row, spec in zip(rows, specs):
        for address in row["addresses"]:
            frame = gdb.get((spec, address))
            assert frame is not None, f"gdb's break {spec} has no location at 0x{address:x}"
            compared += _compare_row(row, address, names, frame)
    assert compared >= len(rows) * 3
    plain = gs_cgen("info", "-t", str(binary), "function", "compute", "--lines")
    assert plain.returncode == 0 and "availability by line" in plain.stdout
    assert all(len(line) <= 80 for line in plain.stdout.splitlines() if str(binary) not in line)


def _compare_row(row, address: int, names: list[str], frame) -> int:
    """Each variable's ✓/· at `address` against gdb there; a name gdb lists
    twice (shadowed) is compared as a multiset. Returns how many compared."""
    symbols = [s for block in frame["blocks"] for s in block["symbols"]]
    gdb_readable: dict[str, list[bool]] = {}
    for symbol in symbols:
        gdb_readable.setdefault(symbol["name"], []).append(not symbol["optimized_out"])
    ours: dict[str, list[bool]] = {}
    for index, cell in enumerate(row["cells"]):
        (at,) = [a for a in cell["at"] if a["address"] == address]
        if at["status"] == "partly":
            continue
        if at["how"] == "not in scope":
            continue                   # not listed by us: gdb must not list a readable one more
        ours.setdefault(names[index], []).append(at["status"] == "readable")
    compared = 0
    for name, readable in ours.items():
        assert sorted(readable) == sorted(gdb_readable.get(name, [])), \
            (row["line"], hex(address), name, readable, gdb_readable.get(name))
        compared += len(readable)
    # a variable gdb reads here is in scope for us too
    for name, readable in gdb_readable.items():
        assert name in ours or not any(readable), (row["line"], hex(address), name)
    return compared
