"""The CFA rule at one PC, from .eh_frame (via .eh_frame_hdr) or .debug_frame.

Only the FDE that covers the PC is parsed: .eh_frame_hdr holds a sorted
table of (initial_location, FDE address) pairs (LSB 5.0 "Exception Frame
Header"), so a binary search finds it without decoding the whole section,
which takes seconds for a large library. Without the header we fall back to
parsing every entry once.
"""
from __future__ import annotations

import bisect
import enum
import struct

from elftools.common.exceptions import DWARFError
from elftools.dwarf.callframe import FDE, CallFrameInfo
# ours (below) is RegisterRule, the unwinder's view of one rule
from elftools.dwarf.callframe import RegisterRule as RegisterRule_

from gs_cgen.lazydataclass import dataclass

# DW_EH_PE encodings we decode in .eh_frame_hdr; gcc/ld always emit these.
_PE_PCREL_SDATA4 = 0x1B
_PE_UDATA4 = 0x03
_PE_DATAREL_SDATA4 = 0x3B


@dataclass(frozen=True)
class CfaRule:
    """CFA = value of DWARF register `register` + `offset`."""

    register: int
    offset: int


class CfaUnavailable(Exception):
    """No FDE covers the PC, or the CFA is a DWARF expression."""


class CallFrames:
    def __init__(self, dwarfinfo, hdr_bytes: bytes, hdr_address: int, eh_frame_info=None) -> None:
        """.debug_frame comes from `dwarfinfo`, .eh_frame from `eh_frame_info`
        (default `dwarfinfo`): with separate debug info they are two files."""
        self._dwarfinfo = dwarfinfo
        self._eh_info = eh_frame_info or dwarfinfo
        self._table = _parse_eh_frame_hdr(hdr_bytes, hdr_address)
        self._eh = self._cfi(self._eh_info, self._eh_info.eh_frame_sec, for_eh_frame=True)
        self._debug = self._cfi(dwarfinfo, dwarfinfo.debug_frame_sec, for_eh_frame=False)
        self._all_fdes: list | None = None

    @staticmethod
    def _cfi(info, sec, for_eh_frame: bool) -> CallFrameInfo | None:
        if sec is None:
            return None
        return CallFrameInfo(stream=sec.stream, size=sec.size, address=sec.address,
                             base_structs=info.structs, for_eh_frame=for_eh_frame)

    def cfa_at(self, pc: int) -> CfaRule:
        row = self._row_at(pc)
        rule = row["cfa"] if row else None
        if rule is None or rule.reg is None or rule.expr is not None:
            raise CfaUnavailable(f"CFA at 0x{pc:x} is a DWARF expression")
        return CfaRule(rule.reg, rule.offset)

    def unwind_row_at(self, pc: int) -> "UnwindRow | None":
        """The full CFI row at `pc` for the unwinder (None: no FDE)."""
        return unwind_row_at(self, pc)

    def saved_registers_at(self, pc: int) -> dict[int, int]:
        """Registers the function has saved by `pc` (CFI rule offset(N)):
        the caller's value of each is in memory at CFA + N. A callee-saved
        register without a rule still holds the caller's value."""
        try:
            row = self._row_at(pc)
        except CfaUnavailable:
            return {}
        saved = {}
        for register, rule in (row or {}).items():
            if isinstance(register, int) and getattr(rule, "type", None) == RegisterRule_.OFFSET:
                saved[register] = rule.arg
        return saved

    def _row_at(self, pc: int):
        fde = self._fde_from_hdr(pc) or self._fde_by_scan(pc)
        if fde is None:
            raise CfaUnavailable(f"no call frame information covers 0x{pc:x}")
        row = None
        for line in _decoded_table(fde):
            if line["pc"] > pc:
                break
            row = line
        return row

    def _fde_from_hdr(self, pc: int):
        if not self._table or self._eh is None:
            return None
        starts, fde_addrs = self._table
        i = bisect.bisect_right(starts, pc) - 1
        if i < 0:
            return None
        entry = self._eh._parse_entry_at(fde_addrs[i] - self._eh_info.eh_frame_sec.address)
        return entry if _covers(entry, pc) else None

    def _fde_by_scan(self, pc: int):
        if self._all_fdes is None:
            self._all_fdes = []
            for cfi in (self._debug, self._eh):
                if cfi is not None:
                    self._all_fdes.extend(e for e in cfi.get_entries() if isinstance(e, FDE))
        return next((e for e in self._all_fdes if _covers(e, pc)), None)


def _covers(entry, pc: int) -> bool:
    if not isinstance(entry, FDE):
        return False
    start = entry.header["initial_location"]
    return start <= pc < start + entry.header["address_range"]


