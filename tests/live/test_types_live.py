"""Live: one test per row of the rendering tables (CONTRACT.md "Rendering",
docs/rendering.md) on real uprobes — structs, unions, enums, arrays,
bitfields, floats, strings, pointers, failed reads, and the JSON form of
each. The fixture is tests/fixtures/live_types.c; every expected value below
was checked against the running fixture with gdb (`print`, `x/8xb`,
`printf "%g"`, breakpoints on process/more/compute and the locals marker)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import compile_fixture, gs_cgen, marker_line

SOURCE = "live_types.c"
LONG_TEXT = "0123456789" * 40          # g_long_buf, filled in main (gdb: x/s g_long)
ADDR = r"0x[0-9a-f]+"


@pytest.fixture(scope="module")
def types_bin(build_dir):
    return compile_fixture(build_dir, SOURCE)


@pytest.fixture
def target(types_bin, start_target):
    return start_target(types_bin, "fast")


def trace_lines(pid: int, script: str, events: int = 1, *extra: str) -> list[str]:
    result = gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", str(events),
                     "--output", "plain", *extra)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def runtime_address(binary: Path, pid: int, symbol: str) -> int:
    """Where `symbol` lives in `pid` (the same number gdb prints for &symbol):
    load base from /proc/PID/maps plus the PIE symbol value from nm."""
    nm = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    value = next(int(line.split()[0], 16) for line in nm.splitlines()
                 if line.split()[-1] == symbol)
    real = os.path.realpath(binary)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if fields[-1] == real and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16) + value
    raise AssertionError(f"{binary} is not mapped in {pid}")


# ------------------------------------------------------------------ structs

def test_struct_parameter_global_and_typedef_name(target):
    # g_item is a typedef'd anonymous struct: it takes the typedef's name.
    assert trace_lines(target.pid, "trace process { print p; print g_point; print g_item; }") == [
        "p = point { x: 3, y: 4 }",
        "g_point = point { x: 3, y: 4 }",
        "g_item = item_t { id: 7, kind: -2 }"]


def test_nested_struct_inline_with_pointer_and_char_array_members(target):
    # gdb: *r = {tl = {x = 1, y = 2}, br = {x = 10, y = 20}, label = 0x… "box",
    # tag = "tagged\000"}. A char* member stays a pointer; char[8] is a string.
    lines = trace_lines(target.pid,
                        'trace process { print *r; print g_rect; print "{:p}", r.label; }')
    label = lines[2]
    assert re.fullmatch(ADDR, label)
    expected = ("rect { tl: point { x: 1, y: 2 }, br: point { x: 10, y: 20 }, "
                f"label: {label} (const char*), tag: \"tagged\" }}")
    assert lines[:2] == [f"*r = {expected}", f"g_rect = {expected}"]


def test_struct_depth_bound(target):
    # struct level1 { level2 { level3 { level4 { level5 { v: 5 } } } } }:
    # the top-level struct is depth 1, so level5 (depth 5) is elided.
    assert trace_lines(target.pid, "trace process { print g_deep; }") == [
        "g_deep = level1 { b: level2 { c: level3 { d: level4 { e: {...} } } } }"]


# ------------------------------------------------------------------- unions

def test_union_shows_every_member_from_the_same_bytes(target):
    # i = 1 reinterpreted as float is the denormal 1.40129846e-45 (gdb), which
    # C's printf("%g") prints as 1.4013e-45 (gdb: printf "%g", g_data.f).
    assert trace_lines(target.pid, "trace process { print d; print g_data; }") == [
        "d = union Data { i: 1, f: 1.4013e-45 }",
        "g_data = union Data { i: 1, f: 1.4013e-45 }"]


# -------------------------------------------------------------------- enums

def test_enum_known_and_unnamed_values(target):
    # (the ACTIVE parameter `s` of process() is checked in the JSON test)
    assert trace_lines(target.pid, "trace more { print unk; print g_status; print g_unknown; }") \
        == ["unk = Status::<9>", "g_status = Status::ACTIVE", "g_unknown = Status::<9>"]


# ------------------------------------------------------------------- arrays

def test_arrays_flat_of_structs_and_two_dimensional(target):
    script = "trace process { print g_arr; print g_pts; print g_grid; print g_values; }"
    assert trace_lines(target.pid, script) == [
        "g_arr = [1, 2, 3, 4, 5]",
        "g_pts = [point { x: 1, y: 2 }, point { x: 3, y: 4 }, point { x: 5, y: 6 }]",
        "g_grid = [[1, 2, 3], [4, 5, 6]]",
        "g_values = [10, 20, 30, 40]"]


# ---------------------------------------------------------------- bitfields

def test_bitfields_are_extracted_and_sign_extended(target):
    # gdb: fl = {a = 5, b = -3, c = 1}; b is `signed b:4`.
    script = "trace more { print fl; print fl.a; print fl.b; print fl.c; print g_flags.b; }"
    assert trace_lines(target.pid, script) == [
        "fl = flags { a: 5, b: -3, c: 1 }", "fl.a = 5", "fl.b = -3", "fl.c = 1",
        "g_flags.b = -3"]


# ------------------------------------------------------------ float, double

def test_float_and_double_as_percent_g(target):
    # gdb: printf "%g %g %g" f, dd, big -> 3.5 -0.25 1e+10
    script = ("trace more { print f; print dd; print big; print g_float; print g_double; "
              "print g_big; }")
    assert trace_lines(target.pid, script) == [
        "f = 3.5", "dd = -0.25", "big = 1e+10", "g_float = 3.5", "g_double = -0.25",
        "g_big = 1e+10"]


# ------------------------------------------------------------------ strings

def test_char_pointer_and_char_array_strings_with_escapes(target):
    # gdb: g_greeting bytes 68 69 01 22 71 5c 00 ("hi\001\"q\\"),
    # g_tabbed "a\tb", g_buf "buffer" followed by NULs.
    script = ("trace process { print name; print g_name; print g_greeting; print g_tabbed; "
              "print g_buf; print r.label; print r.tag; }")
    assert trace_lines(target.pid, script) == [
        'name = "Alice"',
        'g_name = "Alice"',
        'g_greeting = "hi\\x01\\"q\\\\"',
        'g_tabbed = "a\\x09b"',
        'g_buf = "buffer"',
        'r.label = "box"',
        'r.tag = "tagged"']


def test_long_string_truncated_at_default_cap(target):
    # g_long is 400 bytes ("0123456789" x 40, gdb: x/s g_long): the default
    # --mem-dump-cap of 256 shows 256 characters, then the truncation mark.
    # The cap counts characters shown, as it counts bytes for {:s.N} dumps
    # (docs/rendering.md); note a 256-byte bpf_probe_read_user_str buffer
    # holds only 255 characters + NUL, so the read needs cap + 1 bytes.
    assert trace_lines(target.pid, "trace process { print g_long; }") == [
        f'g_long = "{LONG_TEXT[:256]}"... <truncated>']


# ----------------------------------------------------------------- pointers

def test_pointers_with_types_and_null(types_bin, target):
    script = ("trace more { print nullp; print vp; print bytes; print g_ptr; print g_null; "
              "print g_ip; print g_badp; }")
    point = runtime_address(types_bin, target.pid, "g_point")
    values = runtime_address(types_bin, target.pid, "g_values")
    lines = trace_lines(target.pid, script)
    # `unsigned char *` at top level is a string (docs/rendering.md); g_bytes
    # starts de ad be ef 00, so the string is those four bytes.
    assert lines == [
        "nullp = NULL (struct point*)",
        f"vp = {point:#x} (void*)",
        'bytes = "\\xde\\xad\\xbe\\xef"',
        f"g_ptr = {point:#x} (struct point*)",
        "g_null = NULL (struct point*)",
        f"g_ip = {values:#x} (int*)",
        "g_badp = 0x10 (struct point*)"]


def test_function_pointer(types_bin, target):
    # gdb: fn = (int (*)(int)) 0x… <square>
    square = runtime_address(types_bin, target.pid, "square")
    assert trace_lines(target.pid, "trace more { print fn; print g_fn; }") == [
        f"fn = {square:#x} (function*)", f"g_fn = {square:#x} (function*)"]


def test_pointer_parameters_and_dereference_with_star(types_bin, target):
    n2 = runtime_address(types_bin, target.pid, "g_n2")
    rect = runtime_address(types_bin, target.pid, "g_rect")
    values = runtime_address(types_bin, target.pid, "g_values")
    script = ("trace process { print r; print ip; print *ip; print *g_ptr; print *list; "
              "print *g_ip; }")
    assert trace_lines(target.pid, script) == [
        f"r = {rect:#x} (struct rect*)",
        f"ip = {values:#x} (int*)",
        "*ip = 10",
        "*g_ptr = point { x: 3, y: 4 }",
        f"*list = node {{ value: 1, next: {n2:#x} (struct node*) }}",
        "*g_ip = 10"]


def test_member_access_through_pointers(target):
    # gdb: r->tl.x = 1, r->br.y = 20, list->next->next->value = 3
    script = ("trace process { print r.tl.x; print r.br.y; print r.tl; print list.value; "
              "print list.next.next.value; print g_n1.next.value; print g_ptr.y; }")
    assert trace_lines(target.pid, script) == [
        "r.tl.x = 1", "r.br.y = 20", "r.tl = point { x: 1, y: 2 }", "list.value = 1",
        "list.next.next.value = 3", "g_n1.next.value = 2", "g_ptr.y = 4"]


def test_null_pointer_on_the_way(target):
    # gdb: list->next->next->next == 0x0, nullp == 0x0
    script = ("trace more { print g_n1.next.next.next.value; print nullp.x; print *nullp; "
              "print g_null.y; print g_n1.next.next.next; }")
    assert trace_lines(target.pid, script) == [
        "g_n1.next.next.next.value = <error: null pointer dereference>",
        "nullp.x = <error: null pointer dereference>",
        "*nullp = <error: null pointer dereference>",
        "g_null.y = <error: null pointer dereference>",
        "g_n1.next.next.next = NULL (struct node*)"]


def test_unreadable_address(target):
    # gdb: print *bad -> "Cannot access memory at address 0x10". A failed
    # read must not disturb the values after it, in this event or the next.
    script = ("trace more { print bad; print *bad; print f; print *g_bad; print g_badp.x; "
              "print fl.b; }")
    assert trace_lines(target.pid, script, 2) == [
        "bad = 0x10 (int*)",
        "*bad = <error: read failed at 0x10>",
        "f = 3.5",
        "*g_bad = <error: read failed at 0x10>",
        "g_badp.x = <error: read failed at 0x10>",
        "fl.b = -3"] * 2


# ------------------------------------------------------------------- locals

def test_locals_of_every_type(types_bin, target):
    line = marker_line(SOURCE, "locals")
    square = runtime_address(types_bin, target.pid, "square")
    # Values from gdb at the locals marker (`info locals`); ld.f is 3.5 from
    # i = 0x40600000, ldbl 0.1 prints as 0.1 with %g.
    script = (f"trace {SOURCE}:{line} {{ print lp; print li; print ld; print ls; print lu; "
              "print larr; print lpts; print lgrid; print lf; print lfl; print ldbl; "
              "print lname; print lbuf; print lnull; print *lptr; print *lip; print lfn; "
              "print n1.next.next.value; print n1.next.next.next.value; print *lbad; "
              "print lr.br; print lr.tag; }")
    assert trace_lines(target.pid, script) == [
        "lp = point { x: 5, y: 6 }",
        "li = item_t { id: 8, kind: 9 }",
        "ld = union Data { i: 1080033280, f: 3.5 }",
        "ls = Status::DONE",
        "lu = Status::<9>",
        "larr = [5, 4, 3, 2, 1]",
        "lpts = [point { x: 7, y: 8 }, point { x: 9, y: 10 }, point { x: 11, y: 12 }]",
        "lgrid = [[-1, -2, -3], [7, 8, 9]]",
        "lf = flags { a: 7, b: -8, c: 0 }",
        "lfl = -1.5",
        "ldbl = 0.1",
        'lname = "Bob"',
        'lbuf = "local\\x7f"',
        "lnull = NULL (struct point*)",
        "*lptr = point { x: 5, y: 6 }",
        "*lip = 4",
        f"lfn = {square:#x} (function*)",
        "n1.next.next.value = 30",
        "n1.next.next.next.value = <error: null pointer dereference>",
        "*lbad = <error: read failed at 0x10>",
        "lr.br = point { x: 3, y: 4 }",
        'lr.tag = "lt"']


def test_local_stack_pointer_matches_address_of(target):
    line = marker_line(SOURCE, "locals")
    lines = trace_lines(target.pid, f'trace {SOURCE}:{line} {{ print lptr; print "{{:p}}", &lp; }}')
    assert re.fullmatch(rf"lptr = ({ADDR}) \(struct point\*\)", lines[0])
    assert lines[0].split()[2] == lines[1]


# --------------------------------------------------------------------- JSON

def json_events(pid: int, script: str, *extra: str) -> list[dict]:
    result = gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", "1",
                     "--output", "json", *extra)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_json_structured_values(types_bin, target):
    script = ("trace process { print p; print *r; print d; print s; print g_arr; print g_grid; "
              "print g_pts; print name; print r; print g_flags; print g_double; }")
    [event] = json_events(target.pid, script)
    rect = runtime_address(types_bin, target.pid, "g_rect")
    values = {v["expr"]: v for v in event["values"]}
    assert [v["expr"] for v in event["values"]] == [
        "p", "*r", "d", "s", "g_arr", "g_grid", "g_pts", "name", "r", "g_flags", "g_double"]
    assert all(v["status"] == "ok" for v in event["values"])
    assert values["p"] == {"expr": "p", "type": "struct point", "value": {"x": 3, "y": 4},
                           "status": "ok"}
    nested = values["*r"]
    assert nested["type"] == "struct rect"
    assert nested["value"]["tl"] == {"x": 1, "y": 2}
    assert nested["value"]["br"] == {"x": 10, "y": 20}
    assert nested["value"]["tag"] == "tagged"
    assert nested["value"]["label"]["type"] == "const char*"
    assert nested["value"]["label"]["address"] > 0
    union = values["d"]
    assert union["type"] == "union Data" and union["value"]["i"] == 1
    assert union["value"]["f"] == pytest.approx(1.401298464324817e-45, rel=1e-6)
    assert values["s"]["type"] == "enum Status" and values["s"]["value"] == "Status::ACTIVE"
    assert values["g_arr"]["value"] == [1, 2, 3, 4, 5]
    assert values["g_grid"]["value"] == [[1, 2, 3], [4, 5, 6]]
    assert values["g_pts"]["value"] == [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 5, "y": 6}]
    assert values["name"]["value"] == "Alice"
    assert values["r"]["value"] == {"address": rect, "type": "struct rect*"}
    assert values["g_flags"]["value"] == {"a": 5, "b": -3, "c": 1}
    assert values["g_double"]["value"] == -0.25
    assert event["lines"][0] == "p = point { x: 3, y: 4 }"
    assert event["lines"][3] == "s = Status::ACTIVE"
    assert event["lines"][4] == "g_arr = [1, 2, 3, 4, 5]"


def test_json_status_per_value_and_explicit_cap(target):
    # --mem-dump-cap 16 cuts the 400-byte g_long to 16 characters; the
    # 5-character g_name is not affected.
    script = ("trace more { print nullp.x; print *bad; print nullp; print fl.b; print g_long; "
              "print g_name; }")
    [event] = json_events(target.pid, script, "--mem-dump-cap", "16")
    null_deref, read_error, null_pointer, ok, long_text, short_text = event["values"]
    assert null_deref["status"] == "null_deref" and null_deref["value"] is None
    assert isinstance(null_deref["error"], str) and null_deref["error"]
    assert read_error["status"] == "read_error" and read_error["value"] is None
    assert "0x10" in read_error["error"]
    assert null_pointer == {"expr": "nullp", "type": "struct point*",
                            "value": {"address": 0, "type": "struct point*"}, "status": "ok"}
    assert ok == {"expr": "fl.b", "type": "int", "value": -3, "status": "ok"}
    assert long_text["status"] == "truncated" and long_text["value"] == "0123456789012345"
    assert short_text["status"] == "ok" and short_text["value"] == "Alice"
    assert event["lines"] == [
        "nullp.x = <error: null pointer dereference>",
        "*bad = <error: read failed at 0x10>",
        "nullp = NULL (struct point*)",
        "fl.b = -3",
        'g_long = "0123456789012345"... <truncated>',
        'g_name = "Alice"']
