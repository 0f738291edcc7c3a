"""Function names as users type them: aliases, symbol versions, GNU IFUNCs,
assembly. On tests/fixtures/symbols (libsymbols.so) and on the real
libc.so.6 of this machine; readelf and gdb are the oracles."""
from __future__ import annotations

import dataclasses
import struct
import re
import subprocess

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import open_module
from gs_cgen.elf.image import ElfImage, SymbolKind
from gs_cgen.elf.symvers import Spelling, parse_spelling
from gs_cgen.errors import DebugInfoError
from tests.unit.conftest import process_libc, readelf

_DYNSYM = re.compile(r"^\s*\d+: ([0-9a-f]+)\s+\d+\s+(FUNC|IFUNC)\s+(?:GLOBAL|WEAK)\s+\w+\s+(\d+)\s+(\S+)")


def readelf_functions(path: str) -> set[tuple[str, int, bool]]:
    """(spelled name, address, is IFUNC) of every defined .dynsym function."""
    found = set()
    for line in readelf("--dyn-syms", path).splitlines():
        match = _DYNSYM.match(line)
        if match:
            address, kind, _, name = match.groups()
            found.add((name, int(address, 16), kind == "IFUNC"))
    return found


def our_functions(path: str) -> set[tuple[str, int, bool]]:
    table = ElfImage(path).symbols
    return {(s.spelling, s.address, s.ifunc) for syms in table.by_name.values() for s in syms
            if s.kind is SymbolKind.FUNC and not s.local}


@pytest.fixture(scope="module")
def stripped_symbols_lib(symbols_lib, tmp_path_factory) -> str:
    """libsymbols.so without .symtab: only .dynsym and .gnu.version remain."""
    out = tmp_path_factory.mktemp("stripped") / "libsymbols.so"
    subprocess.run(["strip", "--strip-all", "-o", str(out), symbols_lib], check=True)
    return str(out)


def test_parse_spelling():
    assert parse_spelling("memcpy") == Spelling("memcpy")
    assert parse_spelling("memcpy@GLIBC_2.2.5") == Spelling("memcpy", "GLIBC_2.2.5")
    assert parse_spelling("memcpy@@GLIBC_2.14") == Spelling("memcpy", "GLIBC_2.14", True)


def test_dynsym_versions_match_readelf_on_libc():
    libc = process_libc()
    expected = readelf_functions(libc)
    assert ("memcpy@@GLIBC_2.14", next(a for n, a, _ in expected if n == "memcpy@@GLIBC_2.14"),
            True) in expected
    assert our_functions(libc) == expected


def test_dynsym_versions_match_readelf_on_fixture(stripped_symbols_lib):
    expected = readelf_functions(stripped_symbols_lib)
    assert {n for n, _, _ in expected} >= {"vadd@@VERS_2", "vadd@VERS_1", "pick@@VERS_1"}
    assert our_functions(stripped_symbols_lib) == expected


@pytest.mark.parametrize("use_symtab", [True, False])
def test_bare_name_is_the_default_version(symbols_lib, stripped_symbols_lib, use_symtab):
    table = ElfImage(symbols_lib if use_symtab else stripped_symbols_lib).symbols
    spelled = {name: sorted(s.spelling for s in table.named(name, SymbolKind.FUNC) if not s.local)
               for name in ("vadd", "vadd@VERS_1", "vadd@@VERS_2", "vadd@VERS_2", "vadd@@VERS_1")}
    assert spelled == {"vadd": ["vadd@@VERS_2"], "vadd@VERS_1": ["vadd@VERS_1"],
                       "vadd@@VERS_2": ["vadd@@VERS_2"], "vadd@VERS_2": ["vadd@@VERS_2"],
                       "vadd@@VERS_1": []}


