"""The availability map (plan/availability.py) as text for an 80-column
terminal, and as JSON.

Plain: a grid, one row per source line, one column per variable, each
cell the mark and how it is read (`✓ rdi`, `· `, `~ [rbp-20]/rdi`).
Columns are as wide as their widest cell; when they do not fit in 80
columns the grid is split into several, each repeating the line column.
A shadowed name is written `name@LINE` (its declaration line). Lines
where the probe stops in an inlined call's frame name it in a last
column, `frame`."""
from __future__ import annotations

import os
from collections import Counter

from gs_cgen.plan.availability import MARKS, FunctionMap

WIDTH = 80
LEGEND = ("  ✓ readable   ~ partly (some pieces, or at some of the line's addresses)\n"
          "  · optimized out or not in scope\n"
          "  how: a register; [reg±offset] memory; static; tls; const; entry (its value\n"
          "  at function entry); computed (a DWARF expression); pieces")


def map_text(found: FunctionMap) -> str:
    of_file = f" of {os.path.basename(found.file)}" if found.file else ""
    head = f"{found.function}: availability by line{of_file}\n" \
           f"  function probe at 0x{found.entry_address:x} in {found.module_path}"
    if found.other_files:
        head += ("\n  not listed: lines of code inlined from "
                 + ", ".join(os.path.basename(f) for f in found.other_files))
    if found.note:
        return f"{head}\n  {found.note}"
    if not found.columns:
        return (f"{head}\n  no parameters or locals; lines with a probe address: "
                + ", ".join(str(row.line) for row in found.rows))
    names = _column_names(found)
    first = ["line"] + [f"{row.line}" for row in found.rows]
    cells = [[name] + [_cell_text(row.cells[i]) for row in found.rows]
             for i, name in enumerate(names)]
    if any(row.frame for row in found.rows):
        # Where the probe stops in an inlined call's frame: the last column.
        cells.append(["frame"] + [row.frame or "" for row in found.rows])
    out = [head]
    for group in _groups([max(len(t) for t in column) for column in cells],
                         max(len(t) for t in first)):
        out.append("")
        out.extend(_grid(first, [cells[i] for i in group]))
    out.append("")
    out.append(LEGEND)
    return "\n".join(out)


def _column_names(found: FunctionMap) -> list[str]:
    counts = Counter(column.name for column in found.columns)
    return [f"{c.name}@{c.decl_line}" if counts[c.name] > 1 and c.decl_line else c.name
            for c in found.columns]


def _cell_text(cell) -> str:
    if cell.status == "unavailable":
        return MARKS[cell.status]
    return f"{cell.mark} {cell.how}"


def _groups(widths: list[int], first_width: int) -> list[list[int]]:
    """Column indices per grid, each grid within WIDTH."""
    groups, current, used = [], [], 2 + first_width
    for index, width in enumerate(widths):
        if current and used + 2 + width > WIDTH:
            groups.append(current)
            current, used = [], 2 + first_width
        current.append(index)
        used += 2 + width
    if current or not groups:
        groups.append(current)
    return groups


def _grid(first: list[str], columns: list[list[str]]) -> list[str]:
    widths = [max(len(t) for t in column) for column in columns]
    first_width = max(len(t) for t in first)
    lines = []
    for r in range(len(first)):
        cells = [first[r].rjust(first_width)] + \
            [column[r].ljust(width) for column, width in zip(columns, widths)]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return lines


def map_json(found: FunctionMap) -> dict:
    """The same facts as data (docs/reference.md "gs-cgen info --output json")."""
    return {
        "function": found.function, "module": found.module_path,
        "probe_address": found.entry_address, "note": found.note, "file": found.file,
        "other_files": list(found.other_files),
        "variables": [{"name": c.name, "kind": c.kind, "type": c.type,
                       "decl_line": c.decl_line, "scope": c.scope} for c in found.columns],
        "lines": [{
            "file": row.file, "line": row.line, "addresses": list(row.addresses),
            "frame": row.frame,
            "cells": [{"variable": index, "status": cell.status, "mark": cell.mark,
                       "how": cell.how,
                       "at": [{"address": at.address, "status": at.status, "how": at.how,
                               "location": at.location} for at in cell.at]}
                      for index, cell in enumerate(row.cells)]}
            for row in found.rows],
    }
