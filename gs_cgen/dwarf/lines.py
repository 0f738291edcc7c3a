"""Which addresses `FILE:LINE` probes, chosen as gdb 13 chooses the
locations of `break FILE:LINE` (gdb/linespec.c create_sals_line_offset,
gdb/symtab.c find_pcs_for_symtab_line, find_line_common,
skip_prologue_sal):

  1. the line's is_stmt rows, in every CU whose line table has the file
     (the rows gdb keeps: gdb_visible_rows);
  2. when the line has none anywhere, the smallest later line that has
     some (gdb's "best entry"; it may be in another function);
  3. of the addresses that fall in one block (gdb's innermost block at
     the address: the function, an inlined call, or a lexical block that
     declares something), only the lowest: a `for` line scattered over
     several ranges of one block is one location, one in a loop's own
     block and one before it are two;
  4. an address below the end of its function's prologue (sites.py
     function_probe_address) moves there: gdb's skip_prologue_sal keeps
     only addresses "already past the prologue".

One deliberate difference, between 1 and 2: a line that has no is_stmt
row at all, only non-statement rows (gcc at -O2 marks a line's
instructions is_stmt=false when it schedules them inside another
statement), is probed at those rows (the ones gdb keeps). gdb ignores
them and moves to the next line that has a statement, which can be in
another function: in GhostScope's inline_callsite_program, `break
inline_callsite_program.c:71` (a line of an inlined call in
wrapper_state) stops at line 77 in pick_state, where none of the line's
variables exist. A uprobe needs an instruction boundary, not a statement
boundary, and every row address is one; variables are read through their
location lists at that exact address. A line whose statement rows exist
but are all dropped by gdb's reader (gdb_visible_rows) follows gdb to the
next line: the compiler did mark statements there.
"""
from __future__ import annotations

from typing import Callable, Hashable

from gs_cgen.digest import name_digest
from gs_cgen.dwarf.index import DwarfIndex, LineTable, Row
from gs_cgen.lazydataclass import dataclass


@dataclass(frozen=True)
class ChosenLine:
    """The line probed and, per CU, its candidate addresses (ascending)."""

    line: int
    addresses: dict[int, tuple[int, ...]]     # CU offset -> addresses
    statements: bool                          # False: non-statement rows (see module doc)


@dataclass(frozen=True)
class FileRows:
    """One source file's rows in one CU's line table."""

    visible: tuple[Row, ...]                  # the rows gdb keeps, in address order
    statement_lines: frozenset[int]           # lines with an is_stmt row, kept or not


def file_rows(table: LineTable, path: str) -> FileRows:
    indexes = {i for i, p in table.files.items() if p == path}
    return FileRows(tuple(gdb_visible_rows(table, path)),
                    frozenset(r.line for r in table.rows if r.is_stmt and r.file in indexes))


def cached_file_rows(index: DwarfIndex, cu_offset: int, path: str) -> FileRows:
    """file_rows of the CU's line table, kept in the index cache by
    build-id: a warm `trace FILE:LINE` then loads one file's kept rows
    (hundreds) instead of decoding the CU's table (libpython's dictobject.c:
    12.5k rows) and replaying gdb's filter over it."""
    key = f"file-rows-{cu_offset}-" + name_digest(path)
    found = index.cached(key, lambda plain: _file_rows_from_plain(plain, path))
    if found is None:
        found = file_rows(index.line_table(cu_offset), path)
        index.store(key, (path, [tuple(r) for r in found.visible], sorted(found.statement_lines)))
    return found


def _file_rows_from_plain(plain, path: str) -> FileRows:
    # The entry names the file it is for: a digest is no proof.
    stored_path, rows, statement_lines = plain
    if stored_path != path:
        raise ValueError("rows of another file")
    return FileRows(tuple(map(Row._make, rows)), frozenset(statement_lines))


def choose_line(rows_by_cu: dict[int, FileRows], line: int) -> ChosenLine | None:
    """Steps 1, 1½ and 2 of the module doc; None when no row is at or
    after `line`."""
    exact = _addresses(rows_by_cu, line, statements=True)
    if exact:
        return ChosenLine(line, exact, True)
    if not any(line in rows.statement_lines for rows in rows_by_cu.values()):
        loose = _addresses(rows_by_cu, line, statements=False)
        if loose:
            return ChosenLine(line, loose, False)
    later = [r.line for rows in rows_by_cu.values() for r in rows.visible
             if r.is_stmt and r.line > line]
    if not later:
        return None
    best = min(later)
    return ChosenLine(best, _addresses(rows_by_cu, best, statements=True), True)


