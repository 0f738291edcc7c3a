"""What became of a value the probe tried to read: the status byte of its
slot (gs_abi.h `enum gs_value_status`) as the renderers name it."""
from __future__ import annotations

import functools
from enum import Enum


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
    DIV_BY_ZERO = "division_by_zero"
    TLS_UNAVAILABLE = "tls_unavailable"
    TLS_NOT_ALLOCATED = "tls_not_allocated"
    LENGTH_OVER_LIMIT = "length_over_limit"
    SHIFT_RANGE = "shift_count_out_of_range"


_STATUS_NAMES = {
    "GS_STATUS_OK": ValueStatus.OK,
    "GS_STATUS_NULL_DEREF": ValueStatus.NULL_DEREF,
    "GS_STATUS_READ_ERROR": ValueStatus.READ_ERROR,
    "GS_STATUS_ACCESS_ERROR": ValueStatus.ACCESS_ERROR,
    "GS_STATUS_TRUNCATED": ValueStatus.TRUNCATED,
    "GS_STATUS_OFFSETS_UNAVAILABLE": ValueStatus.OFFSETS_UNAVAILABLE,
    "GS_STATUS_ZERO_LENGTH": ValueStatus.ZERO_LENGTH,
    "GS_STATUS_OPTIMIZED_OUT": ValueStatus.OPTIMIZED_OUT,
    "GS_STATUS_DIV_BY_ZERO": ValueStatus.DIV_BY_ZERO,
    "GS_STATUS_UNAVAILABLE": ValueStatus.UNAVAILABLE,
    "GS_STATUS_TLS_UNAVAILABLE": ValueStatus.TLS_UNAVAILABLE,
    "GS_STATUS_TLS_NOT_ALLOCATED": ValueStatus.TLS_NOT_ALLOCATED,
    "GS_STATUS_LENGTH_OVER_LIMIT": ValueStatus.LENGTH_OVER_LIMIT,
    "GS_STATUS_SHIFT_RANGE": ValueStatus.SHIFT_RANGE,
}


@functools.lru_cache(maxsize=None)
def _status_by_code() -> dict[int, ValueStatus]:
    # The ABI loads hashlib (~5 ms): only a run that decodes events needs it.
    from gs_cgen.abi import abi  # noqa: PLC0415
    return {abi().constants[name]: status for name, status in _STATUS_NAMES.items()}


def status_of(code: int) -> ValueStatus:
    return _status_by_code().get(code, ValueStatus.READ_ERROR)
