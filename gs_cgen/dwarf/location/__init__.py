"""Where a variable lives at one PC: the DWARF expression compiler
(expression.py), location lists (loclists.py), the reader that picks
the entry covering a PC (reader.py), what only the ELF file and the
callers can decide (resolve.py, callsites.py) and TLS (tls.py)."""
