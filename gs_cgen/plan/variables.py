"""`print $args;` and `print $locals;`: every parameter, or every local,
in scope at the probe PC, as one line `$args: a = 1, p = 0x... (struct
point*)` (CONTRACT.md "Script language").

The list is gdb's `info args` / `info locals` at the same PC: the frame
gdb stops in there (plan/scope.py), innermost block first, a shadowed
local listed after the one that hides it, as gdb lists both. Each
variable is its own value, so one that is optimized out or cannot be
planned renders as its own `<OPTIMIZED_OUT>` / `<error: ...>` and the
others still print. Where there is none, the line says `(none)`.

When the variables together would not fit in one event, each large one
(an array, a struct, a string) is read only up to a share of what is left,
and the plan carries a note saying so, instead of refusing the probe.
"""
from __future__ import annotations

from collections.abc import Sequence

from gs_cgen.dwarf.model import VariableKind, VisibleVariable
from gs_cgen.lazydataclass import dataclass

# `$NAME` -> which variables it lists
VARIABLE_LISTS = {"args": VariableKind.PARAMETER, "locals": VariableKind.LOCAL}
NONE_TEXT = "(none)"
# A bounded value keeps at least this many bytes: a first element to show.
MIN_BOUND = 8


def is_variable_list(ident: str) -> bool:
    return ident in VARIABLE_LISTS


def listed_variables(variables: Sequence[VisibleVariable], ident: str) -> list[VisibleVariable]:
    """The parameters (`args`) or locals (`locals`) of `variables`, in
    their order (innermost block first, shadowed ones kept)."""
    kind = VARIABLE_LISTS[ident]
    return [variable for variable in variables if variable.kind is kind]


def line_pieces(ident: str, names: Sequence[str], slot_refs: Sequence[object]) -> tuple:
    """The format pieces of the line: `$args: ` then `name = ` VALUE joined
    by `, `; adjacent literal text merged."""
    if not names:
        return (f"${ident}: {NONE_TEXT}",)
    pieces: list = []
    for index, (name, ref) in enumerate(zip(names, slot_refs)):
        text = f"${ident}: {name} = " if index == 0 else f", {name} = "
        pieces.extend((text, ref))
    return tuple(pieces)


@dataclass(frozen=True)
class Bound:
    """What bounding did: the per-value cap (None: nothing was bounded)
    and how many bytes the values wanted."""

    cap: int | None
    wanted: int


def bound_sizes(sizes: Sequence[int], reducible: Sequence[bool], available: int,
                slot_overhead: int) -> tuple[list[int], Bound]:
    """Sizes for values that must share `available` bytes: unchanged when
    they fit; else every reducible one is capped at the largest common cap
    that fits (small values keep their size, large ones share the rest).
    Each value also costs `slot_overhead` bytes, and is 8-byte aligned."""
    wanted = sum(slot_overhead + _align8(size) for size in sizes)
    if wanted <= available:
        return list(sizes), Bound(None, wanted)
    fixed = sum(slot_overhead + _align8(size) for size, r in zip(sizes, reducible) if not r)
    shared = [size for size, r in zip(sizes, reducible) if r]
    room = available - fixed - slot_overhead * len(shared)
    cap = _largest_cap(shared, room)
    return [min(size, cap) if r else size for size, r in zip(sizes, reducible)], \
        Bound(cap, wanted)


def _largest_cap(sizes: Sequence[int], room: int) -> int:
    """The largest multiple of 8 such that the sizes, each capped at it,
    fit in `room`; at least MIN_BOUND (the event limit then refuses)."""
    def fits(cap: int) -> bool:
        return sum(_align8(min(size, cap)) for size in sizes) <= room
    low, high = MIN_BOUND // 8, _align8(max(sizes, default=MIN_BOUND)) // 8    # in 8-byte units
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle * 8):
            low = middle
        else:
            high = middle - 1
    return low * 8


def _align8(value: int) -> int:
    return (value + 7) // 8 * 8
