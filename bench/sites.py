"""The probe sites: bench/target.c built -O0 -g, its marked lines located by
gdb (the oracle: line address, the local's slot from %rbp at that PC), the
symbol at each checked to be at gdb's address, the instruction named by
objdump; and libpython3.11's PyDict_SetItem.
"""
from __future__ import annotations

import os
import re
import subprocess

from bench.common import ENV, GDB, HERE, file_offset, have, symbol
from bench.tracers import Site

SOURCE = os.path.join(HERE, "target.c")
# marker -> (symbol at the line, the local read there)
MARKS = {"nop": ("at_nop", "total"), "mov": ("at_mov", "total"), "tick": ("at_tick", "i")}


def build_target(workdir: str) -> str:
    out = os.path.join(workdir, "gsbench_target")
    subprocess.run(["gcc", "-O0", "-g", "-o", out, SOURCE], check=True)
    return out


def marker_lines() -> dict[str, int]:
    lines = {}
    with open(SOURCE) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"/\* LINE:(\w+) \*/", text)
            if m:
                lines[m.group(1)] = number
    return lines


def instruction_at(binary: str, address: int) -> str:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address=0x{address:x}",
                          f"--stop-address=0x{address + 16:x}", binary],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(rf"^\s*{address:x}:\s+(.+)$", out, re.M)
    return " ".join(m.group(1).split()) if m else "?"


def target_sites(binary: str) -> dict[str, Site]:
    """Each marked line as gdb sees it at `target once`."""
    lines = marker_lines()
    commands = []
    for mark in MARKS:
        commands += ["-ex", f"info line target.c:{lines[mark]}"]
    for mark in MARKS:
        commands += ["-ex", f"break target.c:{lines[mark]}"]
    commands += ["-ex", "run once"]
    for mark, (_, local) in MARKS.items():
        commands += ["-ex", f'printf "slot {mark} %ld\\n", (long)&{local} - (long)$rbp',
                     "-ex", f'printf "value {mark} %d\\n", {local}', "-ex", "continue"]
    out = subprocess.run(GDB + commands + ["--args", binary], capture_output=True, text=True,
                         env=ENV, timeout=60).stdout
    starts = [int(x, 16) for x in re.findall(r"starts at address 0x([0-9a-f]+)", out)]
    slots = dict(re.findall(r"^slot (\w+) (-?\d+)$", out, re.M))
    if len(starts) != len(MARKS) or len(slots) != len(MARKS):
        raise RuntimeError(f"gdb did not locate the marked lines of {SOURCE}:\n{out[-1500:]}")
    sites = {}
    for (mark, (sym, local)), address in zip(MARKS.items(), starts):
        sym_address, _ = symbol(binary, sym)
        if sym_address != address:
            raise RuntimeError(f"{sym} is at 0x{sym_address:x}, gdb puts line {lines[mark]} at 0x{address:x}")
        sites[mark] = Site(binary=binary, symbol=sym, address=address,
                           offset=file_offset(binary, address),
                           source_line=f"target.c:{lines[mark]}", local=local,
                           bp_offset=int(slots[mark]), instruction=instruction_at(binary, address))
    return sites


def find_python311() -> tuple[str, str] | None:
    """(interpreter, its libpython3.11.so.1.0 with DWARF), the yardstick
    build tests/live/test_libpython_live.py uses."""
    if not have("python3.11"):
        return None
    out = subprocess.run(["python3.11", "-c", "import sys, sysconfig; print(sys.executable); "
                          "print(sysconfig.get_config_var('LIBDIR'))"],
                         capture_output=True, text=True).stdout.split()
    if len(out) != 2:
        return None
    library = os.path.realpath(os.path.join(out[1], "libpython3.11.so.1.0"))
    if not os.path.exists(library):
        return None
    sections = subprocess.run(["readelf", "-SW", library], capture_output=True, text=True).stdout
    return (out[0], library) if ".debug_info" in sections else None


def python_site(library: str) -> Site:
    address, _ = symbol(library, "PyDict_SetItem")
    return Site(binary=library, symbol="PyDict_SetItem", address=address,
                offset=file_offset(library, address), source_line="PyDict_SetItem",
                local="value", bp_offset=0, instruction=instruction_at(library, address),
                function=True)
