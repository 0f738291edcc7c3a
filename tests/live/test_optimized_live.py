"""-O2 code: a parameter whose register the function overwrote is read
from the caller's call-site description (gdb: `a=a@entry=N`)."""
from __future__ import annotations

import json

from tests.live.conftest import FIXTURES, compile_fixture, gs_cgen


def test_entry_value_from_the_call_site(build_dir, start_target):
    binary = compile_fixture(build_dir, "entry_values.c", "-g -O2 -fPIE -pie")
    target = start_target(binary)
    line = next(n for n, text in enumerate((FIXTURES / "entry_values.c").read_text()
                                            .splitlines(), 1) if "g += s;" in text)
    result = gs_cgen("trace", "-p", str(target.pid), "-s",
                     f'trace entry_values.c:{line} {{ print "{{}} {{}} {{}}", a, b, s; }}',
                     "--max-events", "5", "--output", "plain")
    assert result.returncode == 0, result.stderr
    for text in result.stdout.splitlines():
        a, b, s = text.split(" ", 2)
        # main calls work(i % 7 + 1, i * 100L, &p): a follows from b
        assert int(a) == int(b) // 100 % 7 + 1, text
        assert s == "<OPTIMIZED_OUT>"            # gdb: s = <optimized out>


def test_members_of_a_struct_passed_in_a_register(build_dir, start_target):
    binary = compile_fixture(build_dir, "struct_in_register.c", "-g -O2 -fPIE -pie")
    target = start_target(binary)
    result = gs_cgen("trace", "-p", str(target.pid), "-s",
                     'trace take { print p; print "{} {} {} {}", p.x, p.y, p.z, k; }',
                     "--max-events", "3", "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for whole, members in zip(lines[::2], lines[1::2]):
        x, y, z, k = map(int, members.split())
        # main: p = { -7 - i % 3, -300, 200 }, k = i % 5 (gdb: p = {x = -8, y = -300, z = 200})
        assert (y, z) == (-300, 200) and x in (-7, -8, -9) and 0 <= k <= 4
        assert whole == f"p = pt {{ x: {x}, y: -300, z: 200 }}"


def test_an_unreadable_float_parameter_does_not_cost_the_others(build_dir, start_target):
    """-O2: after note(), `celsius` is DW_OP_entry_value(DW_OP_regval_type
    xmm0) (issue #7.6; the whole script used to fail with an internal
    error). It is unavailable with that reason; `id` and `bucket` print
    exactly: main calls record(i * 0.5, 40 + i % 3), bucket = 5 * i."""
    binary = compile_fixture(build_dir, "float_param.c", "-g -O2 -fPIE -pie")
    target = start_target(binary)
    line = next(n for n, text in enumerate((FIXTURES / "float_param.c").read_text()
                                            .splitlines(), 1) if "g_sink += id;" in text)
    script = f"trace float_param.c:{line} {{ print celsius; print id; print bucket; }}"
    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--max-events", "4",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 12, result.stdout
    reason = "unsupported: entry value in SIMD register xmm0 (not in pt_regs)"
    for celsius, id_, bucket in zip(lines[::3], lines[1::3], lines[2::3]):
        assert celsius == f"celsius = <error: {reason}>"
        i = int(bucket.removeprefix("bucket = ")) // 5
        assert bucket == f"bucket = {5 * i}" and id_ == f"id = {40 + i % 3}", (id_, bucket)

    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--max-events", "1",
                     "--output", "json")
    assert result.returncode == 0, result.stderr
    celsius, id_, bucket = json.loads(result.stdout.splitlines()[0])["values"]
    assert celsius == {"expr": "celsius", "type": "double", "value": None,
                       "status": "unavailable", "error": f"<error: {reason}>", "reason": reason}
    assert id_["status"] == "ok" and id_["value"] == 40 + bucket["value"] // 5 % 3
