"""The ELF file itself, without DWARF: program headers, sections, symbol
tables and versions, dynamic section and relocations, PLT stubs, IFUNCs,
demangling, and the machine code a uprobe goes on (capstone)."""
