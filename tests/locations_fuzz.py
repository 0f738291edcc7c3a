"""Every variable location of a real library, through the planner.

Walks the DWARF of a module, collects each parameter/local DIE with a
DW_AT_location (an expression, or each entry of a location list) and a PC
where it holds, dedupes them by the shape of the expression (the tuple of
operation names, nested for DW_OP_entry_value) and pushes up to
`per_shape` of each shape through the path the planner takes:
ModuleDebugInfo.variable_at (DWARF location -> VariableLocation, entry
values and statics resolved) -> plan_probe (`print v;` at that PC ->
ProbePlan) -> emit_program (C text), and an event of the probe through
decode and the plain/JSON renderers. Any exception is an internal error;
the typed outcomes are counted.

Run directly for the numbers: `python -m tests.locations_fuzz PATH...`.
"""
from __future__ import annotations

import collections
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field

from gs_cgen.abi import abi
from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.location.expression import decode_ops, shape
from gs_cgen.dwarf.raw import ByteReader
from gs_cgen.dwarf.model import (AtAddress, AtRegisterOffset, CallSiteValue, ImplicitValue,
                                 InRegister, OptimizedOut, StaticAddress, UnsupportedLocation)
from gs_cgen.emit.program import emit_program
from gs_cgen.errors import DebugInfoError
from gs_cgen.plan.probe import PlanOptions, plan_probe
from gs_cgen.plan.model import NoCapture, PidNamespace, Plan, ProbeSite
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.scope import SiteScope, block_scopes
from gs_cgen.render.decode import decode
from gs_cgen.render.lines import render_json, render_lines
from gs_cgen.script.parser import parse

_VARIABLE_TAGS = ("DW_TAG_variable", "DW_TAG_formal_parameter")
_SCOPE_TAGS = ("DW_TAG_subprogram", "DW_TAG_lexical_block", "DW_TAG_inlined_subroutine")
_SCRIPT = "trace 0x0 { print v; }"
_OPTIONS = PlanOptions("fuzz.gs", PidNamespace(False))
_KINDS = {InRegister: "register", AtRegisterOffset: "memory", AtAddress: "static",
          StaticAddress: "static address value", ImplicitValue: "constant",
          CallSiteValue: "call-site entry value"}


@dataclass
class Summary:
    path: str
    expressions: int = 0                    # (DIE, expression, PC) triples found
    dies: int = 0                           # variable DIEs with DW_AT_location
    no_pc: int = 0                          # DIEs outside any function with code
    shapes: collections.Counter = field(default_factory=collections.Counter)
    tried: int = 0
    scopes_walked: int = 0                  # PCs where variables_at ran in full
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    weighted: collections.Counter = field(default_factory=collections.Counter)   # by occurrences
    internal: list = field(default_factory=list)
    seconds: float = 0.0

    def report(self, top: int = 25) -> str:
        lines = [f"{self.path}: {self.dies} variable DIEs with a location, {self.expressions} "
                 f"(expression, PC) pairs, {len(self.shapes)} distinct shapes, {self.tried} "
                 f"pushed through the planner, {self.scopes_walked} full scope walks, "
                 f"{self.no_pc} without a PC, "
                 f"{len(self.internal)} internal errors, {self.seconds:.1f} s"]
        lines.append("  outcomes of the samples pushed through the planner:")
        lines += [f"  {count:6d}  {outcome}" for outcome, count in self.outcomes.most_common()]
        lines.append("  outcome classes weighted by occurrences in the library (first sample of each shape):")
        lines += [f"  {count:6d}  {outcome}" for outcome, count in self.weighted.most_common()]
        lines.append("  unsupported shapes (occurrences in the library):")
        lines += [f"  {count:6d}  {text}" for text, count in self.unsupported.most_common(top)]
        lines += [f"  INTERNAL {entry}" for entry in self.internal[:20]]
        return "\n".join(lines)


