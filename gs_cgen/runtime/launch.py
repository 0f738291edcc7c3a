"""`gs-cgen trace -- COMMAND`: start a command held before its first
instruction, so probes are attached before any of its code runs.

The child asks to be ptraced and execs; the kernel stops it with SIGTRAP
right after execve, with the program and ld.so mapped and nothing run.
Detaching lets it go; from then on it is an ordinary child we wait for.
A command that is a script can be followed to its next execve
(PTRACE_O_TRACEEXEC), where it is held the same way (ptrace(2)). Once the
probes are attached, the program can be run through ld.so to its entry
point (a one-shot int3 at AT_ENTRY): every library of its closure is mapped
there, so their load offsets are known before the program's own code runs."""
from __future__ import annotations

import ctypes
import os
import signal
import stat
import struct
import subprocess

from gs_cgen.errors import TargetError
from gs_cgen.lazydataclass import dataclass

_PTRACE_TRACEME = 0
_PTRACE_PEEKTEXT = 1
_PTRACE_POKETEXT = 4
_PTRACE_CONT = 7
_PTRACE_GETREGS = 12
_PTRACE_SETREGS = 13
_PTRACE_DETACH = 17
_PTRACE_SETOPTIONS = 0x4200
_PTRACE_O_TRACEEXEC = 0x10
_PTRACE_O_EXITKILL = 0x100000
_PTRACE_EVENT_EXEC = 4
# The wait status of an exec stop, shifted right by 8 (ptrace(2)).
_EXEC_STOP = signal.SIGTRAP | (_PTRACE_EVENT_EXEC << 8)
_AT_ENTRY, _AT_BASE = 9, 7           # auxv tags (elf.h)
_INT3 = 0xCC
_RIP = 16                             # index of rip in struct user_regs_struct (sys/user.h)
_UserRegs = ctypes.c_ulonglong * 27
# A script is run by its interpreter: `bash SCRIPT ARGS`, `/usr/bin/env bash SCRIPT ARGS`.
_SCRIPT_ARGUMENTS = slice(1, 3)

_libc = ctypes.CDLL(None, use_errno=True)
_ptrace = _libc.ptrace
# ptrace is variadic in glibc: pass every argument at full width.
_ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_ptrace.restype = ctypes.c_long


def _trace_me() -> None:
    _ptrace(_PTRACE_TRACEME, 0, None, None)


@dataclass
class LaunchedCommand:
    process: subprocess.Popen
    argv: tuple[str, ...] = ()
    released: bool = False
    follows_exec: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def release(self) -> None:
        """Let the held command run (detach; no signal is delivered)."""
        if not self.released:
            _ptrace(_PTRACE_DETACH, self.pid, None, None)
            self.released = True

    def abandon(self) -> None:
        """Kill a command that never got going (compile error, Ctrl-C)."""
        # Not poll(): a ptrace stop not yet waited for (Ctrl-C while
        # following an exec) would pass for an exit there.
        if self.process.returncode is None:
            self.process.kill()
            if not self.released:
                self.release()
        self.process.wait()

    def end(self, grace_seconds: float = 2.0) -> bool:
        """The trace ended first (--max-events, --duration, a signal): the
        command's life is the trace's, as with gdb's `run` — SIGTERM, then
        SIGKILL after `grace_seconds`. False when it had exited already."""
        if self.process.poll() is not None:
            return False
        self.process.terminate()
        try:
            self.process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return True

    def exit_description(self) -> str:
        code = self.process.wait()
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"

    def runs_script(self) -> bool:
        """Whether the held program is an interpreter given a script (a
        `#!` file among its first arguments), which may exec the program
        the user means."""
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            return False
        return any(_is_script(self.pid, arg.decode(errors="replace"))
                   for arg in argv[_SCRIPT_ARGUMENTS] if arg)

    def run_to_entry(self) -> bool:
        """Run the held program until ld.so jumps to its entry point, and
        hold it there: True. False when it ended first, or when it cannot
        be stopped there (it is then still held where it was)."""
        entry = _entry_point(self.pid)
        if entry is None:                 # static: no ld.so runs first
            return False
        original = self._peek(entry)
        # An int3 there already (a uprobe on the entry point) would swallow ours.
        if original is None or original & 0xFF == _INT3:
            return False
        _ptrace(_PTRACE_POKETEXT, self.pid, entry, (original & ~0xFF) | _INT3)
        if not self._resume_until(signal.SIGTRAP):
            return False
        _ptrace(_PTRACE_POKETEXT, self.pid, entry, original)
        regs = _UserRegs()
        _ptrace(_PTRACE_GETREGS, self.pid, None, ctypes.addressof(regs))
        regs[_RIP] = entry                # back onto the restored instruction
        _ptrace(_PTRACE_SETREGS, self.pid, None, ctypes.addressof(regs))
        return True

    def _peek(self, address: int) -> int | None:
        ctypes.set_errno(0)
        word = _ptrace(_PTRACE_PEEKTEXT, self.pid, address, None)
        if word == -1 and ctypes.get_errno():
            return None
        return word & 0xFFFF_FFFF_FFFF_FFFF

    def _resume_until(self, stop: int) -> bool:
        """Continue until a stop whose wait status >> 8 is `stop`, passing
        other signals on: True; False when the program ended first."""
        pending = 0
        while True:
            _ptrace(_PTRACE_CONT, self.pid, None, pending)
            _, status = os.waitpid(self.pid, 0)
            if not os.WIFSTOPPED(status):
                self.process.returncode = os.waitstatus_to_exitcode(status)
                self.released = True          # nothing left to detach from
                return False
            if status >> 8 == stop:
                return True
            pending = os.WSTOPSIG(status)

    def follow_exec(self) -> bool:
        """Run the held command to its next execve and hold it there: True;
        False when it ended first (its exit status is kept)."""
        if not self.follows_exec:
            _ptrace(_PTRACE_SETOPTIONS, self.pid, None, _PTRACE_O_EXITKILL | _PTRACE_O_TRACEEXEC)
            self.follows_exec = True
        return self._resume_until(_EXEC_STOP)


def _entry_point(pid: int) -> int | None:
    """AT_ENTRY of a dynamically linked program (None without AT_BASE:
    no ld.so runs before the entry point)."""
    try:
        with open(f"/proc/{pid}/auxv", "rb") as f:
            data = f.read()
    except OSError:
        return None
    pairs = dict(struct.iter_unpack("<QQ", data[:len(data) // 16 * 16]))
    return pairs.get(_AT_ENTRY) if pairs.get(_AT_BASE) else None


def _is_script(pid: int, argument: str) -> bool:
    # A relative path is relative to the program's working directory; only
    # regular files are opened (a FIFO would block).
    path = argument if argument.startswith("/") else f"/proc/{pid}/cwd/{argument}"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


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
    # Held, it must not outlive us (gs-cgen killed before releasing it).
    _ptrace(_PTRACE_SETOPTIONS, process.pid, None, _PTRACE_O_EXITKILL)
    return LaunchedCommand(process, tuple(argv))
