"""`bt`: what the probe copies for the unwinder, and how much.

The default stack window, 16 KiB, is what a deep interpreter stack needs
with room to spare: in python3.11, PyDict_SetItem called from a script's
loop is 1.3 KiB below the top of the stack (`_start`); each C-level
re-entry of the interpreter (a Python __init__, __setitem__ or key
function called from C) adds about 0.5 KiB (_PyEval_EvalFrameDefault's
336-byte frame and the call helpers around it), so 16 KiB holds some 30
of those. It fits the 32 KiB perf-buffer event with room for other
values; --backtrace-stack changes it (up to the event limit, plan/limits.py).
"""
from __future__ import annotations

from gs_cgen.abi import abi
from gs_cgen.plan.model import BacktraceCapture, BacktraceShow, ModuleFile, ProbeSite
from gs_cgen.script import ast

DEFAULT_BACKTRACE_DEPTH = 64        # CONTRACT.md --backtrace-depth
MAX_BACKTRACE_DEPTH = 128
DEFAULT_BACKTRACE_STACK = 16 * 1024


def backtrace_capture(stmt: ast.Backtrace, options, site: ProbeSite,
                      root: str = "") -> BacktraceCapture:
    """`options`: the plan's PlanOptions (depth, stack window, the kernel's
    pending-returns layout)."""
    chunk = abi().constants["GS_BT_CHUNK"]
    # The probe copies whole chunks (and the tail of the last page).
    window = max(chunk, options.backtrace_stack // chunk * chunk)
    # At a return, ip is in the caller: the probe's address says nothing.
    own = None if site.at_return else ModuleFile(site.module_path, site.attach_path, root=root)
    return BacktraceCapture(options.backtrace_depth, window, BacktraceShow(stmt.raw, stmt.inlined, stmt.full), site.frame_die,
                            own, site.address, options.pending_returns)


def backtrace_data_size(capture: BacktraceCapture) -> int:
    structs = abi().structs
    return structs["gs_backtrace_regs"].size + structs["gs_pending_returns"].size + \
        capture.stack_bytes
