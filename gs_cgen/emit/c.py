"""The only place C text is assembled from parts: identifiers, literals,
comments. Everything a user or a DWARF file wrote passes through here."""
from __future__ import annotations

import re

# Defined 1 by the loader (-D) when it loads the probes as sleepable
# uprobes; the generated C defaults it to 0.
SLEEPABLE_MACRO = "GS_SLEEPABLE"

_SAFE_COMMENT = re.compile(r"[^A-Za-z0-9_ .,:;/+\-=()\[\]{}<>@#$%^&|!?~'\"]")


def comment(text: str) -> str:
    """A one-line C comment that cannot be closed early by its content."""
    cleaned = _SAFE_COMMENT.sub("?", text).replace("*/", "*?/").replace("/*", "/?*")
    return f"/* {cleaned} */"


def u64_literal(value: int) -> str:
    return f"0x{value & 0xFFFF_FFFF_FFFF_FFFF:x}ULL"


def s64_literal(value: int) -> str:
    """A signed 64-bit offset, written so no cast or overflow surprises."""
    if value < 0:
        return f"(-(__s64)0x{-value:x}LL)"
    return f"((__s64)0x{value:x}LL)"


def probe_function_name(probe_id: int) -> str:
    return f"gs_probe_{probe_id}"


def entry_function_name(probe_id: int) -> str:
    """A return probe's paired entry probe (emit/retprobe.py)."""
    return f"gs_probe_{probe_id}_entry"


def capture_function_name(probe_id: int) -> str:
    """A return probe's capture probe, where `$entry` values are read."""
    return f"gs_probe_{probe_id}_capture"


def register_variable(register: str) -> str:
    """The local holding a pt_regs field, read once at probe entry."""
    return f"gs_reg_{register}"


def offsets_variable(cookie: int) -> str:
    return f"gs_offsets_{cookie:x}"


def tls_variable(cookie: int) -> str:
    """The local holding a module's proc_module_tls entry (or NULL)."""
    return f"gs_tls_{cookie:x}"


def statement(code: str, indent: int = 1) -> str:
    return "    " * indent + code
