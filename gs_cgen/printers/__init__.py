"""The standard libraries' types as their language's debugger shows them
(rust-gdb's printers, libstdc++'s): which DWARF layout is which library
type, where its data lives, and how its value reads. One module per
language; plan/ asks them what to read behind a value's pointers, render/
how to show what was read. Layouts are recognized from member names and
types in the target's own DWARF, never from a compiler version table."""
