"""Scopes as gdb sees them, live (issue #8): the fixture is launched by
gs-cgen (`-- COMMAND`, held until the probes are attached) and by gdb, and
the first N values each prints, in execution order, must be the same.
The programs are deterministic, so the two runs go through the same
iterations."""
from __future__ import annotations


from tests.gdb_oracle import gdb_values
from tests.live.conftest import FIXTURES, traced_values, compile_fixture, our_uprobes

COUNT = 14


def marker(source: str, name: str) -> int:
    for number, text in enumerate((FIXTURES / source).read_text().splitlines(), 1):
        if f"LINE:{name}" in text:
            return number
    raise KeyError(name)


def _traced(binary, probes, count: int = COUNT) -> list[tuple[str, list[str]]]:
    return traced_values(binary, probes, count, _as_gdb)


def _as_gdb(value: dict) -> str:
    if value["status"] == "optimized_out":
        return "<optimized out>"
    assert value["status"] == "ok", value
    return str(value["value"])


def _check(binary, probes, gdb_probes=None, count: int = COUNT):
    ours = _traced(binary, probes, count)
    expected = gdb_values(binary, gdb_probes or probes, count)
    assert len(ours) == count and ours == expected
    assert our_uprobes() == []
    return ours


def test_function_probes_see_the_frame_gdb_stops_in(build_dir):
    """getint: an inlined clampk with its own `k` begins at getint's first
    instruction; `trace getint` prints getint's k (gdb: `break getint`),
    not clampk's 7. opt_scale and twice: inlined copies described by
    DW_AT_ranges (and, for twice, a DW_AT_entry_pc outside them), whose
    variables used to be lost. gs_labelled: known to gdb by its asm label.
    The `ev` line: a lexical block with DW_AT_ranges in a loop, where `i`
    and `n` are entry values main's call site gives (`i` from the static
    address of main's array, DW_OP_addr in DW_AT_call_value)."""
    binary = compile_fixture(build_dir, "scopes.c", "-g -O2 -fPIE -pie")
    ev = marker("scopes.c", "ev")
    probes = [("getint", ["k", "g_rounds", "slot"]), ("opt_scale", ["value", "factor"]),
              ("twice", ["x"]), ("gs_labelled", ["a"]), (f"scopes.c:{ev}", ["ev", "total", "i", "n"])]
    ours = _check(binary, probes)
    getint = [values for pattern, values in ours if pattern == "getint"]
    # k is getint's own: round % 9 + 1 (clampk's k is always 7)
    assert getint and all(int(k) == int(rounds) % 9 + 1 for k, rounds, _ in getint)
    assert {values[0] for pattern, values in ours if pattern == "opt_scale"} <= {"5", "9", "4"}


def test_an_inlined_copy_probe_sees_the_copy(build_dir):
    """`trace clampk` at the same address as `trace getint` is clampk's
    frame: its k is the constant 7, its limit getint's k."""
    binary = compile_fixture(build_dir, "scopes.c", "-g -O2 -fPIE -pie")
    ours = _check(binary, [("clampk", ["k", "limit"])], count=6)
    assert {values[0] for _, values in ours} == {"7"}


def test_entry_value_from_a_caller_in_another_cu(build_dir):
    """After work()'s loop `a` is an entry value whose register the loop
    rewrote; main, in another CU, says how it computed the argument: gdb
    prints a (a@entry), and so does gs-cgen, from that call site."""
    out = build_dir / "callsites"
    if not out.exists():
        import subprocess
        subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(out),
                        str(FIXTURES / "callsites" / "callee.c"),
                        str(FIXTURES / "callsites" / "caller.c")], check=True)
    line = marker("callsites/callee.c", "after_loop")
    ours = _check(out, [(f"callee.c:{line}", ["a", "b"])], count=8)
    assert all(1 <= int(a) <= 7 for _, (a, _) in ours)


def test_a_member_function_defined_outside_its_class(build_dir):
    """Counter::bump (DW_AT_specification): its parameters, locals and
    `this` at a line of it, as gdb prints them."""
    binary = build_dir / "scopes_cpp"
    if not binary.exists():
        import subprocess
        subprocess.run(["g++", "-g", "-O2", "-fPIE", "-pie", "-o", str(binary),
                        str(FIXTURES / "scopes_cpp.cpp")], check=True)
    line = marker("scopes_cpp.cpp", "bump")
    _check(binary, [(f"scopes_cpp.cpp:{line}", ["by", "before", "this.value"])],
           gdb_probes=[(f"scopes_cpp.cpp:{line}", ["by", "before", "this->value"])], count=6)
