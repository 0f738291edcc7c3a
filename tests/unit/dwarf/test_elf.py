"""ELF-level facts and the errors for unusable files."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.errors import DebugInfoError


def test_no_debug_info_message(binaries):
    module = open_module(binaries["nodebug"])
    assert not module.has_debug_info
    with pytest.raises(DebugInfoError) as err:
        module.find_functions("add")
    assert err.value.message == (
        f"'{module.path}' has no DWARF debug info "
        "(compile with -g or install the -dbgsym package)")


def test_not_elf_and_missing_file(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(DebugInfoError, match="is not an ELF file"):
        open_module(str(text))
    with pytest.raises(DebugInfoError, match="cannot open"):
        open_module(str(tmp_path / "missing"))


def test_header_facts_match_readelf(binaries):
    module = open_module(binaries["O0"])
    assert module.is_pie and module.has_debug_info
    notes = subprocess.run(["readelf", "-n", module.path], capture_output=True, text=True).stdout
    assert module.build_id == re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    headers = subprocess.run(["readelf", "-lW", module.path], capture_output=True, text=True).stdout
    loads = [l.split() for l in headers.splitlines() if l.strip().startswith("LOAD")]
    assert [(s.offset, s.vaddr) for s in module.segments] == [(int(l[1], 16), int(l[2], 16)) for l in loads]


def test_vaddr_to_file_offset_and_sections(binaries):
    module = open_module(binaries["O0"])
    (site,) = module.find_functions("add")
    text = next(s for s in module.segments if s.executable)
    assert module.vaddr_to_file_offset(site.probe_address) == site.probe_address - text.vaddr + text.offset
    assert module.section_of(site.probe_address) == "text"
    assert module.section_of(module.find_global("g_name").address) == "data"
    assert module.section_of(module.find_global("g_number").address) == "bss"
    with pytest.raises(DebugInfoError, match="not in a loaded segment"):
        module.vaddr_to_file_offset(0x7FFF_0000_0000)


def test_rodata_section(binaries):
    module = open_module(binaries["O0"])
    headers = subprocess.run(["readelf", "-SW", module.path], capture_output=True, text=True).stdout
    rodata = int(re.search(r"\.rodata\s+PROGBITS\s+([0-9a-f]+)", headers).group(1), 16)
    assert module.section_of(rodata) == "rodata"


def test_open_module_is_cached_until_file_changes(binaries, tmp_path):
    assert open_module(binaries["O0"]) is open_module(binaries["O0"])
    copy = tmp_path / "copy"
    copy.write_bytes(open(binaries["O0"], "rb").read())
    first = open_module(str(copy))
    copy.write_bytes(open(binaries["O2"], "rb").read())
    os.utime(copy, ns=(1, 1))
    assert open_module(str(copy)) is not first


def test_a_binary_for_another_architecture_is_refused(binaries, tmp_path):
    """e_machine patched to EM_AARCH64 (183): the same bytes would otherwise
    plan x86_64 registers for an AArch64 program."""
    data = bytearray(open(binaries["O0"], "rb").read())
    data[18:20] = (183).to_bytes(2, "little")
    foreign = tmp_path / "arm64_prog"
    foreign.write_bytes(bytes(data))
    with pytest.raises(DebugInfoError) as err:
        open_module(str(foreign))
    assert err.value.message == (f"'{foreign}' is 64-bit AARCH64 code: unsupported architecture "
                                 "(gs-cgen traces x86_64 processes only)")
