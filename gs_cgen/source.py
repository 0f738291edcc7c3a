"""Positions in the user's script and how errors point at them."""
from __future__ import annotations

from gs_cgen.lazydataclass import dataclass



@dataclass(frozen=True)
class SourceSpan:
    """1-based line/column of a script construct (end is exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int

    def caret_excerpt(self, text: str) -> str:
        """The offending source line and a caret row under the span."""
        lines = text.splitlines()
        if not 1 <= self.line <= len(lines):
            return ""
        source_line = lines[self.line - 1]
        width = 1
        if self.end_line == self.line and self.end_column > self.column:
            width = self.end_column - self.column
        return f"  {source_line}\n  {' ' * (self.column - 1)}{'^' * width}"

    def slice(self, text: str) -> str:
        """The script text this span covers."""
        lines = text.splitlines(keepends=True)
        start = sum(len(l) for l in lines[:self.line - 1]) + self.column - 1
        end = sum(len(l) for l in lines[:self.end_line - 1]) + self.end_column - 1
        return text[start:end]
