"""A stack-passed parameter described as DW_OP_entry_value(DW_OP_breg7 +8)
in a compile unit with no address ranges of its own and no
.debug_aranges (tests/synthetic_dwarf.py; GhostScope's entry_value_breg
e2e test). Both were refused: "no function with debug info covers
address", then "address from the entry value of rsp, which this function
overwrites". The entry rsp is CFA - 8. gdb 13 cannot read this parameter
("DW_OP_entry_value is supported only for single DW_OP_reg*"), so the
oracle is the stack slot itself, which gdb reads at the same stop, and
the arguments main passes (1, 2, 3)."""
from __future__ import annotations

import shutil
import subprocess

from elftools.elf.elffile import ELFFile

from tests.live.conftest import FIXTURES, gs_cgen, require
from tests.synthetic_dwarf import replace_debug_info, stack_argument_unit

SOURCE = "stack_argument.c"


def _symbols(binary) -> dict[str, tuple[int, int]]:
    with open(binary, "rb") as f:
        table = ELFFile(f).get_section_by_name(".symtab")
        return {s.name: (s["st_value"], s["st_size"]) for s in table.iter_symbols()}


def _build(build_dir):
    for tool in ("gcc", "objcopy", "gdb"):
        require(None if shutil.which(tool) else f"{tool} is not installed")
    binary, debug = build_dir / "stack_argument", build_dir / "stack_argument.debug"
    subprocess.run(["gcc", "-g", "-O2", "-fomit-frame-pointer", "-no-pie", "-o", str(binary),
                    str(FIXTURES / SOURCE)], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-debug", str(binary)], check=True)
    symbols = _symbols(binary)
    start, size = symbols["stack_argument"]
    replace_debug_info(debug, stack_argument_unit(SOURCE, "stack_argument", start, size, "payload"))
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug}", str(binary)], check=True,
                   cwd=build_dir)
    return binary, symbols["stack_argument_anchor"][0]


def test_a_stack_argument_through_the_entry_stack_pointer(build_dir):
    binary, anchor = _build(build_dir)
    result = gs_cgen("trace", "--output", "plain", "--max-events", "3",
                     "-s", f"trace 0x{anchor:x} {{ print payload; }}", "--", str(binary))
    assert result.returncode == 0, result.stderr
    # the slot the call left the argument in: the CFA, as gdb's frame says
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"break *0x{anchor:x}", "-ex", "run",
                          "-ex", "info frame", str(binary)],
                         capture_output=True, text=True, timeout=60).stdout
    cfa = int(out.split("Stack level 0, frame at ")[1].split(":")[0], 16)
    check = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"break *0x{anchor:x}", "-ex", "run",
                            "-ex", f"x/dw 0x{cfa:x}", "-ex", "continue", "-ex", f"x/dw 0x{cfa:x}",
                            "-ex", "continue", "-ex", f"x/dw 0x{cfa:x}", str(binary)],
                           capture_output=True, text=True, timeout=60).stdout
    slots = [line.split(":")[1].strip() for line in check.splitlines()
             if line.startswith(f"0x{cfa:x}")]
    assert slots == ["1", "2", "3"]                                      # the case
    assert result.stdout.splitlines() == [f"payload = {v}" for v in slots]
