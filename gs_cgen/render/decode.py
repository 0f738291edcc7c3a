"""Event bytes + the probe's plan → typed values. Pure; no BCC."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

from gs_cgen.abi import abi
from gs_cgen.dwarf.types import BoolType, CType, EnumType, IntType, strip
from gs_cgen.plan.model import ProbePlan, UnavailableSource, ValueSlot


class ValueStatus(Enum):
    OK = "ok"
    OPTIMIZED_OUT = "optimized_out"
    UNAVAILABLE = "unavailable"
    NULL_DEREF = "null_deref"
    READ_ERROR = "read_error"
    ACCESS_ERROR = "access_error"
    TRUNCATED = "truncated"
    OFFSETS_UNAVAILABLE = "offsets_unavailable"
    ZERO_LENGTH = "zero_length"


_STATUS_BY_CODE = {
    "GS_STATUS_OK": ValueStatus.OK,
    "GS_STATUS_NULL_DEREF": ValueStatus.NULL_DEREF,
    "GS_STATUS_READ_ERROR": ValueStatus.READ_ERROR,
    "GS_STATUS_ACCESS_ERROR": ValueStatus.ACCESS_ERROR,
    "GS_STATUS_TRUNCATED": ValueStatus.TRUNCATED,
    "GS_STATUS_OFFSETS_UNAVAILABLE": ValueStatus.OFFSETS_UNAVAILABLE,
    "GS_STATUS_ZERO_LENGTH": ValueStatus.ZERO_LENGTH,
}


@dataclass(frozen=True)
class Value:
    """One decoded value. `data` is an int/bool/enumerator-name tuple when
    OK; `detail` carries the failing address or the unavailability reason."""

    status: ValueStatus
    ctype: CType | None
    data: object = None
    error_address: int | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Event:
    probe_id: int
    pid: int
    tid: int
    host_pid: int
    host_tid: int
    timestamp_ns: int
    values: tuple[Value, ...]


def event_header(raw: bytes) -> dict[str, int]:
    return abi().structs["gs_event_hdr"].unpack(raw)


def decode(raw: bytes, probe: ProbePlan) -> Event:
    hdr = event_header(raw)
    values = tuple(decode_slot(raw, slot) for slot in probe.slots)
    return Event(hdr["probe_id"], hdr["pid"], hdr["tid"], hdr["host_pid"], hdr["host_tid"],
                 hdr["timestamp_ns"], values)


def decode_slot(raw: bytes, slot: ValueSlot) -> Value:
    if isinstance(slot.source, UnavailableSource):
        status = (ValueStatus.OPTIMIZED_OUT if slot.source.optimized_out
                  else ValueStatus.UNAVAILABLE)
        return Value(status, slot.ctype, detail=slot.source.reason)
    status = _status(raw[slot.offset])
    if status is not ValueStatus.OK:
        address = struct.unpack_from("<Q", raw, slot.offset + 8)[0] if slot.reads_memory else None
        return Value(status, slot.ctype, error_address=address)
    data = raw[slot.data_offset:slot.data_offset + slot.size]
    return Value(ValueStatus.OK, slot.ctype, decode_scalar(data, slot.ctype))


def _status(code: int) -> ValueStatus:
    for name, status in _STATUS_BY_CODE.items():
        if abi().constants[name] == code:
            return status
    return ValueStatus.READ_ERROR


def decode_scalar(data: bytes, ctype: CType | None):
    """Integers by their width and signedness; bool as bool; enum as int."""
    base = strip(ctype) if ctype is not None else None
    match base:
        case None:
            return int.from_bytes(data, "little", signed=False)
        case BoolType():
            return any(data)
        case IntType(signed=signed) | EnumType(signed=signed):
            return int.from_bytes(data, "little", signed=signed)
    raise TypeError(f"cannot decode {ctype!r} yet")
