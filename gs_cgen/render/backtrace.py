"""`bt` lines (CONTRACT.md "bt"): a status line, then one line per frame,
innermost first:

    backtrace: complete, 3 frames
      #0 leaf at /src/bt.c:4 [bt+0x1139]
      #1 step at /src/bt.c:9 [bt+0x1160] (inlined)
      #2 <signal handler called> [libc.so.6+0x3c050]

`bt raw` prints each frame's address instead (an inlined frame, shown with
`bt raw inline`, has its machine frame's, marked `(inlined)`); `full` adds
a line of each frame's parameters, with any other mode word."""
from __future__ import annotations

from gs_cgen.plan.model import BacktraceShow
from gs_cgen.render.text import format_value
from gs_cgen.render.values import decode_object

OPTIMIZED_OUT = "<OPTIMIZED_OUT>"


def backtrace_lines(backtrace, show: BacktraceShow) -> list[str]:
    """`backtrace`: gs_cgen/unwind/backtrace.py Backtrace, unwound with
    `show.inlined` (runtime/symbolize.py) and so holding the frames shown."""
    frames = backtrace.frames
    lines = [f"backtrace: {backtrace.status}, {len(frames)} frames"]
    for index, frame in enumerate(frames):
        text = _raw_text(frame) if show.raw else frame_text(frame)
        lines.append(f"  #{index} {text}")
        if show.parameters and frame.parameters:
            lines.append("      " + ", ".join(_parameter(p) for p in frame.parameters))
    return lines


def _raw_text(frame) -> str:
    return f"0x{frame.address:x}" + (" (inlined)" if frame.inlined else "")


def _parameter(parameter) -> str:
    if parameter.data is None:
        return f"{parameter.name} = {OPTIMIZED_OUT}"
    return f"{parameter.name} = {format_value(decode_object(parameter.ctype, parameter.data))}"


def frame_text(frame) -> str:
    if frame.module is None:
        return f"?? [0x{frame.address:x}]"
    offset = f"+0x{frame.module_address:x}" if frame.module_address is not None else ""
    where = f"[{frame.module}{offset}]"
    if frame.signal_trampoline:
        return f"<signal handler called> {where}"
    at = f" at {frame.file}:{frame.line}" if frame.file else ""
    inlined = " (inlined)" if frame.inlined else ""
    return f"{frame.function or '??'}{at} {where}{inlined}"
