"""What a backtrace derives from a module per address, remembered: the CFI
row at each PC and the source frames (function, line, inline chain) of
each machine frame, in memory for the session and on disk by build-id.

Why per address: the events of one probe unwind through the same return
addresses again and again, and a PC's row and frames depend only on the
module's bytes, which its build-id names (indexcache.py). Decoding them
is what makes a first backtrace slow (pyelftools parses the FDE, the CU's
DIEs and abbreviations, .debug_aranges: ~0.4 s for python3.11's first
PyDict_SetItem backtrace with a warm DWARF index, ~1.2 s cold); read back
from the cache they cost a marshal load.

The disk entry also records the sizes of the module's file and of its
separate debug file (and that file's path): the same build-id with other
debug info (stripped here, a -dbgsym installed since) names frames
differently, so a mismatch discards the entry. Entries are written at most
every FLUSH_SECONDS while new addresses come, and at exit; a save merges
what another gs-cgen process stored meanwhile. Errors are never stored:
an address that fails to decode is asked again next time.
"""
from __future__ import annotations

import os
import time

from gs_cgen.dwarf.cfi import CfaRule, RegisterRule, RuleKind, UnwindRow
from gs_cgen.dwarf.inline import SourceFrame

ENTRY = "unwind-memo-1"
FLUSH_SECONDS = 2.0
MAX_STORED = 50_000          # addresses per table kept on disk (a bound, not a working set)
_KINDS = {kind.value: kind for kind in RuleKind}


class ModuleMemo:
    """A module (dwarf.ModuleDebugInfo) whose unwind rows and source frames
    are remembered per address; everything else passes through."""

    def __init__(self, module, cache=None) -> None:
        """`cache`: the module's indexcache.py IndexCache, or None (no disk)."""
        self._module = module
        self._cache = cache
        self._stamp = file_stamp(module)
        self._rows: dict[int, UnwindRow | None] = {}
        self._sources: dict[tuple, list[SourceFrame]] = {}
        self._new = 0                      # entries not on disk yet
        self._saved_at = time.monotonic()
        if cache is not None:
            stored = decode_memo(cache.load(ENTRY), self._stamp)
            if stored is not None:
                self._rows, self._sources = stored

    def __getattr__(self, name: str):
        return getattr(self._module, name)

    def unwind_row_at(self, vaddr: int) -> UnwindRow | None:
        try:
            return self._rows[vaddr]
        except KeyError:
            row = self._rows[vaddr] = self._module.unwind_row_at(vaddr)
            self._new += 1
            return row

    def source_frames_at(self, vaddr: int, frame_die: int | None = None,
                         skip_at_entry: bool = False) -> list[SourceFrame]:
        key = (vaddr, frame_die, skip_at_entry)
        try:
            return self._sources[key]
        except KeyError:
            frames = self._sources[key] = self._module.source_frames_at(vaddr, frame_die,
                                                                        skip_at_entry)
            self._new += 1
            return frames

    def frame_variables_at(self, vaddr: int, frame_die: int):
        return self._module.frame_variables_at(vaddr, frame_die)

    def flush(self, force: bool = False) -> None:
        """Store new entries (at most every FLUSH_SECONDS unless `force`)."""
        if self._cache is None or not self._new:
            return
        if not force and time.monotonic() - self._saved_at < FLUSH_SECONDS:
            return
        rows, sources = self._rows, self._sources
        stored = decode_memo(self._cache.load(ENTRY), self._stamp)
        if stored is not None:          # another process's entries, ours win
            rows, sources = {**stored[0], **rows}, {**stored[1], **sources}
        self._cache.store(ENTRY, encode_memo(rows, sources, self._stamp))
        self._new, self._saved_at = 0, time.monotonic()


def file_stamp(module) -> tuple:
    """(file size, debug file path, its size): what else than the build-id
    decides the frames' names."""
    return (_size(module.open_path), module.debug_path or "",
            _size(module.debug_path) if module.debug_path else -1)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


# ------------------------------------------------------ plain data on disk

def encode_memo(rows: dict, sources: dict, stamp: tuple) -> tuple:
    """-> marshal-able tuples (gs_cgen/cachedir.py stores only plain data)."""
    row_items = tuple((vaddr, _encode_row(row)) for vaddr, row in list(rows.items())[:MAX_STORED])
    source_items = tuple((key, tuple((f.function, f.file, f.line, f.inlined, f.die_offset)
                                     for f in frames))
                         for key, frames in list(sources.items())[:MAX_STORED])
    return (stamp, row_items, source_items)


def decode_memo(value, stamp: tuple) -> tuple[dict, dict] | None:
    """The (rows, sources) of an encoded memo made for `stamp`, else None."""
    try:
        stored_stamp, row_items, source_items = value
        if tuple(stored_stamp) != tuple(stamp):
            return None
        rows = {vaddr: _decode_row(row) for vaddr, row in row_items}
        sources = {tuple(key): [SourceFrame(*f) for f in frames] for key, frames in source_items}
        return rows, sources
    except (TypeError, ValueError, KeyError):
        return None


def _encode_row(row: UnwindRow | None):
    if row is None:
        return None
    cfa = (row.cfa.register, row.cfa.offset) if row.cfa is not None else None
    registers = tuple((number, rule.kind.value, rule.offset, rule.register, rule.expression)
                      for number, rule in row.registers.items())
    return (cfa, row.cfa_expression, registers, row.return_address_register, row.signal_frame)


def _decode_row(value) -> UnwindRow | None:
    if value is None:
        return None
    cfa, cfa_expression, registers, return_address, signal_frame = value
    return UnwindRow(
        cfa=CfaRule(*cfa) if cfa is not None else None, cfa_expression=cfa_expression,
        registers={number: RegisterRule(_KINDS[kind], offset, register, expression)
                   for number, kind, offset, register, expression in registers},
        return_address_register=return_address, signal_frame=signal_frame)
