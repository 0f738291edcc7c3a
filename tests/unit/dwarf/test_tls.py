"""Thread-local variables in DWARF (dwarf/location/tls.py and ModuleDebugInfo):
the expression shapes gcc writes for `__thread` / `_Thread_local` at -O0
and -O2, in DWARF 5 (DW_OP_form_tls_address) and -gdwarf-4
(DW_OP_GNU_push_tls_address), in an executable and in a shared library.
gdb is the oracle: `info address NAME` / `info scope FUNCTION` say "a
thread-local variable at offset 0xN in the thread-local storage for ...".

Recipe: tests/fixtures/tls/app.c and libtlsdemo.c linked into one PIE
executable, and libtlsdemo.c alone as a shared library, with each of
VARIANTS' flags."""
from __future__ import annotations

import re
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.location.expression import translate_ops
from gs_cgen.dwarf.model import (ThreadLocal, UnsupportedLocation, VariableKind,
                                 describe_location)
from gs_cgen.dwarf.location.tls import tls_expression_bytes, tls_location, tls_offset
from gs_cgen.dwarf.types import type_name
from gs_cgen.info import describe
from gs_cgen.plan.modules import ModuleSet
from tests.prerequisites import require
from tests.unit.dwarf.conftest import FIXTURES

TLS = FIXTURES / "tls"
VARIANTS = {
    "O0": ["-g", "-O0"],
    "O2": ["-g", "-O2"],
    "O0-dwarf4": ["-gdwarf-4", "-O0"],
    "O2-dwarf4": ["-gdwarf-4", "-O2"],
}
EXECUTABLE_GLOBALS = ("t_counter", "t_point", "t_history", "t_name", "lib_tls_id", "lib_tls_tag")
_GDB_TLS = re.compile(r'Symbol "?(\w+)"? is a thread-local variable at offset (0x[0-9a-f]+) '
                      r"in the thread-local storage for")


@pytest.fixture(scope="module")
def tls_builds(tmp_path_factory) -> dict[str, tuple[str, str]]:
    """variant -> (executable, shared library)."""
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("tls_bins")
    builds = {}
    for name, flags in VARIANTS.items():
        exe, lib = out / f"app_{name}", out / f"libtlsdemo_{name}.so"
        subprocess.run(["gcc", *flags, "-fPIE", "-pie", "-pthread", f"-I{TLS}", "-o", str(exe),
                        str(TLS / "app.c"), str(TLS / "libtlsdemo.c"), "-ldl"], check=True)
        subprocess.run(["gcc", *flags, "-fPIC", "-shared", "-o", str(lib),
                        str(TLS / "libtlsdemo.c")], check=True)
        builds[name] = (str(exe), str(lib))
    return builds


def gdb_tls_offsets(gdb_text, binary: str, *commands: str) -> dict[str, int]:
    text = gdb_text(binary, *commands)
    return {name: int(offset, 16) for name, offset in _GDB_TLS.findall(text)}


@pytest.mark.parametrize("variant", VARIANTS)
def test_globals_of_an_executable_are_thread_local_at_gdbs_offsets(tls_builds, gdb_text, variant):
    exe, _ = tls_builds[variant]
    expected = gdb_tls_offsets(gdb_text, exe, *(f"info address {n}" for n in EXECUTABLE_GLOBALS))
    assert set(expected) == set(EXECUTABLE_GLOBALS)
    module = open_module(exe)
    for name in EXECUTABLE_GLOBALS:
        found = module.find_global(name)
        assert found is not None, name
        assert found.thread_local and found.section == "tls"
        assert found.location == ThreadLocal(expected[name]), name
    assert type_name(module.find_global("t_point").type) == "struct point"
    assert type_name(module.find_global("t_name").type) == "char[16]"


@pytest.mark.parametrize("variant", VARIANTS)
def test_globals_of_a_shared_library_are_thread_local(tls_builds, gdb_text, variant):
    _, lib = tls_builds[variant]
    expected = gdb_tls_offsets(gdb_text, lib, "info address lib_tls_id",
                               "info address lib_tls_tag")
    module = open_module(lib)
    assert module.tls_segment is not None and module.dynamic_vaddr is not None
    for name, offset in expected.items():
        assert module.find_global(name).location == ThreadLocal(offset)


@pytest.mark.parametrize("variant", VARIANTS)
def test_function_scope_static_thread_local(tls_builds, gdb_text, variant):
    """`static __thread int ticks;` inside tls_tick (gdb's `info scope`):
    found by name like any function-level static (symbol `ticks.0`)."""
    exe, _ = tls_builds[variant]
    expected = gdb_tls_offsets(gdb_text, exe, "info scope tls_tick")
    assert open_module(exe).find_global("ticks").location == ThreadLocal(expected["ticks"])