def _parse_eh_frame_hdr(data: bytes, address: int):
    """-> (sorted initial locations, FDE addresses) or None."""
    if len(data) < 12 or data[0] != 1:
        return None
    ptr_enc, count_enc, table_enc = data[1], data[2], data[3]
    if (ptr_enc, count_enc, table_enc) != (_PE_PCREL_SDATA4, _PE_UDATA4, _PE_DATAREL_SDATA4):
        return None
    (count,) = struct.unpack_from("<I", data, 8)
    pairs = struct.unpack_from(f"<{2 * count}i", data, 12)
    # datarel: relative to the start of .eh_frame_hdr
    starts = [address + v for v in pairs[0::2]]
    fdes = [address + v for v in pairs[1::2]]
    return starts, fdes


# ------------------------------------------------------------- unwinding

class RuleKind(enum.Enum):
    """DWARF 5 section 6.4.1 register rules (x86-64 psABI adds nothing)."""

    UNDEFINED = "undefined"          # the caller's value cannot be recovered
    SAME_VALUE = "same value"        # the caller's value is this frame's
    OFFSET = "offset"                # saved at CFA + N
    VAL_OFFSET = "val_offset"        # the value is CFA + N
    REGISTER = "register"            # saved in register N
    EXPRESSION = "expression"        # saved at the address the expression computes
    VAL_EXPRESSION = "val_expression"  # the value is what the expression computes


@dataclass(frozen=True)
class RegisterRule:
    kind: RuleKind
    offset: int = 0                  # OFFSET / VAL_OFFSET
    register: int = 0                # REGISTER
    expression: bytes = b""          # EXPRESSION / VAL_EXPRESSION


@dataclass(frozen=True)
class UnwindRow:
    """The CFI table row at one PC: how to find the CFA and the caller's
    registers. `cfa_expression` replaces `cfa` when the CIE/FDE defines the
    CFA by a DWARF expression (the PLT's rule). `signal_frame`: the CIE's
    'S' augmentation (a signal trampoline: the caller's PC is exact, not a
    return address). Registers without a rule are not in `registers`."""

    cfa: CfaRule | None
    cfa_expression: bytes | None
    registers: dict[int, RegisterRule]
    return_address_register: int
    signal_frame: bool


_RULE_KINDS = {
    RegisterRule_.UNDEFINED: RuleKind.UNDEFINED,
    RegisterRule_.SAME_VALUE: RuleKind.SAME_VALUE,
    RegisterRule_.OFFSET: RuleKind.OFFSET,
    RegisterRule_.VAL_OFFSET: RuleKind.VAL_OFFSET,
    RegisterRule_.REGISTER: RuleKind.REGISTER,
    RegisterRule_.EXPRESSION: RuleKind.EXPRESSION,
    RegisterRule_.VAL_EXPRESSION: RuleKind.VAL_EXPRESSION,
}


def unwind_row_at(frames: CallFrames, pc: int) -> UnwindRow | None:
    """The unwind row covering `pc`, or None when no FDE covers it."""
    fde = frames._fde_from_hdr(pc) or frames._fde_by_scan(pc)
    if fde is None:
        return None
    table = _decoded_table(fde)
    if not table:
        return None
    row = None
    for line in table:
        if line["pc"] > pc:
            break
        row = line
    return _row(fde, row or {})


# DW_CFA_GNU_args_size (0x2e): the bytes of outgoing arguments pushed,
# which only landing pads need. rustc emits it; pyelftools 0.32/0.33 parse
# it but their table decoder fails on it, so it is left out first.
_GNU_ARGS_SIZE = 0x2E


def _decoded_table(fde) -> list:
    """The FDE's rows; none when pyelftools cannot decode its program (an
    opcode it does not know): the walk then stops there, named."""
    if any(instr.opcode == _GNU_ARGS_SIZE for instr in fde.instructions):
        fde.instructions = [i for i in fde.instructions if i.opcode != _GNU_ARGS_SIZE]
    try:
        return fde.get_decoded().table
    except (DWARFError, ValueError, KeyError):
        return []


def _row(fde, row: dict) -> UnwindRow:
    cie = fde.cie
    augmentation = cie.header.get("augmentation") or b""
    if isinstance(augmentation, str):
        augmentation = augmentation.encode()
    cfa = row.get("cfa")
    registers = {}
    for register, rule in row.items():
        if isinstance(register, int) and rule.type in _RULE_KINDS:
            registers[register] = _rule(rule)
    return UnwindRow(
        cfa=CfaRule(cfa.reg, cfa.offset) if cfa is not None and cfa.expr is None else None,
        cfa_expression=bytes(cfa.expr) if cfa is not None and cfa.expr is not None else None,
        registers=registers,
        return_address_register=cie.header["return_address_register"],
        signal_frame=b"S" in augmentation)


def _rule(rule) -> RegisterRule:
    kind = _RULE_KINDS[rule.type]
    match kind:
        case RuleKind.OFFSET | RuleKind.VAL_OFFSET:
            return RegisterRule(kind, offset=rule.arg)
        case RuleKind.REGISTER:
            return RegisterRule(kind, register=rule.arg)
        case RuleKind.EXPRESSION | RuleKind.VAL_EXPRESSION:
            return RegisterRule(kind, expression=bytes(rule.arg))
    return RegisterRule(kind)
