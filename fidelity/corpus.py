"""The corpus: small C programs of our own, a Rust one and a C++ one, built at
-O0..-O3 (C and C++ by gcc/g++ or by clang/clang++), and the probe sites of
each build (every `is_stmt` line-table address of every function of the
corpus sources, deduplicated).

Sites are read with pyelftools directly, not through gs-cgen's DWARF
reader: the harness must not share the code it measures."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.elffile import ELFFile

CORPUS = Path(__file__).resolve().parent / "corpus"
LEVELS = ("O0", "O1", "O2", "O3")
LIBRARY = "libfidlib.so"
_GLOBALS_MARKER = re.compile(r"fidelity-globals:(.*)")


_CARGO_BIN = Path.home() / ".cargo" / "bin"     # where rustup puts rustc

# `--compiler`: the C and the C++ compiler of the corpus, and what each
# needs beyond the common flags. Both emit DWARF 5 by default (gcc 12,
# clang 14); clang++ links libstdc++ as g++ does. clang++ 14 defaults to
# C++14: -std=gnu++17 is g++ 12's default (values.cpp uses std::optional).
COMPILERS = {"gcc": ("gcc", "g++"), "clang": ("clang", "clang++")}
_CPP_FLAGS = {"gcc": [], "clang": ["-std=gnu++17"]}


@dataclass(frozen=True)
class Program:
    name: str
    source: str
    uses_library: bool = False       # links libfidlib.so (fidlib.c)
    language: str = "c"              # "c" (gcc/clang), "rust" (rustc) or "cpp" (g++/clang++)


PROGRAMS = (
    Program("types", "types.c"),
    Program("calls", "calls.c"),
    Program("inline", "inline.c"),
    Program("tls", "tls.c", uses_library=True),
    Program("values", "values.rs", language="rust"),
    Program("cppvalues", "values.cpp", language="cpp"),
)


@dataclass(frozen=True)
class Site:
    """One probe PC: `address` is a module virtual address."""

    module: str                      # real path of the ELF file
    address: int
    function: str                    # the function that holds it
    file: str
    line: int
    globals: tuple[str, ...] = ()    # globals recorded here besides the frame's variables
    # How both tools name the probe: `0xADDR` / `libname.so:0xADDR` (gdb:
    # `break *ADDR`), or a function name (gdb: `break FUNC`, one site per
    # location, gs-cgen: `trace FUNC`).
    pattern: str = ""

    @property
    def key(self) -> str:
        """The site's name in both tools' records: MODULE:0xADDR."""
        return f"{Path(self.module).name}:0x{self.address:x}"

    @property
    def by_function(self) -> bool:
        return not re.fullmatch(r"(.*:)?0x[0-9a-f]+", self.pattern)


@dataclass
class Target:
    """One program at one level: what to run and where to look."""

    suite: str                       # "corpus", "rust", "cpp" or "libpython"
    name: str
    level: str
    argv: list[str]
    sites: list[Site] = field(default_factory=list)
    # Rust and C++: both tools read the DWARF layout (gdb's print/r,
    # gs-cgen's raw(NAME)), not the std types' semantic forms (docs/guide.md "Rust programs").
    raw_layout: bool = False

    @property
    def language(self) -> str:
        """The source language gdb_script.py is told: "c", "rust" or "cpp"."""
        return self.suite if self.suite in ("rust", "cpp") else "c"

    @property
    def label(self) -> str:
        return f"{self.name} -{self.level}"


def build(levels: tuple[str, ...], programs: tuple[Program, ...], out_dir: Path,
          compiler: str = "gcc") -> list[Target]:
    """Compile every program at every level (C and C++ by `compiler`'s pair
    of COMPILERS, -g: DWARF 5; rustc -g whatever `compiler` is) under
    `out_dir/LEVEL/`, and list its sites."""
    c_compiler = COMPILERS[compiler][0]
    c_flags = _c_flags(c_compiler)
    targets = []
    for level in levels:
        level_dir = out_dir / level
        level_dir.mkdir(parents=True, exist_ok=True)
        library = level_dir / LIBRARY
        if any(p.uses_library for p in programs):
            _gcc(["-fPIC", "-shared", "-o", str(library), str(CORPUS / "fidlib.c")], level,
                 compiler=c_compiler)
        for program in programs:
            exe = level_dir / program.name
            if program.language == "rust":
                targets.append(_rust_target(program, level, exe))
                continue
            if program.language == "cpp":
                targets.append(_cpp_target(program, level, exe, compiler))
                continue
            extra = ["-L", str(level_dir), "-lfidlib", "-Wl,-rpath,$ORIGIN"] \
                if program.uses_library else []
            _gcc([*c_flags, "-o", str(exe), str(CORPUS / program.source), *extra], level,
                 compiler=c_compiler)
            sites = line_sites(exe.resolve(), [program.source], main_module=True)
            if program.uses_library:
                sites += line_sites(library.resolve(), ["fidlib.c"], main_module=False)
            targets.append(Target("corpus", program.name, level, [str(exe.resolve())], sites))
    return targets


def _gcc(arguments: list[str], level: str, compiler: str = "gcc") -> None:
    command = [compiler, "-g", f"-{level}", "-Wall", "-Werror", *arguments]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")


def _c_flags(compiler: str) -> list[str]:
    """clang 14 has no _Float16 on x86-64 (clang 15 has): types.c's is then
    a float, the nearest floating type it can pass and return (its __fp16
    cannot be a parameter). gcc, and a clang that has it, build the source as it is."""
    probe = subprocess.run([compiler, "-x", "c", "-c", "-o", "/dev/null", "-"],
                           input="_Float16 f(_Float16 x) { return x; }\n",
                           capture_output=True, text=True)
    return [] if probe.returncode == 0 else ["-D_Float16=float"]


def _rust_target(program: Program, level: str, exe: Path) -> Target:
    command = [rustc(), "--edition", "2021", "-g", "-C", f"opt-level={level[1:]}",
               "-D", "warnings", "-o", str(exe), str(CORPUS / program.source)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    sites = line_sites(exe.resolve(), [program.source], main_module=True)
    return Target("rust", program.name, level, [str(exe.resolve())], sites, raw_layout=True)


def _cpp_target(program: Program, level: str, exe: Path, compiler: str = "gcc") -> Target:
    """g++ or clang++ (libstdc++ both), compared by DWARF layout like Rust: std types'
    pretty-printed forms are not what this measures (docs/guide.md "Rust and C++ programs")."""
    _gcc([*_CPP_FLAGS[compiler], "-o", str(exe), str(CORPUS / program.source)], level,
         compiler=COMPILERS[compiler][1])
    sites = line_sites(exe.resolve(), [program.source], main_module=True)
    return Target("cpp", program.name, level, [str(exe.resolve())], sites, raw_layout=True)


def rustc() -> str:
    """rustc from PATH or rustup's ~/.cargo/bin (which PATH may leave out)."""
    found = shutil.which("rustc") or shutil.which("rustc", path=str(_CARGO_BIN))
    if found is None:
        raise RuntimeError(f"rustc is not installed (rustup puts it in {_CARGO_BIN})")
    return found


