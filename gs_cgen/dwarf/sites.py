"""Where probes go: a function's post-prologue address and the addresses of
a source line, both chosen the way gdb 13 chooses breakpoint addresses so
that `gs-cgen` and `gdb -ex 'break X'` agree.

gdb's amd64 rule for GCC code (gdb/symtab.c find_function_start_sal_1,
skip_prologue_sal, gdb/amd64-tdep.c amd64_skip_prologue):
  1. for an optimized GCC CU (gdb: "locations valid"), the function's
     first instruction: location lists describe the entry state exactly;
  2. else a row with the `prologue_end` flag inside the function;
  3. else decode `endbr64; push %rbp; mov %rsp,%rbp`; without a frame setup
     the entry address stays, otherwise continue to the next line-table
     boundary if that lands mid-row and still inside the function.

An inlined copy is a location of its own (module.py `_inline_site`), found
here without walking the CU's DIE tree (inlined_instances).
"""
from __future__ import annotations

import bisect
import os.path
import re

from gs_cgen.digest import name_digest
from gs_cgen.dwarf.index import DwarfIndex, LineTable, gdb_function_name

_ENDBR64 = bytes.fromhex("f30f1efa")
_PUSH_RBP = 0x55
_MOV_RSP_RBP = (bytes.fromhex("4889e5"), bytes.fromhex("488bec"))
_MOVL_ESP_EBP = (bytes.fromhex("89e5"), bytes.fromhex("8bec"))
_OPT_FLAG = re.compile(r"(?:^|\s)-O(\S*)")


def is_optimized_gcc(producer: str | None) -> bool:
    """gdb trusts GCC >= 4.5 location lists ("locations_valid") when the CU
    has any; an -O level other than -O0 in DW_AT_producer stands in for
    that here, since only optimized GCC CUs carry location lists."""
    if not producer or not producer.startswith("GNU"):
        return False
    levels = _OPT_FLAG.findall(producer)
    return bool(levels) and levels[-1] not in ("0",)


def prologue_frame_end(code: bytes) -> int | None:
    """Bytes of `[endbr64] push %rbp; mov %rsp,%rbp` at the start of
    `code`, or None for a frameless function (amd64_analyze_prologue)."""
    pc = 4 if code.startswith(_ENDBR64) else 0
    if len(code) <= pc or code[pc] != _PUSH_RBP:
        return None
    after = code[pc + 1:pc + 4]
    if after in _MOV_RSP_RBP:
        return pc + 4
    if after[:2] in _MOVL_ESP_EBP:
        return pc + 3
    return None                       # push without mov: gdb calls it frameless


def function_probe_address(table: LineTable, low: int, high: int, optimized: bool,
                           code: bytes) -> int:
    if optimized:
        return low
    marked = next((r.address for r in table.rows
                   if r.prologue_end and low <= r.address < high and not r.end_sequence), None)
    if marked is not None:
        return marked
    frame = prologue_frame_end(code)
    if frame is None:
        return low
    pc = low + frame
    i = bisect.bisect_right(table.addresses, pc)
    row_start = table.addresses[i - 1] if i > 0 else None
    if row_start != pc and i < len(table.addresses) and table.addresses[i] < high:
        return table.addresses[i]     # mid-row: the next line boundary
    return pc


def inlined_instances(index: DwarfIndex, name: str) -> list:
    """The DW_TAG_inlined_subroutine DIEs that are copies of the function
    gdb knows as `name` (gdb_function_name of its abstract instance: a
    DW_TAG_subprogram with DW_AT_inline, one per CU that inlined it) and
    that gdb keeps (valid addresses). Found by raw searches for the name
    and for references to each abstract instance, not by walking CUs, and
    kept in the index cache by build-id: an index of inlined copies by
    name, built name by name (most names have none, and finding that out
    takes several passes over all of .debug_info)."""
    key = inlined_cache_key(name)
    offsets = index.cached(key, lambda plain: _offsets_named(plain, name))
    if offsets is None:
        offsets = [die.offset for die in _find_inlined_instances(index, name)]
        index.store(key, (name, offsets))
    return [index.die_at(offset) for offset in offsets]


def inlined_cache_key(name: str) -> str:
    # Names may hold any character (C++ `ns::f(int)`); a file name may not.
    # v2: entries found before _in_its_cus_code could hold a false copy.
    # v3: entries found before names by string index (clang DWARF 5) were read.
    return "inlined-v3-" + name_digest(name)


def _offsets_named(plain, name: str) -> list[int]:
    # The cache entry names the function it is for: a digest is no proof.
    stored_name, offsets = plain
    if stored_name != name or not all(isinstance(o, int) for o in offsets):
        raise ValueError("inlined instances of another name")
    return list(offsets)


def _find_inlined_instances(index: DwarfIndex, name: str) -> list:
    found = []
    for abstract in index.dies_named(name, ("DW_TAG_subprogram",), ("DW_AT_inline",)):
        if gdb_function_name(abstract) != name:
            continue
        for die in index.references_to(abstract, ("DW_AT_abstract_origin",),
                                       ("DW_TAG_inlined_subroutine",)):
            if die.tag == "DW_TAG_inlined_subroutine" and _in_its_cus_code(index, die) and \
                    die.attributes["DW_AT_abstract_origin"].value + die.cu.cu_offset == abstract.offset:
                found.append(die)
    return sorted(found, key=lambda die: die.offset)


def _in_its_cus_code(index: DwarfIndex, die) -> bool:
    """Every range of the inlined copy lies in a function of its own CU.
    A raw search's hit can decode as a DIE inside another one's bytes (in
    ld.so, `decl_line 30` read as the abbreviation of an inlined `malloc`,
    at address 0x3600001337340000): real copies are in their CU's code."""
    ranges = index.die_ranges(die)
    return bool(ranges) and all(index.in_code_of(low, die.cu.cu_offset) for low, _ in ranges)


def line_at(table: LineTable, address: int) -> int | None:
    """The line gdb reports for `address`: the last row there, preferring
    an is_stmt one (find_pc_sect_line)."""
    at = [r for r in table.rows if r.address == address and r.line and not r.end_sequence]
    stmt = [r for r in at if r.is_stmt]
    chosen = stmt or at
    return chosen[-1].line if chosen else None


def covering_line(table: LineTable, address: int) -> int | None:
    """The source line of the row covering `address` (the last row at the
    largest row address not above it, an is_stmt one first), by bisection:
    rows are in address order, sequence after sequence."""
    i = bisect.bisect_right(table.row_addresses, address) - 1
    if i < 0 or table.rows[i].end_sequence:
        return None
    at = table.rows[i].address
    best = None
    while i >= 0 and table.rows[i].address == at and not table.rows[i].end_sequence:
        row = table.rows[i]
        if row.line and (best is None or (row.is_stmt and not best.is_stmt)):
            best = row
        i -= 1
    return best.line if best is not None else None


def match_files(spec: str, paths: list[str]) -> list[str]:
    """Paths equal to `spec` or ending in '/spec' (gdb's file matching)."""
    spec = spec.rstrip("/")
    if spec.startswith("/"):
        spec = os.path.normpath(spec)
        return [p for p in paths if p == spec]
    return [p for p in paths if p == spec or p.endswith("/" + spec)]
