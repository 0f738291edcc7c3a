"""Source lines: the probe sites of `FILE:LINE` as gdb's `break` places
them (the choice itself is dwarf/lines.py), the lines of one function
(for `info --lines`), and the line of an instruction.

A part of the module facade (dwarf/module.py): `module` is the
ModuleDebugInfo it answers for."""
from __future__ import annotations

import os

from gs_cgen.dwarf.index import FunctionEntry
from gs_cgen.dwarf.lines import (ChosenLine, FileRows, cached_file_rows, choose_line,
                                 gdb_visible_rows, lowest_per_block)
from gs_cgen.dwarf.model import LineSite
from gs_cgen.dwarf.scopes import gdb_block_at
from gs_cgen.dwarf.sites import line_at, match_files
from gs_cgen.errors import DebugInfoError, nearest


class LineLookup:
    def __init__(self, module) -> None:
        self._module = module
        self._file_rows: dict[tuple[int, str], FileRows] = {}

    def find_lines(self, file: str, line: int) -> list[LineSite]:
        """ModuleDebugInfo.find_lines."""
        target = self._match_one_file(file)
        cus = self._module._dwarf.files_by_path()[target]
        chosen = choose_line({off: self._rows_of(off, target) for off in cus}, line)
        if chosen is None:
            raise DebugInfoError(f"no code at or after line {line} of '{target}'")
        sites: list[LineSite] = []
        for off, addresses in chosen.addresses.items():
            sites.extend(self._line_sites(off, target, chosen, addresses))
        return sorted(sites, key=lambda s: s.address)

    def function_source_lines(self, cu, entry: FunctionEntry) -> list[tuple[str, int]]:
        """The (file, line) of every statement row gdb keeps in the ranges
        of function `entry` of `cu`, in line order."""
        table = self._module._dwarf.line_table(cu.cu_offset)
        inside = lambda pc: any(lo <= pc < hi for lo, hi in entry.ranges)   # noqa: E731
        lines = {(table.files.get(row.file, str(row.file)), row.line)
                 for row in gdb_visible_rows(table)
                 if row.is_stmt and row.line and not row.end_sequence and inside(row.address)}
        return sorted(lines, key=lambda fl: (fl[1], fl[0]))

    def _match_one_file(self, file: str) -> str:
        paths = list(self._module._dwarf.files_by_path())
        matches = match_files(file, paths)
        if not matches:
            pool = {os.path.basename(p) for p in paths} | set(paths)
            raise DebugInfoError(f"no source file '{file}' in '{self._module.path}'",
                                 candidates=nearest(file, pool))
        if len(matches) > 1:
            raise DebugInfoError(f"source file '{file}' is ambiguous in '{self._module.path}'",
                                 hints=("give more of the path",), candidates=tuple(sorted(matches)))
        return matches[0]

    def _line_sites(self, cu_offset: int, path: str, chosen: ChosenLine,
                    addresses: tuple[int, ...]) -> list[LineSite]:
        dwarf = self._module._dwarf
        functions = dwarf.functions(cu_offset)
        cu = dwarf.cu_at(cu_offset)
        sites = []
        for address in lowest_per_block(addresses, lambda pc: self._block_at(functions, pc)):
            entry = function_covering(functions, address)
            site_line, frame_die = chosen.line, None
            if entry is not None:
                # gdb's skip_prologue_sal: an address before the end of the
                # prologue moves there, as for `break f`, and stops in the
                # function's frame (dwarf/scopes.py).
                probe = self._module._functions.probe_address(cu, *entry.ranges[0])
                if address < probe:
                    address, frame_die = probe, entry.die_offset
                    site_line = line_at(dwarf.line_table(cu_offset), probe) or chosen.line
            sites.append(LineSite(path, site_line, address, entry.name if entry else None,
                                  frame_die, chosen.statements))
        return sites

    def _rows_of(self, cu_offset: int, path: str) -> FileRows:
        key = (cu_offset, path)
        if key not in self._file_rows:
            self._file_rows[key] = cached_file_rows(self._module._dwarf, cu_offset, path)
        return self._file_rows[key]

    def _block_at(self, functions, pc: int):
        entry = function_covering(functions, pc)
        if entry is None:
            return None
        dwarf = self._module._dwarf
        return gdb_block_at(dwarf, dwarf.die_at(entry.die_offset), pc)

    def probe_line(self, vaddr: int) -> tuple[str | None, int | None]:
        """line_at for a probe site, kept in the index cache by build-id:
        the CU's whole line table, decoded or loaded, cost ~20 ms of a warm
        libpython `info function` for the one row a site shows."""
        dwarf = self._module._dwarf
        name = f"probe-line-{vaddr:x}"
        found = dwarf.cached(name, _file_line_from_plain)
        if found is None:
            found = self.line_at(vaddr)
            dwarf.store(name, list(found))
        return found

    def line_at(self, vaddr: int) -> tuple[str | None, int | None]:
        """ModuleDebugInfo.line_at."""
        dwarf = self._module._dwarf
        cu = dwarf.cu_for_address(vaddr)
        if cu is None:
            return None, None
        table = dwarf.line_table(cu.cu_offset)
        best = None
        for row in table.rows:
            if row.address > vaddr:
                continue
            if row.end_sequence:
                if best is not None and best.address <= row.address <= vaddr:
                    best = None        # that sequence ended before vaddr
                continue
            # gdb's find_pc_sect_line: the last row at the address, but an
            # is_stmt one there over a later non-statement row.
            if row.line and (best is None or row.address > best.address or
                             (row.address == best.address and (row.is_stmt or not best.is_stmt))):
                best = row
        if best is None:
            return None, None
        return table.files.get(best.file), best.line


def function_covering(functions, address: int) -> FunctionEntry | None:
    for entry in functions:
        if any(lo <= address < hi for lo, hi in entry.ranges):
            return entry
    return None


def _file_line_from_plain(plain) -> tuple[str | None, int | None]:
    file, line = plain
    if not (file is None or isinstance(file, str)) or not (line is None or isinstance(line, int)):
        raise TypeError("a probe line")
    return file, line