def _addresses(rows_by_cu: dict[int, FileRows], line: int,
               statements: bool) -> dict[int, tuple[int, ...]]:
    found = {}
    for cu_offset, rows in rows_by_cu.items():
        addresses = sorted({r.address for r in rows.visible
                            if r.line == line and r.is_stmt == statements})
        if addresses:
            found[cu_offset] = tuple(addresses)
    return found


def lowest_per_block(addresses: tuple[int, ...], block_at: Callable[[int], Hashable]) -> list[int]:
    """Step 3: the lowest of `addresses` (ascending) in each block; an
    address in no block at all is always kept (gdb filters by block only)."""
    seen: set = set()
    kept = []
    for address in addresses:
        block = block_at(address)
        if block is None:
            kept.append(address)
        elif block not in seen:
            seen.add(block)
            kept.append(address)
    return kept


def gdb_visible_rows(table: LineTable, path: str | None = None) -> list[Row]:
    """The rows gdb 13 keeps of a line table (of source file `path` only,
    when given), one sequence at a time as its line-program reader records
    them (gdb/dwarf2/read.c lnp_state_machine::record_line,
    dwarf_record_line_p; buildsym.c record_line):

      - moving to another file at address A closes the old file's table
        with an end marker at A, which deletes that file's rows at A ("the
        end marker inserted in the first file will discard any previous
        line entries at the same address"): in -O2 code many rows sit at
        one address, and `break dictobject.c:1903` finds no code on 1903;
      - except that a non-statement row in another file at an address
        that already has a statement row is ignored, file switch and all;
      - a row repeating the previous row's line in the same file is
        dropped once that line has had a non-zero discriminator (PR 17276:
        a `for` line in one row per loop part would otherwise be several
        lines to `step`);
      - line 0 rows are dropped.
    """
    paths = dict(table.files)
    kept: dict[str, list[Row]] = {}
    start = 0
    for i, row in enumerate(table.rows):
        if row.end_sequence:
            _record_sequence(table.rows, start, i + 1, paths, path, kept)
            start = i + 1
    _record_sequence(table.rows, start, len(table.rows), paths, path, kept)
    return sorted((r for rows in kept.values() for r in rows if not r.end_sequence),
                  key=lambda r: r.address)


def _record_sequence(rows, start: int, stop: int, paths: dict[int, str], wanted: str | None,
                     kept: dict[str, list[Row]]) -> None:
    last_file, last_line, last_address = None, 0, None
    stmt_at_address = had_discriminator = False
    previous_line = None
    for i in range(start, stop):
        row = rows[i]
        file = paths.get(row.file, row.file)
        if row.line != previous_line:
            had_discriminator, previous_line = row.discriminator != 0, row.line
        elif row.discriminator:
            had_discriminator = True
        file_changed = file != last_file
        end = row.end_sequence
        ignore = not end and (row.line == 0 or (file_changed and last_address == row.address
                                                and not row.is_stmt and stmt_at_address))
        if ((file_changed and not ignore) or end) and last_file is not None and \
                (wanted is None or last_file == wanted):
            _end_marker(kept.setdefault(last_file, []), row)
        if not end and not ignore:
            if (wanted is None or file == wanted) and \
                    (file_changed or row.line != last_line or not had_discriminator):
                kept.setdefault(file, []).append(row)
            last_file, last_line = file, row.line
        if row.address != last_address:
            stmt_at_address, last_address = False, row.address
        stmt_at_address |= row.is_stmt


def _end_marker(rows: list[Row], at: Row) -> None:
    """buildsym.c record_line with line 0: drop the file's rows at the
    marker's address, then add the marker (unless nothing is left before
    it, or only another marker)."""
    last_line = None
    while rows:
        last_line = rows[-1].line
        if rows[-1].address != at.address:
            break
        rows.pop()
    if last_line:
        rows.append(Row(at.address, at.file, 0, True, False, True))
