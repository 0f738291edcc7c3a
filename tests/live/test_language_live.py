"""Live: the script language on real uprobes — indexing, `*`/`&`, pointer
arithmetic, cast, arithmetic/bitwise/comparison operators with C integer
promotions, short-circuit logic, literals, `let` and its errors, if/else
chains, special variables, string/memory builtins, C-string equality,
format specifiers and dumps, ExprError soft aborts, and untrusted script
text that must not change the generated C.

The fixture is tests/fixtures/live_types.c. Every expected number was
computed by gdb at a breakpoint on the probed function (gdb evaluates C
expressions with C's promotions), e.g. `print u < neg` -> 1,
`print (neg-a)%b` -> -3, `print l*ul` -> 18446744073709551601."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import compile_fixture, gs_cgen

SOURCE = "live_types.c"
LONG_TEXT = "0123456789" * 40          # g_long (gdb: x/s g_long)


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
    """Load base from /proc/PID/maps + nm's PIE value: what gdb prints for &symbol."""
    nm = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    value = next(int(line.split()[0], 16) for line in nm.splitlines()
                 if line.split()[-1] == symbol)
    real = os.path.realpath(binary)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if fields[-1] == real and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16) + value
    raise AssertionError(f"{binary} is not mapped in {pid}")


def printed(block: str, pairs: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """A `trace block { print e1; print e2; ... }` script and its expected lines."""
    script = f"trace {block} {{ " + " ".join(f"print {expr};" for expr, _ in pairs) + " }"
    return script, [f"{expr} = {value}" for expr, value in pairs]


# --------------------------------------------------------- access operators

def test_index_with_literal_and_expression(target):
    # compute(): idx = 2. gdb: g_arr[idx+1] = 4, g_pts[2].y = 6, g_values[2] = 30
    script, expected = printed("compute", [
        ("g_arr[2]", "3"), ("g_arr[idx + 1]", "4"), ("g_grid[1][2]", "6"),
        ("g_pts[idx].y", "6"), ("g_values[idx]", "30"), ("g_pts[1]", "point { x: 3, y: 4 }")])
    assert trace_lines(target.pid, script) == expected


def test_dereference_and_address_of(types_bin, target):
    point = runtime_address(types_bin, target.pid, "g_point")
    rect = runtime_address(types_bin, target.pid, "g_rect")
    values = runtime_address(types_bin, target.pid, "g_values")
    script = ('trace process { print *ip; print &g_point; print "{:p} {:p}", &g_point, g_ptr; '
              'print "{:p} {:p}", &r.br, r; print "{:p}", &g_rect.tag; print "{:p}", &g_values[1]; }')
    # gdb: &r->br = g_rect+8, &g_rect.tag = g_rect+24 (sizeof(struct rect) = 32)
    assert trace_lines(target.pid, script) == [
        "*ip = 10",
        f"&g_point = {point:#x} (struct point*)",
        f"{point:#x} {point:#x}",
        f"{rect + 8:#x} {rect:#x}",
        f"{rect + 24:#x}",
        f"{values + 4:#x}"]


def test_pointer_arithmetic_is_scaled_by_pointee_size(types_bin, target):
    values = runtime_address(types_bin, target.pid, "g_values")
    # gdb: *(ip+1) = 20, *(ip+2) = 30, ip+1 = g_values+4
    script = ('trace process { print *(ip + 1); print *(ip + 2); '
              'print "{:p} {:p} {:p}", ip + 1, ip + 3, &g_values[3]; '
              'print "{:p} {:p}", cast(ip, "struct point *") + 1, cast(ip, "char *") + 3; }')
    assert trace_lines(target.pid, script) == [
        "*(ip + 1) = 20",
        "*(ip + 2) = 30",
        f"{values + 4:#x} {values + 12:#x} {values + 12:#x}",
        f"{values + 8:#x} {values + 3:#x}"]


def test_cast(types_bin, target):
    point = runtime_address(types_bin, target.pid, "g_point")
    # gdb: *(struct point *)vp = {x = 3, y = 4}; (unsigned char)g_magic = 65;
    # (unsigned int)fl.b = 4294967293
    script, expected = printed("more", [
        ('cast(vp, "struct point *")', f"{point:#x} (struct point*)"),
        ('*cast(vp, "struct point *")', "point { x: 3, y: 4 }"),
        ('cast(vp, "struct point *").y', "4"),
        ('cast(g_magic, "unsigned char")', "65"),
        ('cast(fl.b, "unsigned int")', "4294967293"),
        ('cast(unk, "int")', "9")])
    assert trace_lines(target.pid, script) == expected


# -------------------------------------------------------------- operators

def test_arithmetic_and_bitwise_operators(target):
    # compute(a=100, b=7, neg=-1, sh=-300); values from gdb. Division and
    # remainder truncate toward zero as in C (not Python's floor).
    script, expected = printed("compute", [
        ("a + b", "107"), ("a - b", "93"), ("a * b", "700"), ("a / b", "14"), ("a % b", "2"),
        ("a & b", "4"), ("a | b", "103"), ("a ^ b", "99"), ("~a", "-101"), ("a << 2", "400"),
        ("a >> 2", "25"), ("(neg - a) / b", "-14"), ("(neg - a) % b", "-3"),
        ("neg >> 1", "-1"), ("-a", "-100"), ("sh * a", "-30000"), ("(a + b) * 2 - b", "207")])
    assert trace_lines(target.pid, script) == expected


def test_comparisons_and_arithmetic_use_c_integer_promotions(target):
    # compute(u=1u, neg=-1, l=-5L, ul=3UL, uc=200, sc=-56, b=7). gdb:
    #   u > neg -> 0 (neg converts to 4294967295), u < neg -> 1,
    #   l < u -> 1 (long holds every unsigned int), ul > neg -> 0,
    #   u - b -> 4294967290 (unsigned int), uc + sc -> 144 (int),
    #   ~u -> 4294967294, ~uc -> -201, l * ul -> 18446744073709551601.
    script, expected = printed("compute", [
        ("u > neg", "false"), ("u < neg", "true"), ("l < u", "true"), ("ul > neg", "false"),
        ("sc < uc", "true"), ("neg == u", "false"), ("u - b", "4294967290"),
        ("uc + sc", "144"), ("~u", "4294967294"), ("~uc", "-201"),
        ("l * ul", "18446744073709551601"), ("a >= 100", "true"), ("a <= 99", "false"),
        ("b != 7", "false")])
    assert trace_lines(target.pid, script) == expected


# Operands of compute() as the fixture passes them, and expressions whose
# value depends on converting the operands (not just the result) to the
# common type; expected values come from gcc.
COMPUTE_ARGS = ("int a = 100, b = 7; unsigned int u = 1u; int neg = -1; long l = -5L; "
                "unsigned long ul = 3UL; unsigned char uc = 200; signed char sc = -56;")
CONVERTING = ["(u - 2) % neg", "neg / (u + 1)", "neg % (u + 6)", "neg >> 1", "(u - 2) >> 1",
              "sc / 3", "sc % 5", "uc / sc", "neg / l", "neg % ul", "l / ul", "l % 3",
              "(u - 2) / neg", "neg * neg % u"]


def gcc_values(expressions: list[str], tmp_path: Path) -> list[str]:
    """Each expression's value as gcc computes it, printed by its C type."""
    lines = "".join(f"    printf(FMT({e}), ({e})); putchar('\\n');\n" for e in expressions)
    source = tmp_path / "expect.c"
    source.write_text(
        "#include <stdio.h>\n"
        '#define FMT(x) _Generic((x), int: "%d", unsigned int: "%u", long: "%ld", '
        'unsigned long: "%lu")\n'
        f"int main(void) {{\n    {COMPUTE_ARGS}\n{lines}    return 0;\n}}\n")
    subprocess.run(["gcc", "-w", "-o", str(tmp_path / "expect"), str(source)], check=True)
    return subprocess.run([str(tmp_path / "expect")], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_arithmetic_converts_operands_as_gcc_does(target, tmp_path):
    """u32 % i32 gave 4294967295 where C gives 0 (issue #9)."""
    script, _ = printed("compute", [(e, "") for e in CONVERTING])
    expected = [f"{e} = {v}" for e, v in zip(CONVERTING, gcc_values(CONVERTING, tmp_path))]
    assert trace_lines(target.pid, script) == expected


def test_enumeration_constants(target):
    """gdb at process(): print s == ACTIVE -> 1, print DONE -> DONE,
    print DONE + 1 -> 8, print s == IDLE -> 0."""
    script = ('trace process { print s == ACTIVE; print DONE; print DONE + 1; '
              'if s == IDLE { print "idle"; } else if s == ACTIVE { print "active"; } }')
    assert trace_lines(target.pid, script) == [
        "s == ACTIVE = true", "DONE = Status::DONE", "DONE + 1 = 8", "active"]


def test_integer_literals(target):
    script, expected = printed("compute", [
        ("0x1F + 0o17 + 0b1010 + 1_000", "1056"), ("0xFF_FF", "65535"),
        ("0b1111_0000 | 0x0F", "255"), ("a == 0x64", "true"), ("a == 0o144", "true"),
        ("a == 0b110_0100", "true")])
    assert trace_lines(target.pid, script) == expected


def test_logical_operators_short_circuit_without_expr_error(target):
    # more(): nullp == NULL and bad == (int *)0x10, so `nullp.x` and `*bad`
    # would fail to read; short-circuit must keep them from being evaluated.
    script = ("trace more { print (nullp != 0) && (nullp.x == 1); "
              "print (nullp == 0) || (*bad == 1); print !(unk == 9); "
              "print (fl.a == 5) && (fl.b == -3); "
              'if 0 && *bad == 1 { print "then"; } else { print "else"; } '
              'if nullp != 0 && nullp.x == 1 { print "x"; } else { print "guarded"; } '
              'if 1 || *bad == 1 { print "or"; } }')
    assert trace_lines(target.pid, script) == [
        "(nullp != 0) && (nullp.x == 1) = false",
        "(nullp == 0) || (*bad == 1) = true",
        "!(unk == 9) = false",
        "(fl.a == 5) && (fl.b == -3) = true",
        "else", "guarded", "or"]


# -------------------------------------------------------------------- let

def test_let_bindings_and_block_scopes(target):
    script = ("trace compute { let n = a * 2; let m = n + b; print n; print \"{}\", m; "
              "if m > 200 { let k = m - 200; print k; } else { let k = 0; print k; } "
              "let k = 1; print k; }")
    assert trace_lines(target.pid, script) == ["n = 200", "207", "k = 7", "k = 1"]


def test_alias_variables_bind_dwarf_expressions(types_bin, target):
    """GhostScope's alias variables: `let a = g_pts` names the array itself
    (index it, take its address), `let p = &g_buf[0]` a pointer to dump.
    gdb: g_pts[1] = {x = 3, y = 4}, g_pts[2] = {x = 5, y = 6}, g_rect.tl.x = 1,
    x/4xb g_buf -> 62 75 66 66."""
    pts = runtime_address(types_bin, target.pid, "g_pts")
    script = ('trace compute { let a = g_pts; let p = &g_buf[0]; let r = g_rect; '
              'print a[1]; print a[g_arr[0] + 1]; print "{:p}", &a; print "{:x.4}", p; '
              'print r.tl.x; print "{}", a[0].y + r.br.y; }')
    assert trace_lines(target.pid, script) == [
        "a[1] = point { x: 3, y: 4 }", "a[g_arr[0] + 1] = point { x: 5, y: 6 }",
        f"{pts:#x}", "62 75 66 66", "r.tl.x = 1", "22"]


def test_pointers_have_no_order(types_bin):
    result = gs_cgen("trace", "-t", str(types_bin), "--emit-c", "-s",
                     "trace more { print nullp < vp; }")
    assert result.returncode == 1
    assert "pointers can only be compared with == and !=" in result.stderr


def test_a_script_string_variable_prints_like_a_c_string(target):
    script = 'trace compute { let s = "say \\"hi\\""; print s; print "{}|{}", s, a; }'
    assert trace_lines(target.pid, script) == ['s = "say \\"hi\\""', 'say "hi"|100']


@pytest.mark.parametrize("body, position, message", [
    ("    let x = 1;\n    x = 2;\n", "3:5",
     "Assignment is not supported: variables are immutable. Use 'let a = ...' to bind once."),
    ("    let x = 1;\n    let x = 2;\n", "3:5",
     "Redeclaration in the same scope is not allowed: 'x'"),
    ("    let x = 1;\n    if a > 0 { let x = 2; }\n", "3:16",
     "Shadowing is not allowed for immutable variables: 'x'"),
    ("    if a > 0 { let y = 1; }\n    print y;\n", "3:11",
     "Use of variable 'y' outside of its scope"),
], ids=["assignment", "redeclaration", "shadowing", "out-of-scope"])
def test_let_errors_name_line_and_column(types_bin, tmp_path, body, position, message):
    script = tmp_path / "bad.gs"
    script.write_text("trace compute {\n" + body + "}\n")
    result = gs_cgen("trace", "-t", str(types_bin), "-f", str(script), "--max-events", "1",
                     "--output", "plain", timeout=30)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == f"{script}:{position}: error: {message}"
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- if/else

def test_if_else_if_else(target):
    script = ('trace compute { '
              'if a > 1000 { print "big"; } else if a > 50 { print "medium"; } '
              'else { print "small"; } '
              'if a > 1000 { print "no"; } '
              'if b == 0 { print "zero"; } else if b == 1 { print "one"; } '
              'else { print "many {}", b; } '
              'if a > 0 { if b > 0 { print "both"; } } }')
    assert trace_lines(target.pid, script, 2) == ["medium", "many 7", "both"] * 2


# -------------------------------------------------------- special variables

def test_special_variables(target):
    pid = target.pid
    script = ('trace compute { print "{} {} {} {}", $pid, $tid, $host_pid, $input_pid; '
              f'if $pid == {pid} {{ print "mine"; }} else {{ print "other"; }} '
              'print $timestamp > 0; }')
    assert trace_lines(pid, script) == [f"{pid} {pid} {pid} {pid}", "mine",
                                        "$timestamp > 0 = true"]


# --------------------------------------------------------------- builtins

def test_strncmp_and_starts_with(target):
    # process(): name = "Alice", r->label = "box", g_greeting = "hi\001\"q\\",
    # g_buf = "buffer" (gdb). True means the bytes are equal (GhostScope).
    script, expected = printed("process", [
        ('strncmp(name, "Alixx", 3)', "true"), ('strncmp(name, "Bob", 3)', "false"),
        ('starts_with(name, "Al")', "true"), ('starts_with(name, "Alicia")', "false"),
        ('starts_with(r.label, "bo")', "true"), ('!strncmp(g_greeting, "hi", 2)', "false"),
        ('strncmp(g_buf, "buffer", 6)', "true")])
    assert trace_lines(target.pid, script) == expected


def test_memcmp_with_hex(target):
    # gdb: x/8xb g_bytes -> de ad be ef 00 01 7f 41; g_arr = {1, 2, 3, 4, 5}
    script, expected = printed("more", [
        ('memcmp(bytes, hex("de ad be ef"), 4)', "true"),
        ('memcmp(bytes, hex("DE AD BE EE"), 4)', "false"),
        ('memcmp(g_bytes, hex("de ad be ef 00 01 7f 41"), 8)', "true"),
        ("memcmp(&g_arr[0], &g_arr[0], 8)", "true"),
        ("memcmp(&g_arr[0], &g_arr[1], 4)", "false"),
        ('memcmp(bytes, hex("00"), 0)', "true")])
    script = script[:-1] + 'if memcmp(bytes, hex("de ad be ef"), 4) { print "MAGIC"; } }'
    assert trace_lines(target.pid, script) == expected + ["MAGIC"]


def test_memcmp_with_a_script_string(target, types_bin):
    # gdb: g_name = "Alice"
    script = ('trace process { let who = "Ali"; '
              'if memcmp(g_name, who, 3) { print "yes"; } '
              'if memcmp(who, g_name, 2) { print "yes 2"; } '
              'if memcmp(g_name, "Alx", 3) { print "no"; } }')
    assert trace_lines(target.pid, script) == ["yes", "yes 2"]
    result = gs_cgen("trace", "-t", str(types_bin), "--emit-c", "-s",
                     'trace process { let who = "Ali"; if memcmp(g_name, who, 4) { } }')
    assert result.returncode == 1
    assert "memcmp length 4 exceeds the 3 bytes of 'who'" in result.stderr


def test_c_string_equality_is_strict_about_the_nul(target):
    script, expected = printed("process", [
        ('name == "Alice"', "true"), ('name == "Ali"', "false"), ('name == "Alice!"', "false"),
        ('name != "Bob"', "true"), ('g_buf == "buffer"', "true"), ('g_buf == "buf"', "false"),
        ('r.tag == "tagged"', "true"), ('r.label == "box"', "true")])
    script = script[:-1] + 'if name == "Alice" { print "hello Alice"; } }'
    assert trace_lines(target.pid, script) == expected + ["hello Alice"]


# ------------------------------------------------------ format specifiers

def test_format_specifiers_on_integers(target):
    # compute(a=100, neg=-1, sc=-56, l=-5L, uc=200); g_magic = 0x00434241 ("ABC")
    script = ('trace compute { print "{} {:x} {:X} {:p}", neg, neg, neg, a; '
              'print "{:x} {:x} {:X}", sc, l, uc; print "{:s}", g_magic; }')
    assert trace_lines(target.pid, script) == [
        "-1 ffffffff FFFFFFFF 0x64", "c8 fffffffffffffffb C8", "ABC"]


def test_format_specifiers_on_pointers_and_strings(types_bin, target):
    point = runtime_address(types_bin, target.pid, "g_point")
    buf = runtime_address(types_bin, target.pid, "g_buf")
    script = ('trace process { print "{:p} {:x} {:X} {}", g_ptr, g_ptr, g_ptr, g_ptr; '
              'print "{:s}|{:x}|{:s}|{}", g_name, g_name, g_tabbed, name; '
              'print "{} {:s} {:p}", g_buf, g_buf, g_buf; }')
    assert trace_lines(target.pid, script) == [
        f"{point:#x} {point:x} {point:X} {point:#x} (struct point*)",
        'Alice|416c696365|a\\x09b|"Alice"',
        f'"buffer" buffer {buf:#x}']


def test_memory_dumps(target):
    script = ('trace more { print "{:x.4}|{:x.8}|{:s.8}|{:s.5}|{:s.16}", '
              'bytes, bytes, bytes, g_name, g_buf; '
              'print "{:x.*}", 3, bytes; '
              'let n = 2; print "{:x.n$} {:s.n$}", bytes, g_name; '
              'print "{:x.4}", g_buf; '
              'let z = 0; print "[{:x.z$}]", bytes; '
              'print "{:X.4} {:X.*} {:X.n$}", bytes, 3, bytes, bytes; }')
    # gdb: x/8xb g_bytes -> de ad be ef 00 01 7f 41; g_buf = "buffer" = 62 75 66 66 …
    assert trace_lines(target.pid, script) == [
        "de ad be ef|de ad be ef 00 01 7f 41|\\xde\\xad\\xbe\\xef|Alice|buffer",
        "de ad be",
        "de ad Al",
        "62 75 66 66",
        "[]",
        "DE AD BE EF DE AD BE DE AD"]


def test_dumps_of_objects_read_their_storage(target):
    """A dump of a non-pointer object in memory shows its own bytes (GhostScope's
    rule for addressable scalars). gdb: x/8xb &g_point -> 03 00 00 00 04 00 00 00,
    x/4xb &g_magic -> 41 42 43 00, x/4xb &a in compute -> 64 00 00 00."""
    script = ('trace compute { print "{:x.8}|{:x.4}|{:s.4}|{:x.4}|{:X.2}", '
              'g_point, g_magic, g_magic, a, g_point.y; }')
    assert trace_lines(target.pid, script) == [
        "03 00 00 00 04 00 00 00|41 42 43 00|ABC|64 00 00 00|04 00"]


def test_failed_dump_prints_missing_arg(target):
    script = 'trace more { print "{:x.4}|{:s.4}|{}", bad, nullp, f; }'
    assert trace_lines(target.pid, script) == ["<MISSING_ARG>|<MISSING_ARG>|3.5"]


def test_dumps_are_capped(target):
    assert trace_lines(target.pid, 'trace more { print "{:s.300}", g_long; }') == [
        f"{LONG_TEXT[:256]} ... <truncated>"]
    hex16 = " ".join(f"{ord(c):02x}" for c in LONG_TEXT[:16])
    assert trace_lines(target.pid, 'trace more { print "{:x.20}|{:x.4}", g_long, bytes; }', 1,
                       "--mem-dump-cap", "16") == [f"{hex16} ... <truncated>|de ad be ef"]


# --------------------------------------------------------------- ExprError

def test_failed_condition_emits_expr_error_and_soft_aborts(target):
    # more(): bad == (int *)0x10 (gdb: Cannot access memory at address 0x10).
    # GhostScope's soft abort: the failing condition's own then/else are
    # skipped; an `else if` after it is still evaluated. The reason text is
    # GhostScope's ("read error at ADDR", docs/scripting.md ExprError).
    script = ('trace more { '
              'if *bad == 1 { print "A"; } else if g_name == "Alice" { print "B"; } '
              'else { print "C"; } '
              'if *bad == 2 { print "D"; } else { print "E"; } '
              'if *bad == 3 { print "F"; } else if fl.a == 0 { print "G"; } else { print "H"; } '
              'print "done"; }')
    assert trace_lines(target.pid, script) == [
        "ExprError: *bad == 1 (read error at 0x10)", "B",
        "ExprError: *bad == 2 (read error at 0x10)",
        "ExprError: *bad == 3 (read error at 0x10)", "H",
        "done"]


# ------------------------------------------------------- untrusted script text

def strip_c_literals_and_comments(c_text: str) -> str:
    pattern = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*',
                         re.S)
    return pattern.sub(" ", c_text)


# Braces in a format string are doubled ({{ }}), as in Rust/GhostScope; the
# comparison literal is raw bytes that the generated C must carry safely.
INJECTION_SCRIPT = '''trace process {
    print "\\"); }} int x() {{ // */ still a string";
    print name == "\\"); } int y() { // */";
    /* a comment with "); } int z() { // inside */
    // another with "); } int w() { /* inside
    print "{} */ /* {}", len, len;
}
'''


def test_script_strings_cannot_change_the_c_program(target):
    assert trace_lines(target.pid, INJECTION_SCRIPT) == [
        '"); } int x() { // */ still a string',
        'name == "\\"); } int y() { // */" = false',
        "5 */ /* 5"]
    result = gs_cgen("trace", "-p", str(target.pid), "-s", INJECTION_SCRIPT, "--emit-c")
    assert result.returncode == 0, result.stderr
    code = strip_c_literals_and_comments(result.stdout)
    assert re.findall(r"^int (\w+)\(struct pt_regs \*ctx\)", code, re.M) == ["gs_probe_0"]
    for injected in ("int x", "int y", "int z", "int w"):
        assert injected not in code
    assert code.count("{") == code.count("}")


def test_many_prints_and_string_compares_in_one_probe(target):
    structs = ["*r", "g_rect", "r.tl", "g_pts", "p"] * 6
    compares = ['name == "Alice"', 'strncmp(name, "Ali", 3)', 'starts_with(r.label, "box")',
                'g_buf == "buffer"', 'name != "Alice"']
    script = ("trace process { " + " ".join(f"print {e};" for e in structs + compares)
              + ' print "{:p}", r.label; }')
    lines = trace_lines(target.pid, script)
    label = lines[-1]
    assert re.fullmatch(r"0x[0-9a-f]+", label)
    rect = ("rect { tl: point { x: 1, y: 2 }, br: point { x: 10, y: 20 }, "
            f"label: {label} (const char*), tag: \"tagged\" }}")
    rendered = {"*r": rect, "g_rect": rect, "r.tl": "point { x: 1, y: 2 }",
                "g_pts": "[point { x: 1, y: 2 }, point { x: 3, y: 4 }, point { x: 5, y: 6 }]",
                "p": "point { x: 3, y: 4 }"}
    assert lines[:-1] == ([f"{e} = {rendered[e]}" for e in structs]
                          + [f"{e} = {v}" for e, v in zip(compares, ["true", "true", "true",
                                                                     "true", "false"])])
