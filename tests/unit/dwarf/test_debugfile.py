"""Separate debug info (gs_cgen/dwarf/debugfile.py): a stripped binary whose
DWARF and .symtab are in a `objcopy --only-keep-debug` file, found through
.gnu_debuglink or a build-id directory, answers as the unstripped one."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess

import pytest

from tests.prerequisites import require

from gs_cgen.dwarf import debugfile
from gs_cgen.dwarf.module import ModuleDebugInfo
from gs_cgen.errors import DebugInfoError

from .conftest import SOURCES


def _run(*args, cwd=None):
    subprocess.run(list(map(str, args)), check=True, cwd=cwd)


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """{variant: (unstripped, debug file)} for -O0 and -O2."""
    if shutil.which("objcopy") is None or shutil.which("gcc") is None:
        require("needs gcc and binutils")
    out = tmp_path_factory.mktemp("split")
    built = {}
    for variant in ("O0", "O2"):
        full = out / f"prog_{variant}"
        _run("gcc", "-g", f"-{variant}", "-fPIE", "-pie", "-o", full, *SOURCES)
        debug = out / f"prog_{variant}.debug"
        _run("objcopy", "--only-keep-debug", full, debug)
        built[variant] = (full, debug)
    return built


@pytest.fixture(autouse=True)
def _no_system_roots(monkeypatch, tmp_path):
    monkeypatch.setattr(debugfile, "DEBUG_ROOTS", (str(tmp_path / "no-root"),))
    monkeypatch.delenv("GS_CGEN_DEBUG_ROOTS", raising=False)


def _stripped(full, target, debuglink=None):
    """`strip` `full` into `target`, optionally adding a .gnu_debuglink to
    the debug file `debuglink` (objcopy records its basename and CRC)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _run("strip", "-o", target, full)
    if debuglink is not None:
        _run("objcopy", f"--add-gnu-debuglink={debuglink}", target)
    return str(target)


def _answers(module: ModuleDebugInfo):
    sites = module.find_functions("scale") + module.find_functions("move_point")
    return {
        "sites": sites,
        "variables": [[(v.name, v.location) for v in module.variables_at(s.probe_address)]
                      for s in sites],
        "lines": module.find_lines("dwarf_basic.c", sites[-1].decl_line + 2),
        "global": dataclasses.replace(module.find_global("g_point"), type=None),   # types compare by identity
        "where": module.describe_address(sites[0].probe_address),
        "functions": module.function_names(),
    }


@pytest.mark.parametrize("variant", ["O0", "O2"])
def test_debuglink_in_same_directory(split, tmp_path, variant):
    full, debug = split[variant]
    shutil.copy(debug, tmp_path / debug.name)
    stripped = _stripped(full, tmp_path / "prog", debuglink=tmp_path / debug.name)
    module = ModuleDebugInfo(stripped)
    assert module.has_debug_info and module.debug_path == str(tmp_path / debug.name)
    assert _answers(module) == _answers(ModuleDebugInfo(str(full)))
    # Code bytes and segments still come from the stripped file.
    assert module.segments == ModuleDebugInfo(str(full)).segments


def test_debuglink_in_dot_debug_and_root(split, tmp_path, monkeypatch):
    full, debug = split["O0"]
    expected = _answers(ModuleDebugInfo(str(full)))
    stripped = _stripped(full, tmp_path / "bin" / "prog", debuglink=debug)   # CRC of `debug`
    hidden = tmp_path / "bin" / ".debug" / debug.name
    hidden.parent.mkdir()
    shutil.copy(debug, hidden)
    assert ModuleDebugInfo(stripped).debug_path == str(hidden)
    assert _answers(ModuleDebugInfo(stripped)) == expected
    os.unlink(hidden)
    root = tmp_path / "root"
    in_root = root / str(tmp_path / "bin").lstrip("/") / debug.name
    in_root.parent.mkdir(parents=True)
    shutil.copy(debug, in_root)
    monkeypatch.setenv("GS_CGEN_DEBUG_ROOTS", f"{tmp_path / 'elsewhere'}:{root}")
    assert ModuleDebugInfo(stripped).debug_path == str(in_root)
    assert _answers(ModuleDebugInfo(stripped)) == expected


def test_build_id_directory(split, tmp_path, monkeypatch):
    full, debug = split["O2"]
    stripped = _stripped(full, tmp_path / "prog")                 # no debuglink at all
    build_id = ModuleDebugInfo(stripped).build_id
    by_id = tmp_path / "root" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    by_id.parent.mkdir(parents=True)
    shutil.copy(debug, by_id)
    monkeypatch.setattr(debugfile, "DEBUG_ROOTS", (str(tmp_path / "root"),))
    module = ModuleDebugInfo(stripped)
    assert module.debug_path == str(by_id)
    assert _answers(module) == _answers(ModuleDebugInfo(str(full)))


def test_wrong_crc_or_build_id_is_not_used(split, tmp_path, monkeypatch):
    full, debug = split["O0"]
    other_debug = split["O2"][1]
    # A debuglink whose CRC names the -O0 debug file, next to the -O2 one.
    stripped = _stripped(full, tmp_path / "prog", debuglink=debug)
    shutil.copy(other_debug, tmp_path / debug.name)
    build_id = ModuleDebugInfo(stripped).build_id
    by_id = tmp_path / "root" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    by_id.parent.mkdir(parents=True)
    shutil.copy(other_debug, by_id)                              # another build-id inside
    monkeypatch.setattr(debugfile, "DEBUG_ROOTS", (str(tmp_path / "root"),))
    module = ModuleDebugInfo(stripped)
    assert not module.has_debug_info
    with pytest.raises(DebugInfoError) as err:
        module.find_functions("scale")
    assert err.value.message == (f"'{module.path}' has no DWARF debug info "
                                 "(compile with -g or install the -dbgsym package)")
    searched = [str(by_id), str(tmp_path / debug.name), str(tmp_path / ".debug" / debug.name),
                str(tmp_path / "root") + str(tmp_path / debug.name)]
    assert err.value.hints == ("separate debug info searched: " + ", ".join(searched),)


def test_no_build_id_nor_debuglink_says_so(binaries):
    module = ModuleDebugInfo(binaries["nodebug"])
    assert not module.has_debug_info
    with pytest.raises(DebugInfoError) as err:
        module.require_debug_info()
    build_id = module.build_id
    assert err.value.hints == (f"separate debug info searched: {debugfile.DEBUG_ROOTS[0]}/.build-id/"
                               f"{build_id[:2]}/{build_id[2:]}.debug",)


def test_unknown_function_with_separate_debug_info_is_a_clean_error(split, tmp_path):
    full, debug = split["O0"]
    shutil.copy(debug, tmp_path / debug.name)
    module = ModuleDebugInfo(_stripped(full, tmp_path / "prog", debuglink=tmp_path / debug.name))
    with pytest.raises(DebugInfoError, match="no function 'no_such_function'"):
        module.find_functions("no_such_function")
