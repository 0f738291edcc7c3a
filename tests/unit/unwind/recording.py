"""Recorded stacks for the unwinder's unit tests: gdb stops the fixture
at each breakpoint and writes what a gs-cgen probe would copy (rip, rsp,
rbp and the callee-saved registers, the stack from sp to the top of its
mapping), the process's maps, and its own `bt` there (the oracle)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

_RECORDER = r'''
import gdb, json
out = []
gdb.execute("set pagination off")
gdb.execute("set breakpoint pending on")
gdb.execute("handle SIGSEGV nostop noprint pass")
for spec in BREAKS:
    gdb.execute("break " + spec)
gdb.execute("run")
while True:
    try:
        thread = gdb.selected_thread()
        if thread is None:
            break
    except gdb.error:
        break
    pid = gdb.selected_inferior().pid
    if pid == 0:
        break
    frame = gdb.newest_frame()
    regs = {name: int(frame.read_register(name)) & (2**64 - 1)
            for name in ("rip", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15")}
    maps = open("/proc/%d/maps" % pid).read()
    sp = regs["rsp"]
    end = next(int(l.split()[0].split("-")[1], 16) for l in maps.splitlines()
               if int(l.split()[0].split("-")[0], 16) <= sp < int(l.split()[0].split("-")[1], 16))
    stack = bytes(gdb.selected_inferior().read_memory(sp, min(end - sp, WINDOW)))
    out.append({"registers": regs, "maps": maps, "stack": stack.hex(),
                "bt": gdb.execute("bt", to_string=True)})
    try:
        gdb.execute("continue")
    except gdb.error:
        break
json.dump(out, open(OUT, "w"))
'''


def record(argv: list[str], breaks: list[str], out: Path, window: int = 1 << 20) -> list[dict]:
    script = out.with_suffix(".gdb.py")
    script.write_text(f"BREAKS = {breaks!r}\nWINDOW = {window}\nOUT = {str(out)!r}\n" + _RECORDER)
    subprocess.run(["gdb", "-nx", "-batch", "-x", str(script), "--args", *argv],
                   capture_output=True, text=True, timeout=180)
    return json.loads(out.read_text())
