"""Typed user-facing errors. Library code raises these; only cli.py turns
them into messages on stderr and exit codes."""
from __future__ import annotations

from gs_cgen.lazydataclass import dataclass
from gs_cgen.source import SourceSpan


@dataclass
class GsError(Exception):
    """A problem the user can fix. `message` is one sentence; `span` points
    into the script when the problem is there."""

    message: str
    span: SourceSpan | None = None
    hints: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def render(self, script_name: str = "<script>", script_text: str = "") -> str:
        prefix = ""
        if self.span is not None:
            prefix = f"{script_name}:{self.span.line}:{self.span.column}: "
        parts = [f"{prefix}error: {self.message}"]
        if self.span is not None and script_text:
            excerpt = self.span.caret_excerpt(script_text)
            if excerpt:
                parts.append(excerpt)
        if self.candidates:
            parts.append("did you mean: " + ", ".join(self.candidates) + "?")
        parts.extend(f"hint: {h}" for h in self.hints)
        return "\n".join(parts)


class ScriptError(GsError):
    """Syntax or scoping problem in the trace script."""


class UnsupportedError(GsError):
    """Valid script that this version cannot compile yet."""


class DebugInfoError(GsError):
    """Missing or unusable ELF/DWARF, or a name/line not found in it."""


class PlanError(GsError):
    """A script construct that does not fit the target's types or locations."""


class TargetError(GsError):
    """The process or binary to trace cannot be used (no such PID, ...)."""


class PrivilegeError(GsError):
    """Missing root / CAP_BPF / CAP_PERFMON."""


class RuntimeTraceError(GsError):
    """BCC compile, verifier load or attach failure."""


def nearest(name: str, pool, limit: int = 5) -> tuple[str, ...]:
    """Closest spellings of `name` in `pool`, best first. A C++ name in the
    pool (`geo::Shape::area`) is also close when its last component is
    close to `name`'s (`aera`, `Shape::aera`)."""
    import difflib  # noqa: PLC0415 - only an error needs it (~1.7 ms to import)
    pool = list(pool)
    found = difflib.get_close_matches(name, pool, n=limit, cutoff=0.6)
    leaves: dict[str, list[str]] = {}
    for qualified in pool:
        if "::" in qualified:
            leaves.setdefault(qualified.rsplit("::", 1)[1], []).append(qualified)
    wanted = name.rsplit("::", 1)[-1]
    for leaf in difflib.get_close_matches(wanted, list(leaves), n=limit, cutoff=0.6):
        found += [q for q in sorted(leaves[leaf]) if q not in found]
    return tuple(found[:limit])
