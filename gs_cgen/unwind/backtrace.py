"""A copied stack -> the frames gdb's `bt` shows: unwind (walk.py), then
name each machine frame with its module's line table and inline chain.

gdb ends a backtrace at `main` (`set backtrace past-main off`) and at the
entry point, whose CFI leaves the return address undefined; a walk that
reaches either is complete. Modules come from `modules(address)`, which
the runtime answers from the process's maps (runtime/backtrace.py)."""
from __future__ import annotations

from collections.abc import Callable
import dataclasses

from gs_cgen.errors import GsError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.unwind.model import PhysicalFrame, Registers, StackCopy, StopReason
from gs_cgen.unwind.walk import unwind


@dataclass(frozen=True)
class ModuleAt:
    """The module mapped at an address: `bias` = run-time address - vaddr."""

    module: object                  # dwarf.ModuleDebugInfo
    name: str                       # as /proc/PID/maps names it (basename)
    bias: int


ModuleLookup = Callable[[int], "ModuleAt | None"]


@dataclass(frozen=True)
class BacktraceFrame:
    address: int                    # run-time PC of the machine frame
    function: str | None
    file: str | None
    line: int | None
    module: str | None
    module_address: int | None      # the PC as a module virtual address
    inlined: bool = False
    signal_trampoline: bool = False
    physical: PhysicalFrame | None = None
    die_offset: int | None = None
    module_at: ModuleAt | None = None
    parameters: tuple = ()          # bt full: parameters.py ParameterValue


@dataclass(frozen=True)
class Backtrace:
    frames: tuple[BacktraceFrame, ...]
    status: str                     # CONTRACT.md's <status>


def build_backtrace(registers: Registers, stack: StackCopy, modules: ModuleLookup, depth: int,
                    include_inlined: bool = True, frame_die: int | None = None,
                    named: dict | None = None) -> Backtrace:
    """At most `depth` frames (as shown: inlined frames count unless left
    out); `frame_die` is the probe's frame (plan/model.py ProbeSite). Each
    machine frame is named as the walk finds it, and the walk ends at
    `main` or once a frame beyond `depth` exists. `named`, when given, keeps
    the frames each machine frame was named with, for the next events of
    the same call chain; they then carry no `physical` frame (bt full needs
    one: pass no `named` there)."""
    def row_at(address: int):
        found = modules(address)
        return _row(found, address) if found is not None else None

    frames: list[BacktraceFrame] = []
    machine_frames = [0]
    below: list[tuple[PhysicalFrame, ModuleAt | None]] = []     # the frame just walked

    def visit(physical: PhysicalFrame) -> StopReason | None:
        if len(frames) >= depth:
            return StopReason.DEPTH_LIMIT          # one more frame than shown
        innermost = machine_frames[0] == 0
        machine_frames[0] += 1
        found = modules(physical.lookup_pc)
        if below:
            frames.extend(_tail_call(below[0], physical, found))
        below[:] = [(physical, found)]
        shown = _named(physical, found, innermost) if named is not None \
            else _shown(physical, found, innermost)
        frames.extend(shown)
        if _is_main(shown):
            return StopReason.COMPLETE
        return StopReason.DEPTH_LIMIT if len(frames) > depth else None

    def _shown(physical: PhysicalFrame, found: ModuleAt | None, innermost: bool) -> list:
        shown = _frames_of(physical, found, innermost, frame_die)
        return shown if include_inlined else [f for f in shown if not f.inlined]

    def _named(physical: PhysicalFrame, found: ModuleAt | None, innermost: bool) -> list:
        key = (found, physical.pc, physical.lookup_pc, physical.signal_trampoline, innermost,
               frame_die, include_inlined)
        shown = named.get(key)
        if shown is None:
            shown = named[key] = [dataclasses.replace(f, physical=None)
                                  for f in _shown(physical, found, innermost)]
        return shown

    def _tail_call(callee: tuple, caller: PhysicalFrame, found: ModuleAt | None) -> list:
        key = ("tail call", found, callee[0].lookup_pc, caller.pc)
        if named is not None and key in named:
            return named[key]
        shown = _tail_call_frames(callee, caller, found)
        if named is not None:
            named[key] = shown
        return shown

    result = unwind(registers, stack, row_at, depth + 1, visit)
    return Backtrace(tuple(frames[:depth]), _status(result.stop, result.stop_address))


def _status(stop: StopReason, address: int | None) -> str:
    if stop is StopReason.NO_UNWIND_INFO and address is not None:
        return f"no unwind info for 0x{address:x}"
    return stop.value


def _row(found: ModuleAt, address: int):
    try:
        return found.module.unwind_row_at(address - found.bias)
    except GsError:
        return None


def _is_main(frames: list[BacktraceFrame]) -> bool:
    return bool(frames) and frames[-1].function == "main" and not frames[-1].inlined


def _tail_call_frames(callee: tuple, caller: PhysicalFrame, found: ModuleAt | None) -> list:
    """gdb's frame for a function that the caller called and that reached
    the callee's frame by a tail call (a `jmp`, so no frame of its own on
    the stack): at its tail call's return PC, named by its innermost block
    there (dwarf/callsites.py tail_call_return). Same module only."""
    callee_frame, callee_module = callee
    if found is None or callee_module is None or callee_module.module is not found.module or \
            caller.signal_trampoline or callee_frame.signal_trampoline:
        return []
    try:
        pc = found.module.tail_call_return(caller.pc - found.bias,
                                           callee_frame.lookup_pc - found.bias)
        source = found.module.source_frames_at(pc - 1) if pc is not None else []
    except GsError:
        return []
    if not source:
        return []
    s = source[0]
    return [BacktraceFrame(pc + found.bias, s.function, s.file, s.line, found.name, pc,
                           die_offset=s.die_offset, module_at=found)]


def _frames_of(physical: PhysicalFrame, found: ModuleAt | None, innermost: bool,
               frame_die: int | None) -> list[BacktraceFrame]:
    if physical.signal_trampoline:
        return [BacktraceFrame(physical.pc, None, None, None, found.name if found else None,
                               physical.pc - found.bias if found else None,
                               signal_trampoline=True, physical=physical, module_at=found)]
    if found is None:
        return [BacktraceFrame(physical.pc, None, None, None, None, None, physical=physical)]
    try:
        source = found.module.source_frames_at(physical.lookup_pc - found.bias,
                                               frame_die if innermost else None,
                                               skip_at_entry=innermost)
    except GsError:
        source = []
    vaddr = physical.pc - found.bias
    if not source:
        return [BacktraceFrame(physical.pc, None, None, None, found.name, vaddr,
                               physical=physical, module_at=found)]
    return [BacktraceFrame(physical.pc, s.function, s.file, s.line, found.name, vaddr, s.inlined,
                           physical=physical, die_offset=s.die_offset, module_at=found)
            for s in source]


def mapping_bias(module, start: int, file_offset: int) -> int | None:
    """run-time address - module vaddr for a mapping of `module`'s file at
    `start` from `file_offset` (the PT_LOAD segment holding that offset).
    The kernel maps a segment from its offset rounded down to a page, so
    a mapping's offset may also lie inside the segment before it (lld puts
    code in the page where read-only data ends): the segment that starts
    in the mapping's first page is the one mapped."""
    holding = [seg for seg in module.segments
               if seg.offset - seg.offset % _PAGE <= file_offset < seg.offset + max(seg.filesz, 1)]
    mapped = [seg for seg in holding if seg.offset - seg.offset % _PAGE == file_offset]
    for segment in mapped or holding:
        return start - (file_offset - segment.offset + segment.vaddr)
    return None


_PAGE = 4096
