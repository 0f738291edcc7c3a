"""What start-up speed rests on gives the answers it replaced: ELF headers
decoded from raw bytes equal pyelftools' (and readelf's), the symbol rows
and inlined copies cached by build-id equal those decoded afresh, and a
cache entry of another table or another name is never used."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from gs_cgen import indexcache as cache_mod
from gs_cgen.elf.image import ElfImage, _pyelftools_headers
from gs_cgen.dwarf.lines import cached_file_rows, file_rows
from gs_cgen.dwarf.module import ModuleDebugInfo
from gs_cgen.dwarf.sites import inlined_cache_key, inlined_instances

from ..conftest import process_libc, readelf

INLINED = Path(__file__).resolve().parents[2] / "fixtures" / "inlined.c"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GS_CGEN_NO_CACHE", raising=False)
    monkeypatch.setattr(cache_mod, "MIN_DEBUG_INFO", 0)      # the fixtures are small
    monkeypatch.setattr(cache_mod, "MIN_SYMBOL_TABLE", 0)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def inlined_bin(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("inlined") / "inlined"
    subprocess.run(["gcc", "-g", "-O2", "-fPIE", "-pie", "-o", str(out), str(INLINED)], check=True)
    return str(out)


def _headers(image: ElfImage):
    return (image.is_pie, image.machine, image.elfclass, image.segments, image.tls_segment,
            image.dynamic_vaddr, image.sections)


@pytest.mark.parametrize("which", ["inlined", "libc", "symbols_lib"])
def test_raw_headers_equal_pyelftools(which, inlined_bin, symbols_lib):
    path = {"inlined": inlined_bin, "libc": process_libc(), "symbols_lib": symbols_lib}[which]
    raw = ElfImage(path)
    with open(path, "rb") as f:
        e_type, machine, elfclass, programs, sections = _pyelftools_headers(ELFFile(f))
    assert sections == raw.sections
    assert (e_type == 3, elfclass) == (raw.is_pie, raw.elfclass) and raw.machine == "EM_X86_64"
    # readelf as a second oracle: every section name and address.
    listed = []
    for index, rest in re.findall(r"^\s*\[\s*(\d+)\]\s+(.*)$", readelf("-S", path), re.M):
        if index != "0":                              # the null section has no name
            name, _type, address = rest.split()[:3]
            listed.append((name, int(address, 16)))
    assert [(s.name, s.address) for s in raw.sections[1:]] == listed


def test_what_is_no_elf_file_is_said_so(tmp_path):
    for content in (b"", b"#!/bin/sh\necho hi\n", b"\x7fELF\x02\x01\x01" + b"\0" * 9):
        path = tmp_path / "not-elf"
        path.write_bytes(content)
        with pytest.raises(Exception, match="is not an ELF file"):
            ElfImage(str(path))


def _symbol_view(image: ElfImage):
    table = image.symbols
    return {name: [(s.address, s.size, s.kind, s.local, s.version, s.hidden, s.ifunc)
                   for s in table.by_name[name]] for name in table.by_name}


def test_cached_symbol_rows_equal_decoded_ones(cache_home, monkeypatch, symbols_lib):
    monkeypatch.setenv("GS_CGEN_NO_CACHE", "1")
    fresh = _symbol_view(ElfImage(symbols_lib))
    monkeypatch.delenv("GS_CGEN_NO_CACHE")
    monkeypatch.setattr(cache_mod, "MIN_DEBUG_INFO", 0)
    first = _symbol_view(ElfImage(symbols_lib))            # decodes, stores
    assert list(cache_home.glob("gs-cgen/*/v*-symbols-symtab.marshal"))
    second = _symbol_view(ElfImage(symbols_lib))           # loads
    assert fresh == first == second and fresh


def test_a_stripped_file_does_not_use_the_symtab_rows_of_its_build_id(cache_home, symbols_lib,
                                                                       tmp_path):
    # Same build-id, only .dynsym: its rows are cached apart, so neither
    # file sees the other's table.
    stripped = tmp_path / "stripped.so"
    subprocess.run(["strip", "--strip-all", "-o", str(stripped), symbols_lib], check=True)
    full = ElfImage(symbols_lib)
    full_names = set(full.symbols.by_name)
    only_dynamic = set(ElfImage(str(stripped)).symbols.by_name)
    assert only_dynamic < full_names
    assert set(ElfImage(str(stripped)).symbols.by_name) == only_dynamic
    assert set(ElfImage(symbols_lib).symbols.by_name) == full_names


def test_cached_inlined_copies_equal_searched_ones(cache_home, inlined_bin):
    def found(module):
        return [die.offset for die in inlined_instances(module._dwarf, "scale")]

    module = ModuleDebugInfo(inlined_bin)
    searched = found(module)
    assert len(searched) == 2
    assert len(list(cache_home.glob("gs-cgen/*/v*-inlined-*.marshal"))) == 1
    again = ModuleDebugInfo(inlined_bin)
    assert found(again) == searched
    assert [die.offset for die in inlined_instances(again._dwarf, "main")] == []


def test_an_inlined_entry_of_another_name_is_not_used(cache_home, inlined_bin):
    module = ModuleDebugInfo(inlined_bin)
    offsets = [die.offset for die in inlined_instances(module._dwarf, "scale")]
    # main's entry claims scale's copies (a digest collision, a bad
    # write): main must be searched for, not given scale's copies.
    module._dwarf.store(inlined_cache_key("main"), ("scale", offsets))
    fresh = ModuleDebugInfo(inlined_bin)
    assert [die.offset for die in inlined_instances(fresh._dwarf, "main")] == []
    assert [die.offset for die in inlined_instances(fresh._dwarf, "scale")] == offsets


def test_cached_file_rows_equal_computed_ones(cache_home, inlined_bin):
    module = ModuleDebugInfo(inlined_bin)
    index = module._dwarf
    path = next(p for p in index.files_by_path() if p.endswith("inlined.c"))
    (cu,) = index.files_by_path()[path]
    computed = file_rows(index.line_table(cu), path)
    assert computed.visible and cached_file_rows(index, cu, path) == computed
    assert len(list(cache_home.glob("gs-cgen/*/v*-file-rows-*.marshal"))) == 1
    again = ModuleDebugInfo(inlined_bin)
    assert cached_file_rows(again._dwarf, cu, path) == computed
    assert module.find_lines("inlined.c", computed.visible[0].line) == \
        again.find_lines("inlined.c", computed.visible[0].line)


def test_file_rows_of_another_path_are_not_used(cache_home, inlined_bin):
    index = ModuleDebugInfo(inlined_bin)._dwarf
    path = next(p for p in index.files_by_path() if p.endswith("inlined.c"))
    (cu,) = index.files_by_path()[path]
    rows = cached_file_rows(index, cu, path)
    for entry in cache_home.glob("gs-cgen/*/v*-file-rows-*.marshal"):
        other = "/elsewhere/other.c"
        index.store(entry.name.split("-", 1)[1].removesuffix(".marshal"),
                    (other, [tuple(r) for r in rows.visible], []))
    assert cached_file_rows(ModuleDebugInfo(inlined_bin)._dwarf, cu, path) == rows


def test_raw_dynamic_info_equals_pyelftools(inlined_bin, symbols_lib):
    """PT_INTERP and the loader's DT_* entries, decoded from the raw bytes,
    on executables and libraries of this machine."""
    import glob
    import os
    import sys

    from gs_cgen.elf import dynamic

    libraries = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/lib*.so*"))[:60]
    paths = [inlined_bin, symbols_lib, process_libc(), os.path.realpath(sys.executable),
             *libraries]
    compared = 0
    for path in paths:
        try:
            with open(path, "rb") as f:
                expected = dynamic._dynamic_info(ELFFile(f))
        except Exception:          # noqa: BLE001 - not an ELF file: nothing to compare
            continue
        assert dynamic.read_dynamic(path) == expected, path
        compared += 1
    assert compared >= 4


def test_lazy_dwarf_sections_read_what_pyelftools_reads(inlined_bin):
    """The lazily read DWARFInfo decodes every CU, DIE and line row as
    pyelftools' own get_dwarf_info does; a section nobody asks for is
    never read."""
    image = ElfImage(inlined_bin)
    lazy = image.dwarf_info()
    with open(inlined_bin, "rb") as f:
        reference = ELFFile(f).get_dwarf_info(relocate_dwarf_sections=False)

        def dies(info):
            return [(die.offset, die.tag, sorted((k, a.value) for k, a in die.attributes.items()))
                    for cu in info.iter_CUs() for die in cu.iter_DIEs()]

        assert not _was_read(lazy.debug_line_sec)
        assert dies(lazy) == dies(reference) and dies(lazy)
        assert not _was_read(lazy.debug_line_sec)      # DIEs need no line program
        assert not _was_read_whole(lazy.debug_info_sec)     # parsed from the file as it went
        rows = [[e.state and (e.state.address, e.state.line) for e in
                 info.line_program_for_CU(cu).get_entries()]
                for info in (lazy, reference) for cu in info.iter_CUs()]
        assert rows[:len(rows) // 2] == rows[len(rows) // 2:]
        assert _was_read(lazy.debug_line_sec)


def _was_read(descriptor) -> bool:
    loader = tuple.__getitem__(descriptor, 0)
    return loader._whole is not None or loader._window is not None


def _was_read_whole(descriptor) -> bool:
    return tuple.__getitem__(descriptor, 0)._whole is not None


def test_a_section_read_in_pieces_then_whole_reads_the_same(inlined_bin):
    from gs_cgen.elf.image import dwarf_section_bytes, dwarf_section_read
    with open(inlined_bin, "rb") as f:
        reference = ELFFile(f).get_section_by_name(".debug_info").data()
    section = ElfImage(inlined_bin).dwarf_info().debug_info_sec
    assert dwarf_section_read(section, len(reference) - 4, 9) == reference[-4:]
    assert not _was_read_whole(section)
    # Pieces (each counted as a page at least) adding up to half this small
    # section: from then on it is read whole, once.
    stream = section.stream
    stream.seek(5)
    assert stream.read(7) == reference[5:12]
    assert _was_read_whole(section)
    stream.seek(-3, 2)
    assert stream.read(10) == reference[-3:]          # short at the end, as a file is
    assert dwarf_section_read(section, 2, 9) == reference[2:11]
    assert dwarf_section_bytes(section) == reference
    stream.seek(0)
    assert stream.read() == reference


def test_a_section_past_the_end_of_its_file_is_said_so_in_pieces_too(inlined_bin, tmp_path):
    import struct
    from gs_cgen.elf.image import dwarf_section_read
    from gs_cgen.errors import DebugInfoError
    # .debug_info's header claims 16 MiB more than the file holds.
    data = bytearray(open(inlined_bin, "rb").read())
    index = next(i for i, s in enumerate(ElfImage(inlined_bin).sections) if s.name == ".debug_info")
    shoff, (shentsize,) = struct.unpack_from("<Q", data, 0x28)[0], struct.unpack_from("<H", data, 0x3A)
    size_at = shoff + index * shentsize + 0x20
    real_size = struct.unpack_from("<Q", data, size_at)[0]
    struct.pack_into("<Q", data, size_at, real_size + (1 << 24))
    patched = tmp_path / "patched"
    patched.write_bytes(bytes(data))
    info = ElfImage(str(patched)).dwarf_info().debug_info_sec
    assert dwarf_section_read(info, 0, 4) == bytes(data[info.global_offset:info.global_offset + 4])
    with pytest.raises(DebugInfoError, match="extends beyond the end of its file"):
        dwarf_section_read(info, real_size + (1 << 20), 64)