def fuzz(path: str, per_shape: int = 2, scope_every: int = 256) -> Summary:
    start = time.perf_counter()
    module = open_module(path)
    summary = Summary(module.path)
    samples = _collect(module, summary, per_shape)
    modules = ModuleSet.of(module)
    (block,) = parse(_SCRIPT).traces
    unsupported_shapes = set()
    first_outcome: dict = {}
    for number, (key, (die_offset, pc)) in enumerate(samples):
        summary.tried += 1
        try:
            if number % scope_every == 0:
                # The whole scope walk too (frames, shadowing), on a
                # deterministic subset: it costs ~0.1 s per PC in libpython.
                block_scopes([module.frame_at(pc)])
                summary.scopes_walked += 1
            outcome = _push(module, modules, block, die_offset, pc)
        except DebugInfoError as exc:          # typed: e.g. no function index covers the PC
            outcome = f"no site: {exc.message.split(' 0x')[0]}"
        except Exception as exc:               # noqa: BLE001 — that is what we are looking for
            summary.internal.append((shape_text(key), hex(die_offset), hex(pc),
                                     "".join(traceback.format_exception_only(exc)).strip(),
                                     traceback.format_tb(exc.__traceback__)[-1].strip()))
            continue
        summary.outcomes[outcome] += 1
        if key not in first_outcome:
            first_outcome[key] = outcome
            summary.weighted[_outcome_class(outcome)] += summary.shapes[key]
        if outcome.startswith("unavailable: unsupported"):
            unsupported_shapes.add(key)
    for key in unsupported_shapes:
        summary.unsupported[shape_text(key)] = summary.shapes[key]
    summary.seconds = time.perf_counter() - start
    return summary


def shape_text(key) -> str:
    return key if isinstance(key, str) else " ".join(
        f"{name}({shape_text(inner)})" if inner is not None else name for name, inner in key)


# ------------------------------------------------------------ collecting
# pyelftools needs ~17 s to build every DIE of libpython and ~12 s more for
# its location lists; the walk below decodes only what it needs from the
# raw sections (DWARF 5 sections 7.5 and 7.7.3, DWARF 4 section 7.7.3),
# so the whole test stays well under a minute. The planner's own path
# (pyelftools) is what each sample then goes through.

_TAG_VARIABLES = (0x34, 0x05)                   # DW_TAG_variable, DW_TAG_formal_parameter
_TAG_SCOPES = (0x2e, 0x0b, 0x1d)                # subprogram, lexical_block, inlined_subroutine
_AT_LOCATION, _AT_LOW_PC, _AT_HIGH_PC, _AT_RANGES = 0x02, 0x11, 0x12, 0x55
_FIXED = {0x0b: 1, 0x0c: 1, 0x11: 1, 0x25: 1, 0x29: 1, 0x05: 2, 0x12: 2, 0x26: 2, 0x2a: 2,
          0x27: 3, 0x2b: 3, 0x06: 4, 0x13: 4, 0x1c: 4, 0x28: 4, 0x2c: 4, 0x07: 8, 0x14: 8,
          0x20: 8, 0x24: 8, 0x1e: 16, 0x19: 0, 0x21: 0}
_OFFSET = (0x0e, 0x10, 0x17, 0x1d, 0x1f, 0x1f20, 0x1f21)
_ULEB = (0x0d, 0x0f, 0x15, 0x1a, 0x1b, 0x22, 0x23, 0x1f01, 0x1f02)
_BLOCK_ULEB, _BLOCK_FIXED = (0x09, 0x18), {0x0a: 1, 0x03: 2, 0x04: 4}


def _abbrevs(data: bytes, offset: int) -> dict:
    r, table = ByteReader(data, offset), {}
    while (code := r.uleb()):
        tag, children, specs = r.uleb(), r.u(1), []
        while True:
            attr, form = r.uleb(), r.uleb()
            if attr == 0 and form == 0:
                break
            specs.append((attr, form, r.uleb() if form == 0x21 else None))
        table[code] = (tag, children, tuple(specs))
    return table


def _value(r: ByteReader, form: int, offset_size: int, address_size: int):
    """The attribute's value for the forms the walk reads, else None (skipped)."""
    while form == 0x16:                                  # DW_FORM_indirect
        form = r.uleb()
    if form in _FIXED:
        return r.u(_FIXED[form])
    if form in _ULEB:
        return r.uleb()
    if form in _OFFSET:
        return r.u(offset_size)
    if form == 0x01:
        return r.u(address_size)
    if form in _BLOCK_ULEB or form in _BLOCK_FIXED:
        size = r.uleb() if form in _BLOCK_ULEB else r.u(_BLOCK_FIXED[form])
        r.pos += size
        return r.data[r.pos - size:r.pos]
    if form == 0x08:
        r.pos = r.data.index(b"\0", r.pos) + 1
        return None
    raise ValueError(f"form 0x{form:x}")


