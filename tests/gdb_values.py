"""gdb, the oracle for the values a trace prints: runs the program with
`break SPEC` for each probe, and at each of the first COUNT stops prints,
in the frame gdb selected, the probe's expressions as one JSON line:

    GS-VALUES ["getint", ["2", "1"]]

Runs inside gdb (`gdb -batch -x tests/gdb_values.py PROGRAM`); the probes
come as JSON in GS_GDB_PROBES ([[spec, [expr, ...]], ...]), the count in
GS_GDB_COUNT. An optimized-out value is "<optimized out>". With GS_GDB_UP=1,
a name the selected frame lacks ("No symbol") is printed after `up`, in the
frames it is inlined into, innermost out (dwarf/scopes.py FrameScope.outer).
"""
import json
import os

import gdb  # noqa: F401 - provided by gdb itself


def _value(expression):
    try:
        value = gdb.parse_and_eval(expression)
        return "<optimized out>" if value.is_optimized_out else str(value)
    except gdb.error as exc:
        return f"<error: {exc}>"


def _value_up(expression):
    """_value, in the selected frame, else `up` through the frames it is
    inlined into."""
    selected = frame = gdb.selected_frame()
    try:
        while True:
            text = _value(expression)
            if "No symbol" not in text or frame.type() != gdb.INLINE_FRAME:
                return text
            frame = frame.older()
            frame.select()
    finally:
        selected.select()


def main():
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    for setting in json.loads(os.environ.get("GS_GDB_SETTINGS", "[]")):
        gdb.execute(setting)
    probes = json.loads(os.environ["GS_GDB_PROBES"])
    by_number = {}
    for spec, expressions in probes:
        by_number[gdb.Breakpoint(spec).number] = (spec, expressions)
    gdb.execute("run", to_string=True)
    for _ in range(int(os.environ["GS_GDB_COUNT"])):
        hit = [b.number for b in gdb.breakpoints() if b.number in by_number and
               any(loc.address == gdb.selected_frame().pc() for loc in b.locations)]
        spec, expressions = by_number[hit[0]]
        value = _value_up if os.environ.get("GS_GDB_UP") == "1" else _value
        print("GS-VALUES " + json.dumps([spec, [value(e) for e in expressions]]), flush=True)
        gdb.execute("continue", to_string=True)
    gdb.execute("kill", to_string=True)


main()
