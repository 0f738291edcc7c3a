"""libpython3.11 (the machine's CPython, built -O3 with DWARF 5) running
python/workload.py. Sites, for each function below:
- every location of gdb's `break FUNC` (its entry after the prologue, and
  each inlined copy). Both tools name these probes by the function (gdb
  `break FUNC`, gs-cgen `trace FUNC`), so this measures gs-cgen's choice of
  sites too: a location of gdb's that gs-cgen does not probe has no event
  (TRACER_ERROR), a PC gs-cgen probes that gdb does not is in the notes;
- for the functions called at most ~100 times (LINE_SITE_FUNCTIONS), up to
  LINE_SITES more is_stmt line-table PCs of the out-of-line body, evenly
  spaced through it (`break *ADDR` / `trace libpython...:0xADDR`): -O3
  code past the entry, where values live in location lists, entry values
  and inlined blocks (~130 more sites, ~1800 more hits).

The functions are ones the workload reaches a bounded number of times
(1 to ~1600 calls each, ~8000 in all): gs-cgen sends an event at every hit,
and an interpreter-wide hot function (PyUnicode_New: ~11000 calls in
startup alone) overflows its ring buffer, after which the first event of a
site might not be its first hit."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from elftools.elf.elffile import ELFFile

from fidelity.corpus import Site, Target, unit_statement_rows

WORKLOAD = Path(__file__).resolve().parent / "python" / "workload.py"
LINE_SITES = 6                  # line-table PCs per function besides gdb's break FUNC locations
FUNCTIONS = (
    "_Py_c_prod", "_Py_c_sum", "PyOS_double_to_string", "PyComplex_FromCComplex",
    "PyUnicode_FromFormat", "PyObject_Repr", "PyLong_FromDouble", "PyErr_SetObject",
    "PyObject_Format", "PyImport_ImportModule", "PyObject_Str", "PyLong_FromString",
    "PyFloat_FromString", "PyNumber_Power", "PyDict_Keys", "PyList_Sort",
    "PyNumber_FloorDivide", "PyUnicode_Join", "PyUnicode_Concat", "PyNumber_Multiply",
    "PyUnicode_Format", "PyNumber_Add", "PyObject_GetItem", "PyDict_Copy",
    "PyFloat_FromDouble", "PyErr_Clear", "PyErr_Format", "PyList_New",
    "PyModule_AddObjectRef", "PySequence_Tuple", "PyType_Ready", "_PyObject_LookupAttr",
    "PyFunction_New", "PyBytes_FromStringAndSize", "PyDict_New", "PyObject_RichCompare",
    "PyObject_SetAttr", "PyObject_GetAttr",
)
LINE_SITE_FUNCTIONS = FUNCTIONS[:FUNCTIONS.index("PyDict_Copy") + 1]

# gdb, on the library file alone: each function's breakpoint locations.
_LOCATIONS_SCRIPT = """
import json
found = {}
for name in NAMES:
    bp = gdb.Breakpoint(name)
    found[name] = [[loc.address, loc.source[0] if loc.source else "?",
                    loc.source[1] if loc.source else 0] for loc in bp.locations]
with open(RESULT, "w") as f:
    json.dump(found, f)
"""


def interpreter() -> tuple[str, str] | None:
    """(python3.11 executable, its libpython3.11.so.1.0), or None."""
    try:
        out = subprocess.run(["python3.11", "-c", "import sys, sysconfig; print(sys.executable); "
                              "print(sysconfig.get_config_var('LIBDIR'))"],
                             capture_output=True, text=True, timeout=60).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return None
    if len(out) != 2:
        return None
    library = os.path.join(out[1], "libpython3.11.so.1.0")
    return (os.path.realpath(out[0]), os.path.realpath(library)) if os.path.exists(library) \
        else None


def target(functions: tuple[str, ...] = FUNCTIONS) -> Target:
    found = interpreter()
    if found is None:
        raise RuntimeError("no python3.11 with a shared libpython3.11.so.1.0")
    executable, library = found
    argv = [executable, "-S", "-B", str(WORKLOAD)]
    sites = function_sites(library, functions)
    lines = tuple(f for f in functions if f in LINE_SITE_FUNCTIONS)
    sites += line_sites(library, lines, {site.address for site in sites})
    return Target("libpython", "python3.11", "O3", argv, sites)


def function_sites(library: str, functions: tuple[str, ...]) -> list[Site]:
    with tempfile.TemporaryDirectory(prefix="fidelity-py-") as scratch:
        result = Path(scratch) / "locations.json"
        script = Path(scratch) / "locations.py"
        script.write_text(f"NAMES = {list(functions)!r}\nRESULT = {str(result)!r}\n"
                          + _LOCATIONS_SCRIPT)
        subprocess.run(["gdb", "-batch", "-nx", "-x", str(script), library],
                       capture_output=True, text=True, timeout=600, check=True)
        locations = json.loads(result.read_text())
    sites, seen = [], set()
    for function in functions:
        for address, file, line in locations.get(function, []):
            if address in seen:
                continue
            seen.add(address)
            sites.append(Site(library, address, function, Path(file).name, line, (), function))
    return sites


def line_sites(library: str, functions: tuple[str, ...], taken: set[int]) -> list[Site]:
    """LINE_SITES is_stmt rows of each function's body, evenly spaced;
    only the compile unit that holds the function is read (.debug_aranges)."""
    prefix = Path(library).name
    sites = []
    with open(library, "rb") as f:
        elf = ELFFile(f)
        bodies = {s.name: (s["st_value"], s["st_value"] + s["st_size"])
                  for s in elf.get_section_by_name(".symtab").iter_symbols()
                  if s.name in functions and s["st_info"]["type"] == "STT_FUNC"}
        dwarf = elf.get_dwarf_info()
        aranges = dwarf.get_aranges()
        for function in functions:
            if function not in bodies:
                continue
            low, high = bodies[function]
            unit = dwarf.get_CU_at(aranges.cu_offset_at_addr(low))
            rows = sorted({address: (name, line) for address, name, line
                           in reversed(list(unit_statement_rows(dwarf, unit)))
                           if low <= address < high and address not in taken}.items())
            for address, (name, line) in _evenly_spaced(rows, LINE_SITES):
                sites.append(Site(library, address, function, name, line, (),
                                  f"{prefix}:0x{address:x}"))
    return sites


def _evenly_spaced(rows: list, count: int) -> list:
    if len(rows) <= count:
        return rows
    return [rows[round(i * (len(rows) - 1) / (count - 1))] for i in range(count)]