def _walk(info: bytes, abbrev: bytes, cu_offset: int):
    """(tag, die offset, attributes, enclosing scope offsets) for the CU's DIEs;
    attributes maps DW_AT code -> (form, value) for the four the walk needs."""
    r = ByteReader(info, cu_offset)
    unit_length, offset_size = r.u(4), 4
    if unit_length == 0xFFFFFFFF:
        unit_length, offset_size = r.u(8), 8
    end = r.pos + unit_length
    version = r.u(2)
    if version >= 5:
        r.u(1)                                           # unit_type
        address_size, abbrev_offset = r.u(1), r.u(offset_size)
    else:
        abbrev_offset, address_size = r.u(offset_size), r.u(1)
    table = _abbrevs(abbrev, abbrev_offset)
    wanted = (_AT_LOCATION, _AT_LOW_PC, _AT_HIGH_PC, _AT_RANGES)
    parents: list = []
    while r.pos < end:
        offset = r.pos
        code = r.uleb()
        if code == 0:
            if parents:
                parents.pop()
            continue
        tag, children, specs = table[code]
        attrs = {}
        for attr, form, implicit in specs:
            value = _value(r, form, offset_size, address_size)
            if attr in wanted:
                attrs[attr] = (form, implicit if form == 0x21 else value)
        yield tag, offset, attrs, parents
        if children:
            parents.append((tag, offset, attrs))


def _collect(module, summary: Summary, per_shape: int):
    """[(shape, (die offset, pc))]: the first `per_shape` of each shape in
    DIE order, so the sample is the same on every run."""
    index = module._dwarf                           # noqa: SLF001 — a test walks the DWARF
    info = index.info_bytes()
    abbrev = index.section_data(index.dwarfinfo.debug_abbrev_sec)
    lists = _LocationLists(index)
    shapes_of: dict[bytes, object] = {}
    chosen: list = []
    taken: collections.Counter = collections.Counter()
    for cu_offset in index.cu_offsets():
        cu = None
        for tag, offset, attrs, parents in _walk(info, abbrev, cu_offset):
            if tag not in _TAG_VARIABLES or _AT_LOCATION not in attrs:
                continue
            summary.dies += 1
            cu = cu or index.cu_at(cu_offset)
            for expr, pc in _expressions(index, lists, cu, offset, attrs[_AT_LOCATION], parents):
                if pc is None:
                    summary.no_pc += 1
                    continue
                summary.expressions += 1
                key = shapes_of.get(expr)
                if key is None:
                    key = shapes_of[expr] = _shape_key(expr, cu)
                summary.shapes[key] += 1
                if taken[key] < per_shape:
                    taken[key] += 1
                    chosen.append((key, (offset, pc)))
    return chosen


def _expressions(index, lists, cu, die_offset: int, location, parents):
    """(expression bytes, a PC inside its range or None) of a variable DIE."""
    form, value = location
    scopes = [p for p in parents if p[0] in _TAG_SCOPES]
    if isinstance(value, bytes):                          # exprloc / block
        yield value, _scope_pc(index, scopes)
        return
    if not scopes:
        yield b"", None
        return
    for lo, hi, expr in lists.entries(cu, form, value, die_offset):
        if lo < hi:
            yield expr, lo


def _scope_pc(index, scopes) -> int | None:
    """The start of the innermost enclosing scope that has code (a local
    of a concrete function); None for CU-level DIEs and abstract trees."""
    for tag, offset, attrs in reversed(scopes):
        if _AT_LOW_PC in attrs and attrs[_AT_LOW_PC][0] == 0x01:
            return attrs[_AT_LOW_PC][1]
        if _AT_LOW_PC in attrs or _AT_RANGES in attrs:
            ranges = index.die_ranges(index.die_at(offset))
            if ranges:
                return ranges[0][0]
    return None


