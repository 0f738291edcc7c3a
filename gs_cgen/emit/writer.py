"""A tiny C body builder: indented lines and deterministic names. Pure:
callers get the text back, nothing is written to files."""
from __future__ import annotations

import contextlib
import enum
from dataclasses import field

from gs_cgen.lazydataclass import dataclass
from gs_cgen.source import SourceSpan


class DecisionPlace(enum.Enum):
    """Where a probe's decide phase notes its lines and failed conditions
    (emit/probe.py _decision_place)."""
    LOCALS = "locals"
    MAP = "map"          # the gs_decision map value (gs_abi.h)
    EVENT = "event"      # the event's own bitmap and ExprError slots


@dataclass
class CWriter:
    lines: list[str] = field(default_factory=list)
    depth: int = 1
    counter: int = 0
    # The probe's own module: its globals are at link address + the load
    # bias `gs_bias` (emit/probe.py), no offsets map lookup.
    own_module: int | None = None
    # The probe's id as C: a literal, or the attach cookie of a program
    # that several sites share.
    probe_id: str = "0"
    decision: DecisionPlace = DecisionPlace.LOCALS
    # `work` (the work area comparisons read into) is declared already.
    declared_work: bool = False
    # (first line, end line exclusive, span): which script construct each
    # run of `lines` was generated for, innermost last (statement()).
    spans: list[tuple[int, int, SourceSpan]] = field(default_factory=list)

    def line(self, code: str) -> None:
        self.lines.append("    " * self.depth + code)

    def label(self, name: str) -> None:
        self.lines.append("    " * max(self.depth - 1, 0) + f"{name}:;")

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"gs_{prefix}{self.counter}"

    @contextlib.contextmanager
    def statement(self, span: SourceSpan | None):
        """The lines written inside were generated for the script
        construct at `span` (a clang error there names it)."""
        first = len(self.lines)
        try:
            yield
        finally:
            if span is not None:
                self.spans.append((first, len(self.lines), span))

    @contextlib.contextmanager
    def block(self, opener: str = ""):
        self.line(f"{opener} {{".strip())
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.line("}")

    def text(self) -> str:
        return "\n".join(self.lines)
