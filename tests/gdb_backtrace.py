"""gdb's `bt` text -> comparable frames (the oracle of the unwind tests)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

# A C++ function name may hold "(anonymous namespace)", with its space.
_FUNCTION = r"(\S*(?:\(anonymous namespace\)\S*)*)"
_FRAME = re.compile(rf"#(\d+)\s+(?:(0x[0-9a-f]+) in )?{_FUNCTION} (?:\(.*\))?"
                    r"(?: at (\S+):(\d+)| from (\S+))?$")


@dataclass(frozen=True)
class GdbFrame:
    function: str                  # '<signal handler called>' for the trampoline
    file: str | None               # basename
    line: int | None
    address: int | None            # printed only for some frames


def parse_bt(text: str) -> list[GdbFrame]:
    frames = []
    for raw in text.splitlines():
        if not raw.startswith("#"):
            continue
        if "<signal handler called>" in raw:
            frames.append(GdbFrame("<signal handler called>", None, None, None))
            continue
        match = _FRAME.match(raw)
        assert match, f"unparsed gdb frame: {raw!r}"
        _, address, function, file, line, _ = match.groups()
        frames.append(GdbFrame(function, os.path.basename(file) if file else None,
                               int(line) if line else None,
                               int(address, 16) if address else None))
    return frames
