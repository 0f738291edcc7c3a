"""gdb, the oracle for `bt`'s modes: every frame at one stop, inlined ones
included, with what each mode shows of it.

Runs inside gdb (`gdb -batch -x tests/gdb_stack.py --args PROGRAM ...`):
runs to the first stop at the breakpoint spec in GS_GDB_BREAK and prints
one JSON line, prefixed with `GS-STACK `, listing the frames innermost
first as gdb's `bt` does:

    {"pc": 140737351...,  "inlined": false, "function": "chain_leaf",
     "file": "chain_lib.c", "line": 16, "arguments": [["path", "1"], ...]}

`pc` is the frame's pc (an inlined frame has its machine frame's);
arguments are printed as gdb prints them (`<optimized out>` included).
"""
import json
import os

import gdb  # noqa: F401 - provided by gdb itself


def _arguments(frame):
    block = frame.block()
    while block.function is None:
        block = block.superblock
    found = []
    for symbol in block:
        if symbol.is_argument:
            try:
                found.append([symbol.name, str(symbol.value(frame))])
            except gdb.error as exc:
                found.append([symbol.name, f"<error: {exc}>"])
    return found


def _describe(frame):
    sal = frame.find_sal()
    name = frame.function().name if frame.function() else frame.name()
    return {"pc": frame.pc(), "inlined": frame.type() == gdb.INLINE_FRAME,
            "function": name,
            "file": os.path.basename(sal.symtab.filename) if sal.symtab else None,
            "line": sal.line or None, "arguments": _arguments(frame)}


def main():
    gdb.execute("set pagination off")
    gdb.execute("set breakpoint pending on")
    gdb.Breakpoint(os.environ["GS_GDB_BREAK"])
    gdb.execute("run", to_string=True)
    frames, frame = [], gdb.newest_frame()
    while frame is not None:
        frames.append(_describe(frame))
        frame = frame.older()
    print("GS-STACK " + json.dumps(frames))
    gdb.execute("kill")


main()
