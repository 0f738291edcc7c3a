"""pyelftools has one home: gs_cgen/dwarf/ (STYLE.md rule 2)."""
from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "gs_cgen"


def test_only_dwarf_package_imports_elftools():
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if "dwarf" not in p.relative_to(PACKAGE).parts[:1]
                 and re.search(r"^\s*(from|import)\s+elftools", p.read_text(), re.M)]
    assert offenders == []
