"""gdb as the oracle for return probes (run inside gdb: `gdb -batch -x
gdb_returns.py BINARY`). For every (function, entry expressions, return
paths) of GS_GDB_RETURNS it breaks where `break FUNCTION` stops, evaluates
the entry expressions there, and finishes the call with a
FinishBreakpoint: its return_value is what `finish` prints as "Value
returned is $1 = ...". Each path ('' = the whole value, 'id' = a member,
through a pointer if it is one) of that value is printed, in the order the
calls returned, one `GS-RETURN [function, entry values, path values]` line
each, up to GS_GDB_COUNT.

gdb's finish breakpoints do not notice a longjmp: a call left that way
keeps one, and a later call in the same frame would fire it. So when a
call is entered, the pending finishes of frames at or below its own
(their CFA not above its CFA, so no longer on the stack) are deleted,
as the kernel drops the uretprobe instances of dead frames."""
import json
import os

import gdb  # noqa: F401 — provided by gdb

SPECS = json.loads(os.environ["GS_GDB_RETURNS"])
LIMIT = int(os.environ["GS_GDB_COUNT"])
returned = []
pending = []


def _path_value(value, path: str) -> str:
    for member in filter(None, path.split(".")):
        if value.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            if int(value) == 0:
                return "<null>"
            value = value.dereference()
        value = value[member]
    if value.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
        if int(value) == 0:
            return "NULL"
        target = value.type.strip_typedefs().target().strip_typedefs()
        return value.string() if target.name == "char" else "pointer"
    return str(value)


class Returned(gdb.FinishBreakpoint):
    def __init__(self, frame, function, entry_values, paths):
        super().__init__(frame, internal=True)
        self.function, self.entry_values, self.paths = function, entry_values, paths
        self.cfa = _cfa(frame)
        pending.append(self)

    def stop(self):
        pending.remove(self)
        value = self.return_value
        values = [None if value is None else _path_value(value, p) for p in self.paths]
        if len(returned) < LIMIT:
            returned.append([self.function, self.entry_values, values])
        return False

    def out_of_scope(self):
        pass


class Entered(gdb.Breakpoint):
    def __init__(self, function, exprs, paths):
        super().__init__(function, internal=True)
        self.function, self.exprs, self.paths = function, exprs, paths

    def stop(self):
        values = [_path_value(gdb.parse_and_eval(e), "") for e in self.exprs]
        frame = gdb.newest_frame()
        for dead in [p for p in pending if p.cfa <= _cfa(frame)]:
            pending.remove(dead)
            dead.delete()
        Returned(frame, self.function, values, self.paths)
        return False


def _cfa(frame) -> int:
    """The caller's sp when it made the call: the frame's CFA."""
    return int(frame.older().read_register("rsp"))


gdb.execute("set pagination off")
gdb.execute("set print pretty off")
for function, exprs, paths in SPECS:
    Entered(function, exprs, paths)
gdb.execute("run", to_string=True)
for line in returned:
    print("GS-RETURN " + json.dumps(line))
