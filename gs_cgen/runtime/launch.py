"""`gs-cgen trace -- COMMAND`: start a command held before its first
instruction, so probes are attached before any of its code runs.

The child asks to be ptraced and execs; the kernel stops it with SIGTRAP
right after execve, with the program and ld.so mapped and nothing run.
Detaching lets it go; from then on it is an ordinary child we wait for."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from dataclasses import dataclass

from gs_cgen.errors import TargetError

_PTRACE_TRACEME = 0
_PTRACE_DETACH = 17
_libc = ctypes.CDLL(None, use_errno=True)


def _trace_me() -> None:
    _libc.ptrace(_PTRACE_TRACEME, 0, None, None)


@dataclass
class LaunchedCommand:
    process: subprocess.Popen
    released: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def release(self) -> None:
        """Let the held command run (detach; no signal is delivered)."""
        if not self.released:
            _libc.ptrace(_PTRACE_DETACH, self.pid, None, None)
            self.released = True

    def abandon(self) -> None:
        """Kill a command that never got going (compile error, Ctrl-C)."""
        if self.process.poll() is None:
            self.process.kill()
            if not self.released:
                self.release()
        self.process.wait()

    def exit_description(self) -> str:
        code = self.process.wait()
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"


def launch_held(argv: list[str]) -> LaunchedCommand:
    try:
        process = subprocess.Popen(argv, preexec_fn=_trace_me)
    except FileNotFoundError:
        raise TargetError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise TargetError(f"cannot execute {argv[0]}: permission denied") from None
    _, status = os.waitpid(process.pid, 0)
    if not os.WIFSTOPPED(status):
        process.returncode = os.waitstatus_to_exitcode(status)
        raise TargetError(f"{argv[0]} ended before it could be traced")
    return LaunchedCommand(process)