def test_versioned_functions_resolve_like_gdb(symbols_lib, gdb_breaks):
    module = open_module(symbols_lib)
    specs = ("vadd@VERS_1", "vadd@@VERS_2", "new_add", "old_add")
    breaks = gdb_breaks(symbols_lib, specs)
    sites = {spec: module.find_functions(spec) for spec in ("vadd", *specs)}
    assert [s.name for s in sites["vadd@VERS_1"]] == ["old_add"]
    assert [s.name for s in sites["vadd"]] == [s.name for s in sites["vadd@@VERS_2"]] == ["new_add"]
    for spec in specs:
        (site,) = sites[spec]
        assert site.probe_address == breaks[spec][0], spec


def test_unknown_version_lists_the_versions_there_are(symbols_lib):
    with pytest.raises(DebugInfoError) as err:
        open_module(symbols_lib).find_functions("vadd@@VERS_1")
    assert err.value.message == f"no function 'vadd@@VERS_1' in '{symbols_lib}'"
    assert set(err.value.candidates) >= {"vadd@VERS_1", "vadd@@VERS_2"}


def test_aliases_are_the_dwarf_function_at_their_address(symbols_lib, gdb_breaks):
    module = open_module(symbols_lib)
    breaks = gdb_breaks(symbols_lib, ("real_work", "alias_work", "weak_work"))
    for name in ("alias_work", "weak_work", "real_work"):
        (site,) = module.find_functions(name)
        assert site.name == "real_work" and site.no_variables is None
        assert site.probe_address == breaks[name][0]
    assert [v.name for v in module.variables_at(site.probe_address)] == ["x"]


def test_ifunc_facts_match_readelf(symbols_lib):
    module = open_module(symbols_lib)
    ifunc = module.ifunc_named("pick")
    relocations = readelf("-r", symbols_lib)
    irelative = [int(line.split()[0], 16) for line in relocations.splitlines()
                 if "R_X86_64_IRELATIVE" in line and int(line.split()[-1], 16) == ifunc.resolver]
    jump_slot = [int(line.split()[0], 16) for line in relocations.splitlines()
                 if "R_X86_64_JUMP_SLOT" in line and "pick@" in line]
    symbols = {line.split()[-1]: int(line.split()[1], 16)
               for line in readelf("-s", symbols_lib).splitlines() if "FUNC" in line}
    assert ifunc.resolver == symbols["resolve_pick"]
    assert list(ifunc.got_slots) == irelative and len(irelative) == 1
    assert list(module.import_slots("pick")) == jump_slot and len(jump_slot) == 1
    assert ifunc.implementations == ((symbols["pick_one"], "pick_one"),
                                     (symbols["pick_two"], "pick_two"))
    assert module.ifunc_named("pick@VERS_1") == dataclasses.replace(ifunc, name="pick@VERS_1")
    assert module.ifunc_named("real_work") is None


def test_an_ifunc_is_never_probed_at_its_resolver(symbols_lib):
    with pytest.raises(DebugInfoError) as err:
        open_module(symbols_lib).find_functions("pick")
    assert err.value.message == (f"'pick' in '{symbols_lib}' is a GNU indirect function (IFUNC): "
                                 "the code that runs is chosen when the process loads")


def test_assembly_and_symbol_only_functions_have_no_variables(symbols_lib, gdb_breaks):
    module = open_module(symbols_lib)
    breaks = gdb_breaks(symbols_lib, ("asm_double",))
    (asm,) = module.find_functions("asm_double")
    assert asm.probe_address == breaks["asm_double"][0]
    assert (asm.decl_file.endswith("symbols/asm.S"), asm.decl_line) == (True, breaks["asm_double"][1])
    assert asm.no_variables == (f"asm_double is hand-written assembly ({asm.decl_file}): "
                                "DWARF describes no parameters or locals")
    (plain,) = module.find_functions("nodebug_triple")
    assert plain.probe_address == plain.low_pc and plain.decl_file is None
    assert plain.no_variables == ("nodebug_triple has no DWARF description (assembly, or a "
                                  "file built without -g)")


# ----------------------------------------------------------- real glibc

@pytest.fixture(scope="module")
def libc():
    module = open_module(process_libc())
    if not module.has_debug_info:
        require("no debug info for libc.so.6 (install libc6-dbg)")
    return module


