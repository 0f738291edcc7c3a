"""An entry value whose caller computed the argument from its own frame
(DW_AT_call_value `DW_OP_fbreg -448; DW_OP_deref`: g++ -O2 passing a
reference that main keeps in a stack slot) comes from the caller's frame
base: its CFA, which at the callee's PC is the callee's CFA plus the
caller's CFA offset at its call instruction. Before, such a call value was
"no call site says how it was computed" (gdb shows `tagged@entry`).

Checked against gdb without a probe: gdb runs the fidelity corpus's C++
program to each line-table PC of shop::total where gs-cgen reads
`tagged` from the call site, evaluates gs-cgen's tree there (registers and memory of that
stop: the case for the return address it finds) and compares it with its
own `&tagged`."""
from __future__ import annotations

import json
import shutil
import subprocess
from collections import namedtuple
from pathlib import Path

import pytest

from fidelity.corpus import line_sites
from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.location.callsites import caller_frame_base, translate_value
from gs_cgen.dwarf.model import CallSiteValue, OptimizedOut, ValueExpression
from tests.prerequisites import require

Op = namedtuple("Op", "op_name args")
SOURCE = Path(__file__).resolve().parents[3] / "fidelity" / "corpus" / "values.cpp"
CLANG_SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "clang_call_values.c"

# Runs inside gdb: at each PC, the reference's address by gdb and by the tree.
_EVALUATE = r"""
import json, os
request = json.loads(os.environ["GS_REQUEST"])
REGISTERS = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]
gdb.execute("set startup-with-shell off")
gdb.execute("starti", to_string=True)
base = int(gdb.parse_and_eval("&main")) - request["main"]
inferior = gdb.selected_inferior()
def register(number):
    return int(gdb.newest_frame().read_register(REGISTERS[number])) % 2 ** 64
def load(address, size):
    return int.from_bytes(bytes(inferior.read_memory(address, size)), "little")
def evaluate(tree):
    kind = tree[0]
    if kind == "const":
        return tree[1] % 2 ** 64
    if kind == "reg":
        return (register(tree[1]) + tree[2]) % 2 ** 64
    if kind == "+":
        return (evaluate(tree[1]) + evaluate(tree[2])) % 2 ** 64
    if kind == "deref":
        return load(evaluate(tree[1]), tree[2])
    raise ValueError(f"not evaluated here: {kind}")
for pc, site in request["sites"].items():
    gdb.Breakpoint(f"*{base + int(pc)}")
stops = []
while gdb.selected_inferior().threads() and len(stops) < len(request["sites"]):
    gdb.execute("continue", to_string=True)
    if not gdb.selected_inferior().threads():
        break
    pc = int(gdb.newest_frame().pc()) - base
    site = request["sites"].get(str(pc))
    if site is None:
        continue
    reg, offset = site["return_address"]
    returns_to = load(register(reg) + offset, 8) - base
    cases = {int(k): v for k, v in site["cases"].items()}
    ours = evaluate(cases[returns_to]) if returns_to in cases else None
    stops.append({"pc": pc, "gdb": int(gdb.parse_and_eval("(long)&tagged")) % 2 ** 64,
                  "ours": ours})
    gdb.execute("delete", to_string=True)
    for other in request["sites"]:
        if int(other) != pc and all(s["pc"] != int(other) for s in stops):
            gdb.Breakpoint(f"*{base + int(other)}")
print("GS-STOPS " + json.dumps(stops))
gdb.execute("kill", to_string=True)
"""


def _tree(value) -> list:
    return [_tree(v) if isinstance(v, tuple) else v for v in value]


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> str:
    for tool in ("g++", "gdb"):
        require(None if shutil.which(tool) else f"{tool} is not installed")
    path = str(tmp_path_factory.mktemp("call_value_frame_base") / "values_O2")
    subprocess.run(["g++", "-g", "-O2", "-o", path, str(SOURCE)], check=True)
    return path


