"""The unwinder on stacks recorded by gdb at breakpoints of an -O2
-fomit-frame-pointer build (tests/fixtures/unwind): the frames it finds,
named with line tables and inline chains, equal gdb's `bt` there —
function, file and line of every frame, and the PC of every machine
frame gdb prints one for. Real .eh_frame bytes of the fixture, of libc
(the signal trampoline) and of the PLT (ld's CFA expression)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.unwind.backtrace import ModuleAt, build_backtrace, mapping_bias
from gs_cgen.unwind.model import RBP, RBX, R12, R13, R14, R15, RIP, RSP, StackCopy
from tests.gdb_backtrace import parse_bt
from tests.prerequisites import require
from tests.unit.unwind.recording import record

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "unwind"
FLAGS = ["-O2", "-g", "-fomit-frame-pointer"]
REGISTERS = {"rip": RIP, "rsp": RSP, "rbp": RBP, "rbx": RBX, "r12": R12, "r13": R13,
             "r14": R14, "r15": R15}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    require(None if shutil.which("gdb") and shutil.which("gcc") else "needs gcc and gdb")
    out = tmp_path_factory.mktemp("unwind")
    subprocess.run(["gcc", *FLAGS, "-fPIC", "-shared", "-o", str(out / "libchain.so"),
                    str(FIXTURES / "chain_lib.c")], check=True)
    subprocess.run(["gcc", *FLAGS, "-o", str(out / "chain_main"), str(FIXTURES / "chain_main.c"),
                    "-L", str(out), "-lchain", "-Wl,-rpath,$ORIGIN"], check=True)
    stops = record([str(out / "chain_main"), "once"], ["chain_leaf", "*'chain_enter@plt'"],
                   out / "stops.json")
    assert len(stops) == 4, "gdb stopped at the PLT stub and three times in chain_leaf"
    return stops


def modules_of(maps: str):
    """ModuleAt for each file mapping of a recorded /proc/PID/maps."""
    rows = []
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) < 6 or not fields[5].startswith("/"):
            continue
        start, end = (int(v, 16) for v in fields[0].split("-"))
        rows.append((start, end, int(fields[2], 16), fields[5]))

    def lookup(address: int):
        for start, end, offset, path in rows:
            if start <= address < end:
                module = open_module(path)
                return ModuleAt(module, os.path.basename(path), mapping_bias(module, start, offset))
        return None
    return lookup


def unwind_stop(stop: dict, depth: int = 64, include_inlined: bool = True):
    registers = {REGISTERS[name]: value for name, value in stop["registers"].items()}
    stack = StackCopy(stop["registers"]["rsp"], bytes.fromhex(stop["stack"]))
    return build_backtrace(registers, stack, modules_of(stop["maps"]), depth, include_inlined)


def as_gdb_shows(frame) -> tuple:
    if frame.signal_trampoline:
        return ("<signal handler called>", None, None)
    return (frame.function, os.path.basename(frame.file) if frame.file else None, frame.line)


def assert_equals_gdb(stop: dict) -> None:
    expected = parse_bt(stop["bt"])
    found = unwind_stop(stop)
    assert found.status == "complete"
    shown = [as_gdb_shows(f) for f in found.frames]
    assert shown == [(f.function, f.file, f.line) for f in expected]
    for frame, oracle in zip(found.frames, expected):
        if oracle.address is not None:
            assert frame.address == oracle.address, (frame, oracle)


def test_six_deep_chain_through_a_library_with_two_inlined_levels(recorded):
    stop = recorded[1]
    assert_equals_gdb(stop)
    frames = unwind_stop(stop).frames
    assert [f.function for f in frames] == ["chain_leaf", "inner_step", "outer_step", "chain_mid",
                                            "chain_enter", "app_second", "app_first",
                                            "run_paths", "main"]
    assert [f.inlined for f in frames] == [False, True, True, False, False, False, False, True,
                                           False]


def test_recursion(recorded):
    assert_equals_gdb(recorded[2])
    assert [f.function for f in unwind_stop(recorded[2]).frames].count("chain_recurse") == 3


def test_signal_handler_frame(recorded):
    stop = recorded[3]
    assert_equals_gdb(stop)
    frames = unwind_stop(stop).frames
    trampoline = next(i for i, f in enumerate(frames) if f.signal_trampoline)
    assert frames[trampoline].module == "libc.so.6"
    # The interrupted frame is named by its exact PC (the faulting store),
    # not by PC - 1 as a caller is.
    assert frames[trampoline + 1].physical.lookup_pc == frames[trampoline + 1].address


def test_plt_stub_unwinds_by_lds_cfa_expression(recorded):
    stop = recorded[0]
    assert_equals_gdb(stop)
    found = unwind_stop(stop)
    assert found.frames[0].address == parse_bt(stop["bt"])[0].address
    assert found.frames[0].module == "chain_main"
    assert found.frames[0].function == "chain_enter@plt"        # as gdb names the stub


def test_depth_limit_and_noinline(recorded):
    stop = recorded[1]
    limited = unwind_stop(stop, depth=3)
    assert limited.status == "depth limit" and len(limited.frames) == 3
    exact = unwind_stop(stop, depth=9)
    assert exact.status == "complete" and len(exact.frames) == 9
    physical = unwind_stop(stop, include_inlined=False)
    assert [f.function for f in physical.frames] == ["chain_leaf", "chain_mid", "chain_enter",
                                                     "app_second", "app_first", "main"]


def test_stack_copy_exhausted(recorded):
    stop = dict(recorded[1], stack=recorded[1]["stack"][:2 * 64])
    found = unwind_stop(stop)
    assert found.status == "stack copy exhausted"
    assert 1 <= len(found.frames) < 9


def test_frames_named_once_per_machine_frame_are_the_same(recorded):
    """With a `named` memo (the resolver's, per process) the second walk of
    a chain reuses the first one's frames and shows exactly the same."""
    def shown(found):
        return [(f.function, f.file, f.line, f.address, f.inlined, f.module, f.module_address,
                 f.signal_trampoline) for f in found.frames], found.status

    for stop in recorded:
        registers = {REGISTERS[name]: value for name, value in stop["registers"].items()}
        stack = StackCopy(stop["registers"]["rsp"], bytes.fromhex(stop["stack"]))
        modules = modules_of(stop["maps"])
        plain = build_backtrace(registers, stack, modules, 64)
        named: dict = {}
        first = build_backtrace(registers, stack, modules, 64, named=named)
        size = len(named)
        again = build_backtrace(registers, stack, modules, 64, named=named)
        assert shown(first) == shown(again) == shown(plain)
        assert len(named) == size > 0                       # nothing named twice
        assert all(f.physical is None for f in again.frames)
        limited = build_backtrace(registers, stack, modules, 3, named=named)
        assert shown(limited) == shown(build_backtrace(registers, stack, modules, 3))
