"""-O2 code: a parameter whose register the function overwrote is read
from the caller's call-site description (gdb: `a=a@entry=N`)."""
from __future__ import annotations

import json
import shutil

from tests.gdb_oracle import gdb_values
from tests.live.conftest import FIXTURES, compile_fixture, gs_cgen, require


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


def test_a_value_computed_from_an_unreadable_one_says_why(build_dir, start_target):
    """A value, or a condition, built on `celsius` (unavailable: in xmm0)
    carries celsius's reason; it was `<error: None>` and `ExprError: ...
    (unavailable at 0x0)` (GhostScope's clang entry_value tests)."""
    binary = compile_fixture(build_dir, "float_param.c", "-g -O2 -fPIE -pie")
    target = start_target(binary)
    line = next(n for n, text in enumerate((FIXTURES / "float_param.c").read_text()
                                            .splitlines(), 1) if "g_sink += id;" in text)
    script = (f'trace float_param.c:{line} {{ let c = cast(celsius, "long") + id; '
              f'print "{{}}", c; if c > 0 {{ print "positive"; }} }}')
    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--max-events", "1",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    reason = "unsupported: entry value in SIMD register xmm0 (not in pt_regs)"
    assert result.stdout.splitlines() == [f"<error: {reason}>", f"ExprError: c > 0 ({reason})"]


def test_float_arguments_from_constant_call_sites(build_dir, start_target):
    """-O2: f and d arrive in xmm0/xmm1, which no probe reads. At mix()'s
    entry, and where DWARF gives f as its entry value, the caller's call
    site says what it passed when that was a constant; gdb is the oracle for
    each call (k tells the calls apart). The third call computes f: it is
    unavailable, never a guess; after note(), d is in xmm1 itself."""
    binary = compile_fixture(build_dir, "float_args.c", "-g -O2 -fPIE -pie")
    line = next(n for n, text in enumerate((FIXTURES / "float_args.c").read_text()
                                            .splitlines(), 1) if "LINE: after the call" in text)
    specs = {"entry": "mix", "after": f"float_args.c:{line}"}
    oracle = {(spec, values[2]): values[:2]
              for spec, values in gdb_values(binary, [(s, ["f", "d", "k"]) for s in specs.values()], 12)}
    assert oracle[("mix", "3")] == ["0.75", "-2.5"] and oracle[("mix", "7")] == ["1.5", "4"]
    target = start_target(binary)
    script = " ".join(f'trace {spec} {{ print "{kind}|{{}}|{{}}|{{}}", f, d, k; }}'
                      for kind, spec in specs.items())
    result = gs_cgen("trace", "-p", str(target.pid), "-s", script, "--max-events", "12",
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    simd_d = "<error: unsupported: value in SIMD register xmm1 (not in pt_regs)>"
    seen = set()
    for text in result.stdout.splitlines():
        kind, f, d, k = text.split("|")
        gdb_f, gdb_d = oracle[(specs[kind], k)]
        if k == "1":
            assert f == "<OPTIMIZED_OUT>", text       # gdb: the computed i * 0.5 (entry) / <optimized out>
        else:
            assert f == gdb_f, (text, gdb_f)
        assert d == (gdb_d if kind == "entry" else simd_d), (text, gdb_d)
        seen.add((kind, k))
    assert {("entry", "3"), ("entry", "7"), ("after", "3"), ("after", "7")} <= seen, result.stdout


def test_a_condition_on_parameters_gdb_has_as_optimized_out(build_dir):
    """GhostScope's `let denom = b - a - 0x5; if denom == 0 || a / denom > 0`
    on -O3 code: at the inlined copy's breakpoint gdb prints a and b as
    `<optimized out>`, so the condition cannot be decided and is an
    ExprError naming them (before: `(optimized out at 0x0)`, an address no
    read was made at); printed, each is <OPTIMIZED_OUT>, as gdb's."""
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = compile_fixture(build_dir, "o3_guarded_division.c", "-g -O3 -no-pie")
    script = ("trace combine { let denom = b - a - 0x5; print a; print b; "
              'if denom == 0 || a / denom > 0 { print "OR_OK"; } '
              'if denom != 0 && a / denom > 0 { print "AND_BAD"; } }')
    result = gs_cgen("trace", "--max-events", "3", "--output", "plain", "-s", script,
                     "--", str(binary))
    assert result.returncode == 0, result.stderr
    oracle = gdb_values(binary, [("combine", ("a", "b"))], 3)      # gdb's two locations
    assert [values for _, values in oracle] == [["<optimized out>"] * 2] * 3
    assert result.stdout.splitlines() == [
        "a = <OPTIMIZED_OUT>", "b = <OPTIMIZED_OUT>",
        "ExprError: denom == 0 || a / denom > 0 (b, a optimized out at this PC)",
        "ExprError: denom != 0 && a / denom > 0 (b, a optimized out at this PC)"] * 3