def test_an_argument_from_the_callers_frame_is_gdbs_entry_value(binary):
    module = open_module(binary)
    sites = {}
    for site in line_sites(Path(binary), [SOURCE.name], main_module=True):
        if "shop5total" not in site.function:
            continue
        tagged = {v.name: v for v in module.variables_at(site.address)}.get("tagged")
        if tagged is None:
            continue                             # an inlined call's frame (keep<long>)
        location = tagged.location
        if isinstance(location, OptimizedOut):
            assert "no call site" not in location.reason, location     # before
        if not isinstance(location, CallSiteValue):
            continue
        sites[str(site.address)] = {
            "return_address": [location.return_address.dwarf_register,
                               location.return_address.offset],
            "cases": {str(pc): _tree(value.tree) for pc, value in location.cases}}
    assert sites
    request = {"main": module.find_functions("main")[0].low_pc, "sites": sites}
    done = subprocess.run(["gdb", "-nx", "-batch", "-ex", "python\n" + _EVALUATE, binary],
                          capture_output=True, text=True, timeout=120,
                          env={"GS_REQUEST": json.dumps(request), "PATH": "/usr/bin:/bin"})
    lines = [line for line in done.stdout.splitlines() if line.startswith("GS-STOPS ")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    stops = json.loads(lines[0].removeprefix("GS-STOPS "))
    assert len(stops) == len(sites) and all(stop["ours"] == stop["gdb"] for stop in stops), stops


def test_fbreg_and_deref_in_a_call_value():
    """The tree: DW_OP_fbreg on the caller's frame base, DW_OP_deref a
    load when the probe runs; no frame base known, no value."""
    ops = [Op("DW_OP_fbreg", [-448]), Op("DW_OP_deref", [])]
    base = ("reg", 7, 8 + 96)
    assert translate_value(ops, frozenset(), None, lambda: base) == ValueExpression(
        ("deref", ("+", base, ("const", -448)), 8))
    assert translate_value(ops, frozenset(), None, lambda: None) is None
    assert translate_value(ops, frozenset()) is None
    assert translate_value([Op("DW_OP_breg3", [0]), Op("DW_OP_deref_size", [4])],
                           frozenset()) == ValueExpression(("deref", ("reg", 3, 0), 4))


def test_the_callers_frame_base_from_its_cfa_rule():
    """rsp-based: the callee's CFA is the caller's rsp after the call; a
    callee-saved register is the caller's (or where the callee saved it);
    any other register is not the caller's any more."""
    cfa = (7, 16)                                # the callee's CFA: rsp + 16 at its PC
    assert caller_frame_base((7, 464), cfa, frozenset(), {}) == ("reg", 7, 480)
    assert caller_frame_base((6, 16), cfa, frozenset(), {}) == ("reg", 6, 16)
    saved = {6: ("deref", ("reg", 7, 0), 8)}     # the callee pushed rbp
    assert caller_frame_base((6, 16), cfa, frozenset(), saved) == \
        ("+", ("deref", ("reg", 7, 0), 8), ("const", 16))
    assert caller_frame_base((0, 8), cfa, frozenset(), {}) is None       # rax
    assert caller_frame_base(None, cfa, frozenset(), {}) is None


def test_a_clang_callers_frame_base_is_its_register(tmp_path):
    """clang's DW_AT_frame_base is a register: `run`'s rsp, which at its
    call instruction is the callee's CFA, and `framed`'s
    rbp, which `weigh` never writes (tests/fixtures/clang_call_values.c;
    the values against gdb: tests/live/test_clang_call_values_live.py)."""
    require(None if shutil.which("clang") else "clang is not installed")
    path = str(tmp_path / "clang_call_values")
    subprocess.run(["clang", "-g", "-O2", "-o", path, str(CLANG_SOURCE)], check=True)
    module = open_module(path)
    line = next(number for number, text in enumerate(CLANG_SOURCE.read_text().splitlines(), 1)
                if "LINE:after_keep" in text)
    pc = module.find_lines(CLANG_SOURCE.name, line)[0].address
    location = {v.name: v for v in module.variables_at(pc)}["b"].location
    assert isinstance(location, CallSiteValue), location
    register, offset = module.call_frame_rule(pc)
    assert register == "rsp"
    assert {value.tree for _, value in location.cases} == {
        ("+", ("reg", 7, offset), ("const", 8)),          # run: DW_OP_fbreg 8 on rsp
        ("+", ("reg", 6, 0), ("const", -16))}             # framed: DW_OP_fbreg -16 on rbp