def test_libc_aliases_like_gdb(libc, gdb_breaks):
    breaks = gdb_breaks(libc.path, ("malloc", "mmap64", "__libc_malloc"))
    (malloc,) = libc.find_functions("malloc")
    (versioned,) = libc.find_functions("malloc@@GLIBC_2.2.5")
    (mmap64,) = libc.find_functions("mmap64")
    assert malloc == versioned and malloc.name == "__libc_malloc"
    assert malloc.probe_address == breaks["malloc"][0] == breaks["__libc_malloc"][0]
    assert mmap64.name == "__mmap64" and mmap64.probe_address == breaks["mmap64"][0]
    assert malloc.decl_file == "malloc/malloc.c"      # gdb: ./malloc/malloc.c


def test_libc_ifuncs(libc):
    relocations = readelf("-r", libc.path)
    for name in ("strlen", "memcpy", "memcpy@@GLIBC_2.14", "strchr"):
        ifunc = libc.ifunc_named(name)
        bare = parse_spelling(name).name
        irelative = [int(line.split()[0], 16) for line in relocations.splitlines()
                     if "R_X86_64_IRELATIVE" in line and int(line.split()[-1], 16) == ifunc.resolver]
        assert list(ifunc.got_slots) == irelative and irelative, name
        names = [n for _, n in ifunc.implementations]
        assert f"__{bare}_sse2" in names or f"__{bare}_sse2_unaligned" in names, names
        assert all(n.startswith(f"__{bare}_") for n in names), names
    # memcpy@GLIBC_2.2.5 is an ordinary (assembly) function, not the IFUNC
    assert libc.ifunc_named("memcpy@GLIBC_2.2.5") is None
    (old,) = libc.find_functions("memcpy@GLIBC_2.2.5")
    assert old.no_variables is not None and "assembly" in old.no_variables


def test_libc_assembly_implementation_site(libc, gdb_breaks):
    breaks = gdb_breaks(libc.path, ("__strlen_avx2",))
    site = libc.function_site_at(breaks["__strlen_avx2"][0], "strlen")
    assert (site.name, site.probe_address, site.decl_line) == (
        "__strlen_avx2", breaks["__strlen_avx2"][0], breaks["__strlen_avx2"][1])
    assert site.decl_file == "sysdeps/x86_64/multiarch/strlen-avx2.S"
    assert "__strlen_avx2 is hand-written assembly" in site.no_variables


def test_version_definitions_equal_pyelftools_on_libc():
    from elftools.elf.elffile import ELFFile
    libc = process_libc()
    image = ElfImage(libc)
    ours = image._version_definitions()
    with open(libc, "rb") as f:
        section = ELFFile(f).get_section_by_name(".gnu.version_d")
        theirs = {verdef["vd_ndx"]: next(iter(aux)).name
                  for verdef, aux in section.iter_versions() if not verdef["vd_flags"] & 1}
    assert ours == theirs and "GLIBC_2.2.5" in ours.values()


def test_version_definitions_that_do_not_end_are_an_error():
    from gs_cgen.elf.symvers import version_definitions
    looping = struct.pack("<HHHHIII", 1, 0, 2, 1, 0, 20, 0) + struct.pack("<II", 0, 0)
    assert version_definitions(looping, b"V_1\0") == {2: "V_1"}
    cut = looping[:24]
    with pytest.raises(ValueError):
        version_definitions(cut, b"V_1\0")
    circular = struct.pack("<HHHHIII", 1, 0, 2, 1, 0, 20, 28) + struct.pack("<II", 0, 0)
    with pytest.raises(ValueError):
        version_definitions(circular, b"V_1\0")


def test_unreadable_version_definitions_name_the_file(tmp_path):
    from gs_cgen.elf.image import ElfImage
    libc = process_libc()
    image = ElfImage(libc)
    image.section_bytes = lambda name: b"\x01\x00" * 10 if name == ".gnu.version_d" else b""
    with pytest.raises(DebugInfoError, match="unreadable .gnu.version_d"):
        image._version_definitions()
