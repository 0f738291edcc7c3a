"""gdb, the oracle for scopes: where `break SPEC` puts its locations, which
frame gdb stops in at each, and every variable visible there.

Runs inside gdb (`gdb -batch -x tests/gdb_frames.py PROGRAM`), with the
breakpoint specs as a JSON list in GS_GDB_SPECS. Each location of each
spec is run to on its own (the others disabled, so no other breakpoint's
symbol changes the frame gdb selects) and described as one JSON line on
stdout, prefixed with `GS-FRAME `:

    {"spec": "getint", "address": 4656, "function": "getint",
     "inlined": false, "blocks": [{"start": 4656, "function": "getint",
     "symbols": [{"name": "k", "argument": true, "value": "2",
                  "optimized_out": false}, ...]}, ...]}

`address` and `start` are module addresses (load bias removed); blocks go
from the frame's innermost block out to its function's, as `info locals`
and `print NAME` search them. A location that is not hit within the
time limit has "function": null.
"""
import json
import os

import gdb  # noqa: F401 - provided by gdb itself


def _values(block, frame):
    symbols = []
    for symbol in block:
        if not (symbol.is_argument or symbol.is_variable):
            continue
        try:
            value = symbol.value(frame)
            out = bool(value.is_optimized_out)
            text = "<optimized out>" if out else str(value)
        except gdb.error as exc:
            out, text = False, f"<error: {exc}>"
        symbols.append({"name": symbol.name, "argument": bool(symbol.is_argument),
                        "value": text, "optimized_out": out})
    return symbols


def _describe(frame, bias):
    blocks = []
    block = frame.block()
    while block is not None:
        blocks.append({"start": block.start - bias,
                       "function": block.function.name if block.function else None,
                       "symbols": _values(block, frame)})
        if block.function is not None:
            break
        block = block.superblock
    return {"function": frame.function().name if frame.function() else None,
            "inlined": frame.type() == gdb.INLINE_FRAME, "pc": frame.pc() - bias,
            "blocks": blocks}


def _locations(spec):
    breakpoint = gdb.Breakpoint(spec)
    addresses = [location.address for location in breakpoint.locations]
    return breakpoint, addresses


def main():
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    specs = json.loads(os.environ["GS_GDB_SPECS"])
    # Module addresses first, before the program is loaded and relocated.
    static = {}
    for spec in specs:
        breakpoint, static[spec] = _locations(spec)
        breakpoint.delete()
    gdb.execute("tbreak main", to_string=True)
    gdb.execute("run", to_string=True)
    running = True
    for spec in specs:
        breakpoint, relocated = _locations(spec)
        for index, address in enumerate(static[spec]):
            # Only this location: another breakpoint's symbol would change
            # the frame gdb selects (inline-frame.c).
            for i, location in enumerate(breakpoint.locations):
                location.enabled = i == index
            gdb.execute("continue" if running else "run", to_string=True)
            running = False
            frame = gdb.selected_frame()
            bias = relocated[index] - address
            found = {"spec": spec, "address": address}
            found.update(_describe(frame, bias))
            print("GS-FRAME " + json.dumps(found), flush=True)
            gdb.execute("kill", to_string=True)
        breakpoint.delete()


main()
