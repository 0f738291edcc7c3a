"""Keeps proc_module_offsets filled: for the processes present at attach
time, for processes that exec later (-t), and whenever a probe reports a
miss (a library mapped after we looked). A process whose modules are not
all mapped yet is retried for a while; until then its values read as
`<error: offsets unavailable>`, never as guesses.

A probe reports a process's misses once (gs_offsets_wanted), so that a hot
probe cannot flood the ring. When the retries give up with a module still
unmapped (a library dlopen()ed later, or one the command loads after a
while), that report is re-armed: the next miss is reported again, at most
once per RETRY_SECONDS per process, until the module maps.

A module whose thread-local variables a probe reads is done only when its
TLS block is known too (runtime/tls.py): ld.so numbers and places TLS
blocks while it loads the program, after the files are mapped. What cannot
be read at all (no debug info for ld.so and no match of the module's
PT_TLS) is said once, through `notes`."""
from __future__ import annotations

import time
from dataclasses import field
from typing import Callable

from gs_cgen.errors import GsError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import ModuleRef
from gs_cgen.runtime import target as proc
from gs_cgen.runtime.tls import TlsReader

RETRY_SECONDS = 3.0
# A pending process's maps are read at most this often, however fast events
# arrive (retry() runs after every poll batch).
RETRY_INTERVAL = 0.1


@dataclass
class OffsetKeeper:
    session: object                      # TraceSession (set_module_offsets, rearm_offsets_notice)
    modules: tuple[ModuleRef, ...]
    pid_filter: int | None = None
    pending: dict[int, float] = field(default_factory=dict)   # pid -> give-up time
    filled: dict[int, set[int]] = field(default_factory=dict)  # pid -> cookies done
    last_try: dict[int, float] = field(default_factory=dict)   # pid -> when retry() read its maps
    notes: Callable[[str], None] = lambda _text: None          # diagnostics, each said once
    tls: TlsReader = field(default_factory=TlsReader)
    offsets_filled: dict[int, set[int]] = field(default_factory=dict)  # pid -> cookies
    _noted: set[str] = field(default_factory=set)

    def fill(self, pid: int) -> bool:
        """Fill every plan module mapped in `pid`; True when all are done."""
        if self.pid_filter is not None and pid != self.pid_filter:
            return True
        try:
            target = proc.open_process(pid)
        except GsError:
            return True                   # gone: nothing left to do
        done = self.filled.setdefault(pid, set())
        for module in self.modules:
            if module.cookie in done:
                continue
            offsets = proc.module_offsets(target, module)
            if offsets is None:
                continue
            self._fill_offsets(pid, module, offsets)
            if module.tls is None or self._fill_tls(target, module, offsets.text):
                done.add(module.cookie)
        return len(done) == len(self.modules)

    def _fill_offsets(self, pid: int, module: ModuleRef, offsets) -> None:
        filled = self.offsets_filled.setdefault(pid, set())
        if module.cookie not in filled:
            self.session.set_module_offsets(pid, module.cookie, offsets)
            filled.add(module.cookie)

    def _fill_tls(self, target, module: ModuleRef, bias: int) -> bool:
        block = self.tls.block(target, module, bias)
        if block is not None:
            self.session.set_module_tls(target.pid, module.cookie, block)
            return True
        problem = self.tls.problems.get(module.path)
        if problem and module.path not in self._noted:
            self._noted.add(module.path)
            self.notes(f"thread-local variables of {module.path} are unavailable in process "
                       f"{target.pid}: {problem}")
        return False

    def watch(self, pid: int) -> None:
        """A process we heard about (exec, probe miss): fill now or retry."""
        if not self.fill(pid):
            self.pending.setdefault(pid, time.monotonic() + RETRY_SECONDS)

    def retry(self) -> None:
        now = time.monotonic()
        for pid, give_up in list(self.pending.items()):
            if now - self.last_try.get(pid, float("-inf")) < RETRY_INTERVAL:
                continue
            self.last_try[pid] = now
            if self.fill(pid):
                self._settle(pid)
            elif now > give_up:
                self._settle(pid)
                self.session.rearm_offsets_notice(pid)

    def _settle(self, pid: int) -> None:
        del self.pending[pid]
        self.last_try.pop(pid, None)

    def fill_existing(self) -> None:
        """Processes running when we attach: the -p process, or (-t) every
        process that maps one of the plan's modules."""
        if self.pid_filter is not None:
            self.watch(self.pid_filter)
            return
        pids = {pid for module in self.modules for pid in proc.processes_mapping(module.file)}
        for pid in sorted(pids):
            self.watch(pid)
