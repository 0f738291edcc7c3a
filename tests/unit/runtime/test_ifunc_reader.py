"""Which implementation a GNU IFUNC runs, read from this test process's own
GOT (no root needed: /proc/self/mem and /proc/self/maps). The oracle is
the dynamic linker itself: dlsym of an IFUNC returns the resolver's choice."""
from __future__ import annotations

import ctypes
import os

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.errors import DebugInfoError
from gs_cgen.plan.model import GotSlot, IfuncLookup
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.runtime.ifunc import GotReader, read_choice
from tests.unit.conftest import process_libc


def load_bias(path: str) -> int:
    """Where ld.so put `path` in this process (its offset-0 mapping)."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if fields[-1] == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    raise AssertionError(f"{path} is not mapped")


def dlsym_address(library: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(library, name), ctypes.c_void_p).value


def test_fixture_ifunc_choice_from_irelative_slot(symbols_lib):
    library = ctypes.CDLL(symbols_lib)
    assert library.call_pick(1) == 6                   # pick_two, twice
    module = open_module(symbols_lib)
    ifunc = module.ifunc_named("pick")
    choice = ModuleSet.of(module, ifunc_reader=GotReader(None)).choose_ifunc(module, ifunc)
    pick_two = dict((n, a) for a, n in ifunc.implementations)["pick_two"]
    assert choice.address == pick_two == dlsym_address(library, "pick") - load_bias(symbols_lib)
    assert choice.chosen_by == "gs-cgen's own process, which maps the same libsymbols.so"


def test_import_slot_counts_only_when_it_holds_an_implementation(symbols_lib):
    ctypes.CDLL(symbols_lib)                           # ctypes binds now (RTLD_NOW)
    module = open_module(symbols_lib)
    ifunc = module.ifunc_named("pick")
    (jump_slot,) = module.import_slots("pick")
    implementations = tuple(a for a, _ in ifunc.implementations)
    lookup = IfuncLookup("pick", module.path, module.segments,
                         (GotSlot(module.path, module.segments, jump_slot, False),), implementations)
    assert read_choice(os.getpid(), lookup) == implementations[1]
    elsewhere = IfuncLookup("pick", module.path, module.segments, lookup.slots, (0x1,))
    assert read_choice(os.getpid(), elsewhere) is None


def test_libc_ifuncs_as_this_process_runs_them():
    libc_path = process_libc()
    libc, module = ctypes.CDLL(None), open_module(libc_path)
    reader = GotReader(None)
    for name in ("strlen", "memcpy", "strchr"):
        ifunc = module.ifunc_named(name)
        choice = ModuleSet.of(module, ifunc_reader=reader).choose_ifunc(module, ifunc)
        assert choice.address == dlsym_address(libc, name) - load_bias(libc_path), name
        if ifunc.implementations:          # named only with libc's .symtab (libc6-dbg)
            assert choice.address in {a for a, _ in ifunc.implementations}, name


def test_no_process_to_read_lists_the_implementations(symbols_lib):
    module = open_module(symbols_lib)
    ifunc = module.ifunc_named("pick")
    with pytest.raises(DebugInfoError) as err:
        ModuleSet.of(module).choose_ifunc(module, ifunc)
    assert err.value.message == (
        f"'pick' in '{symbols_lib}' is a GNU indirect function (IFUNC), and no process that "
        "gs-cgen can read has resolved it, so which implementation runs is unknown")
    assert err.value.candidates == ("pick_one", "pick_two")
