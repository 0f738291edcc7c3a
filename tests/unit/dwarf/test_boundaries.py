"""pyelftools stays in the stage that reads the binary (STYLE.md rule 2):
gs_cgen/elf/ (the ELF file) and gs_cgen/dwarf/ (its debug info), one stage
split in two packages so that the folder names tell which is which."""
from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "gs_cgen"


def test_only_elf_and_dwarf_import_elftools():
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if p.relative_to(PACKAGE).parts[0] not in ("dwarf", "elf")
                 and re.search(r"^\s*(from|import)\s+elftools", p.read_text(), re.M)]
    assert offenders == []