def source_globals(source: str) -> tuple[str, ...]:
    """The globals a corpus source asks to record at its sites
    (`fidelity-globals: NAME ...` in its header comment)."""
    match = _GLOBALS_MARKER.search((CORPUS / source).read_text())
    return tuple(match.group(1).split()) if match else ()


def line_sites(module: Path, sources: list[str], main_module: bool) -> list[Site]:
    """Every is_stmt line-table address (line != 0) of `sources` inside a
    function symbol of `module`, lowest address first, one site each; the
    source's globals are recorded at the first and last site of each function."""
    with module.open("rb") as f:
        elf = ELFFile(f)
        functions = _function_symbols(elf)
        rows = _statement_rows(elf, set(sources))
    prefix = "" if main_module else f"{module.name}:"
    placed = [(address, file, line, _containing(functions, address))
              for address, (file, line) in sorted(rows.items())]
    placed = [row for row in placed if row[3] is not None]
    # Globals at each function's first and last site: every module and
    # section, before and after the function changed them, without
    # repeating the same reads at every line.
    ends = {}
    for address, _, _, function in placed:
        ends.setdefault(function, [address, address])[1] = address
    return [Site(str(module), address, function, file, line,
                 source_globals(file) if address in ends[function] else (),
                 f"{prefix}0x{address:x}")
            for address, file, line, function in placed]


def _function_symbols(elf: ELFFile) -> list[tuple[int, int, str]]:
    table = elf.get_section_by_name(".symtab")
    return sorted((s["st_value"], s["st_value"] + s["st_size"], s.name)
                  for s in table.iter_symbols()
                  if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s["st_size"])


def _containing(functions, address: int) -> str | None:
    for low, high, name in functions:
        if low <= address < high:
            return name
    return None


def _statement_rows(elf: ELFFile, sources: set[str]) -> dict[int, tuple[str, int]]:
    """address -> (file, line) of the first is_stmt row at each address."""
    dwarf = elf.get_dwarf_info()
    rows: dict[int, tuple[str, int]] = {}
    for unit in dwarf.iter_CUs():
        for address, name, line in unit_statement_rows(dwarf, unit):
            if name in sources:
                rows.setdefault(address, (name, line))
    return rows


def unit_statement_rows(dwarf, unit):
    """(address, file name, line) of each is_stmt row of a compile unit."""
    program = dwarf.line_program_for_CU(unit)
    if program is None:
        return
    files = program["file_entry"]
    first_file = 0 if program.header.version >= 5 else 1   # DWARF 5 counts files from 0
    for entry in program.get_entries():
        state = entry.state
        if state is None or state.end_sequence or not state.is_stmt or state.line == 0:
            continue
        yield state.address, Path(files[state.file - first_file].name.decode()).name, state.line


def entry_point(module: str) -> int:
    with open(module, "rb") as f:
        return ELFFile(f).header.e_entry
