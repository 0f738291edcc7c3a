"""DWARF reading (with gs_cgen/elf/, the only packages that import
pyelftools).

`open_module(path)` is the entry point; see module.py."""
from gs_cgen.dwarf.module import ModuleDebugInfo, open_module

__all__ = ["ModuleDebugInfo", "open_module"]