class _LocationLists:
    """[low, high) + expression of each entry of a location list, decoded
    from .debug_loclists (DWARF 5 section 7.7.3) or .debug_loc (DWARF 4);
    lists with address-table entries go through pyelftools."""

    def __init__(self, index) -> None:
        self._index = index
        info = index.dwarfinfo
        self._v5 = index.section_data(info.debug_loclists_sec)
        self._v4 = index.section_data(info.debug_loc_sec)

    def entries(self, cu, form: int, value: int, die_offset: int):
        top = cu.get_top_DIE()
        low = top.attributes.get("DW_AT_low_pc")
        base = low.value if low is not None else 0
        if cu.header["version"] < 5:
            return list(self._v4_entries(value, base))
        offset = value
        if form == 0x22:                                   # DW_FORM_loclistx
            table = top.attributes["DW_AT_loclists_base"].value
            offset = table + int.from_bytes(self._v5[table + 4 * value:table + 4 * value + 4], "little")
        try:
            return list(self._v5_entries(offset, base))
        except LookupError:                                # an address-table entry
            return self._pyelftools(cu, die_offset, base)

    def _v5_entries(self, offset: int, base: int):
        r = ByteReader(self._v5, offset)
        while True:
            kind = r.u(1)
            if kind == 0x00:                               # DW_LLE_end_of_list
                return
            if kind in (0x01, 0x02, 0x03):                 # ...x: .debug_addr
                raise LookupError(kind)
            if kind == 0x06:                               # DW_LLE_base_address
                base = r.u(8)
                continue
            if kind == 0x04:                               # DW_LLE_offset_pair
                lo, hi = base + r.uleb(), 0
                hi = base + r.uleb()
            elif kind == 0x05:                             # DW_LLE_default_location
                lo = hi = 0
            elif kind == 0x07:                             # DW_LLE_start_end
                lo, hi = r.u(8), r.u(8)
            elif kind == 0x08:                             # DW_LLE_start_length
                lo = r.u(8)
                hi = lo + r.uleb()
            elif kind == 0x09:                             # DW_LLE_GNU_view_pair
                r.uleb(), r.uleb()
                continue
            else:
                raise LookupError(kind)
            size = r.uleb()
            r.pos += size
            yield lo, hi, self._v5[r.pos - size:r.pos]

    def _v4_entries(self, offset: int, base: int):
        r = ByteReader(self._v4, offset)
        while True:
            lo, hi = r.u(8), r.u(8)
            if lo == 0 and hi == 0:
                return
            if lo == (1 << 64) - 1:
                base = hi
                continue
            size = r.u(2)
            r.pos += size
            yield base + lo, base + hi, self._v4[r.pos - size:r.pos]

    def _pyelftools(self, cu, die_offset: int, base: int):
        from elftools.dwarf.locationlists import BaseAddressEntry, LocationEntry
        die = self._index.die_at(die_offset)
        attr = die.attributes["DW_AT_location"]
        offset = attr.value
        out = []
        for entry in self._index.dwarfinfo.location_lists().get_location_list_at_offset(offset, die):
            if isinstance(entry, BaseAddressEntry):
                base = entry.base_address
            elif isinstance(entry, LocationEntry) and entry.begin_offset != -1:
                lo, hi = entry.begin_offset, entry.end_offset
                if not entry.is_absolute:
                    lo, hi = lo + base, hi + base
                out.append((lo, hi, bytes(entry.loc_expr)))
        return out


def _shape_key(expr: bytes, cu):
    ops = decode_ops(expr, cu.structs)
    if isinstance(ops, UnsupportedLocation):
        return "<undecodable>"
    return _key(ops)


def _key(ops) -> tuple:
    return tuple((op.op_name, _key(op.args[0]) if op.op_name.endswith("entry_value")
                  and op.args and isinstance(op.args[0], list) else None) for op in ops)


# ------------------------------------------------------------- planning

def _push(module, modules, block, die_offset: int, pc: int) -> str:
    """One variable DIE at one PC through dwarf -> plan -> emit; the outcome."""
    variable = module.variable_at(die_offset, pc)
    if variable is None:
        return "not a named variable"
    site = ProbeSite(0, f"0x{pc:x}", module.path, pc, module.vaddr_to_file_offset(pc),
                     None, None, None)
    scope = SiteScope({"v": variable}, {})
    probe = plan_probe(block, site, module, modules, scope, _SCRIPT, _OPTIONS)
    emit_program(Plan((probe,), (), _OPTIONS.pid_namespace, _OPTIONS.transport, None, "fuzz.gs"))
    event = decode(_event_bytes(probe), probe)       # and what the renderer makes of its type
    render_lines(event, probe)
    render_json(event, probe)
    capture = probe.slots[0].capture
    location = variable.location
    if isinstance(capture, NoCapture):
        if isinstance(location, OptimizedOut):
            return "unavailable: optimized out"
        return "unavailable: " + _reason_class(capture.reason)
    return f"read: {_KINDS.get(type(location), type(location).__name__)} ({type(capture).__name__})"


def _event_bytes(probe) -> bytes:
    """An event whose every value was read fine, with 0x41 data bytes."""
    raw = bytearray(b"\x41" * probe.event_size)
    raw[:probe.bitmap_offset] = bytes(probe.bitmap_offset)
    struct.pack_into("<Q", raw, probe.bitmap_offset, (1 << len(probe.lines)) - 1)
    for slot in probe.slots:
        struct.pack_into("<BxxxIQ", raw, slot.offset, abi().constants["GS_STATUS_OK"], slot.size,
                         0x1000)
    return bytes(raw)


def _outcome_class(outcome: str) -> str:
    """`read: register`, `unavailable: unsupported: DW_OP_deref`, ..."""
    if outcome.startswith("read: "):
        return outcome.split(" (")[0]
    return outcome.split(",")[0]


def _reason_class(reason: str) -> str:
    """The reason without the expression it quotes."""
    return reason.split(", in [")[0].split(" in [")[0]


def main(paths: list[str]) -> int:
    failed = 0
    for path in paths:
        summary = fuzz(path)
        print(summary.report())
        failed += len(summary.internal)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