@pytest.mark.parametrize("variant", ["O0", "O0-dwarf4"])
def test_function_scope_static_thread_local_is_a_local_there(tls_builds, gdb_text, variant):
    """At -O0 it is also among the function's visible variables. (At -O2
    gcc describes it only under the abstract instance of tls_tick, which
    the out-of-line copy does not repeat: a scopes matter, not TLS.)"""
    exe, _ = tls_builds[variant]
    expected = gdb_tls_offsets(gdb_text, exe, "info scope tls_tick")
    module = open_module(exe)
    (site, *_) = module.find_functions("tls_tick")
    ticks = {v.name: v for v in module.variables_at(site.probe_address)}["ticks"]
    assert ticks.kind is VariableKind.LOCAL
    assert ticks.location == ThreadLocal(expected["ticks"])


def test_the_dwarf_bytes_are_the_shapes_gcc_writes(tls_builds):
    """DWARF 5 ends with DW_OP_form_tls_address (0x9b), DWARF 4 with
    DW_OP_GNU_push_tls_address (0xe0); both after DW_OP_const8u."""
    for variant, opcode in (("O0", b"\x9b"), ("O0-dwarf4", b"\xe0")):
        exe, _ = tls_builds[variant]
        offset = open_module(exe).find_global("t_name").address
        info = subprocess.run(["readelf", "--debug-dump=info", exe], capture_output=True,
                              text=True, check=True).stdout
        name = "DW_OP_form_tls_address" if opcode == b"\x9b" else "DW_OP_GNU_push_tls_address"
        assert f"(DW_OP_const8u: {offset}; {name}" in info
        assert b"\x0e" + offset.to_bytes(8, "little") + opcode in tls_expression_bytes(offset)


def test_info_says_where_a_thread_local_lives(tls_builds, gdb_text):
    exe, _ = tls_builds["O0"]
    offset = gdb_tls_offsets(gdb_text, exe, "info scope tls_tick")["ticks"]
    text = describe(ModuleSet.of(open_module(exe)), "function", "tls_tick")
    name = exe.rsplit("/", 1)[1]
    assert f"  local     int ticks  @ thread-local, offset 0x{offset:x} in {name}'s TLS block" \
        in text.splitlines()


# ------------------------------------------------- shapes, without gcc

def op(name: str, *args):
    return SimpleNamespace(op_name=name, args=list(args))


@pytest.mark.parametrize("operand", [
    op("DW_OP_const8u", 0x40), op("DW_OP_const4u", 0x40), op("DW_OP_const2u", 0x40),
    op("DW_OP_const1u", 0x40), op("DW_OP_constu", 0x40), op("DW_OP_addr", 0x40),
])
@pytest.mark.parametrize("tls_op", ["DW_OP_form_tls_address", "DW_OP_GNU_push_tls_address"])
def test_constant_then_tls_operation(operand, tls_op):
    ops = [operand, op(tls_op)]
    assert tls_offset(ops) == 0x40
    assert translate_ops(ops, lambda: (7, 8)) == ThreadLocal(0x40)


def test_literal_offset():
    assert tls_location([op("DW_OP_lit16"), op("DW_OP_form_tls_address")]) == ThreadLocal(16)


def test_indexed_offset_needs_debug_addr():
    ops = [op("DW_OP_constx", 3), op("DW_OP_form_tls_address")]
    assert tls_offset(ops, lambda index: {3: 0x18}[index]) == 0x18
    missing = tls_location(ops)
    assert isinstance(missing, UnsupportedLocation) and ".debug_addr" in missing.reason


@pytest.mark.parametrize("ops, words", [
    ([op("DW_OP_form_tls_address")], ["DW_OP_form_tls_address", "thread-local storage",
                                      "malformed"]),
    ([op("DW_OP_breg5", 8), op("DW_OP_form_tls_address")], ["DW_OP_breg5 DW_OP_form_tls_address"]),
    ([op("DW_OP_const8u", 8), op("DW_OP_GNU_push_tls_address"), op("DW_OP_plus_uconst", 4)],
     ["DW_OP_GNU_push_tls_address", "DW_OP_plus_uconst"]),
])
def test_other_tls_shapes_are_unsupported_with_the_reason(ops, words):
    location = translate_ops(ops, lambda: (7, 8))
    assert isinstance(location, UnsupportedLocation)
    for word in words:
        assert word in location.reason


def test_expressions_without_tls_are_not_ours():
    assert tls_location([op("DW_OP_addr", 0x4010)]) is None
    assert tls_offset([op("DW_OP_const8u", 8), op("DW_OP_stack_value")]) is None


def test_location_in_words():
    assert describe_location(ThreadLocal(0x10), "app") == \
        "thread-local, offset 0x10 in app's TLS block"
