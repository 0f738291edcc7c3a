"""runtime/tls.py on a running process: each module's TLS block as ld.so
recorded it must be where the process's own code finds its variables.
tests/fixtures/tls/app.c prints, per thread, its thread pointer
(arch_prctl(ARCH_GET_FS)) and the addresses of t_counter and lib_tls_id,
and the dlopen()ed plugin's TLS module id (dlinfo RTLD_DI_TLS_MODID): so
block_offset = thread pointer - (address - the variable's TLS offset).
The glibc layouts the reader and gs_prelude.h rely on are checked against
ld.so's DWARF (libc6-dbg)."""
from __future__ import annotations

import shutil
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import strip
from gs_cgen.plan.model import ModuleRef, module_cookie
from gs_cgen.runtime import target as proc
from gs_cgen.runtime import tls as tls_mod
from gs_cgen.runtime.offsets import OffsetKeeper
from gs_cgen.runtime.tls import TlsBlock, TlsReader
from tests.prerequisites import require
from tests.unit.conftest import FIXTURES

TLS = FIXTURES / "tls"
LD_SO = "/lib64/ld-linux-x86-64.so.2"


@pytest.fixture(scope="module")
def tls_app(tmp_path_factory) -> dict[str, Path]:
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    out = tmp_path_factory.mktemp("tls_app")
    files = {"lib": out / "libtlsdemo.so", "plugin": out / "libtlsplugin.so", "app": out / "app"}
    subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(files["lib"]),
                    str(TLS / "libtlsdemo.c")], check=True)
    subprocess.run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", str(files["plugin"]),
                    str(TLS / "plugin.c")], check=True)
    subprocess.run(["gcc", "-g", "-O0", "-fPIE", "-pie", "-pthread", f"-I{TLS}", "-o",
                    str(files["app"]), str(TLS / "app.c"), f"-L{out}", "-ltlsdemo",
                    f"-Wl,-rpath,{out}", "-ldl"], check=True)
    return files


class Running:
    """The app, started and read up to its per-thread lines."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.proc = subprocess.Popen([str(files["app"]), str(files["plugin"])],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"
        self.plugin_modid = int(self.proc.stdout.readline().split()[1])
        self.threads = []
        for _ in range(4):
            _, _, tid, tp, counter, lib = self.proc.stdout.readline().split()
            self.threads.append((int(tid), int(tp, 16), int(counter, 16), int(lib, 16)))
        self.target = proc.open_process(self.proc.pid)

    def ref(self, path: Path) -> tuple[ModuleRef, int]:
        """The plan's view of module `path` and its load bias here."""
        st = path.stat()
        file = next(f for f in proc.module_files(self.target)
                    if (f.dev, f.inode) == (st.st_dev, st.st_ino))
        module = open_module(file.open_path, file.display_path, file.root)
        ref = ModuleRef(file, module_cookie(module.path, module.build_id), tuple(module.segments),
                        module.tls_segment, module.dynamic_vaddr)
        return ref, proc.module_offsets(self.target, ref).text

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def running(tls_app):
    app = Running(tls_app)
    yield app
    app.stop()


def _expected_static_offset(tp: int, address: int, module_path: Path, name: str) -> int:
    return tp - (address - open_module(str(module_path)).find_global(name).address)


def test_blocks_are_where_the_process_finds_its_variables(tls_app, running):
    reader = TlsReader()
    app, app_bias = running.ref(tls_app["app"])
    lib, lib_bias = running.ref(tls_app["lib"])
    plugin, plugin_bias = running.ref(tls_app["plugin"])
    _, tp, counter, lib_id = running.threads[0]
    app_block = reader.block(running.target, app, app_bias)
    lib_block = reader.block(running.target, lib, lib_bias)
    assert app_block == TlsBlock(_expected_static_offset(tp, counter, tls_app["app"],
                                                         "t_counter"), 1)
    assert lib_block.block_offset == _expected_static_offset(tp, lib_id, tls_app["lib"],
                                                             "lib_tls_id")
    # dlopen()ed after start-up: no static offset, reached through the DTV.
    assert reader.block(running.target, plugin, plugin_bias) == TlsBlock(0, running.plugin_modid)
    assert lib_block.modid not in (0, 1, running.plugin_modid)
    # Every thread's block is at the same offset from its own thread pointer.
    for _, tp, counter, lib_id in running.threads:
        assert tp - app_block.block_offset == counter - \
            open_module(str(tls_app["app"])).find_global("t_counter").address
    assert reader.problems == {}


def test_without_ld_so_debug_info_the_link_map_is_matched_against_pt_tls(
        tls_app, running, monkeypatch):
    with_dwarf = TlsReader()
    refs = [running.ref(tls_app[name]) for name in ("app", "lib", "plugin")]
    expected = [with_dwarf.block(running.target, ref, bias) for ref, bias in refs]
    monkeypatch.setattr(TlsReader, "_layout", lambda self, target, ld_so: None)
    without = TlsReader()
    assert [without.block(running.target, ref, bias) for ref, bias in refs] == expected


def test_a_link_map_that_cannot_be_read_is_a_reason(tls_app, running, monkeypatch):
    monkeypatch.setattr(TlsReader, "_layout", lambda self, target, ld_so: None)
    monkeypatch.setattr(tls_mod, "_layout_by_signature", lambda *args: None)
    reader = TlsReader()
    ref, bias = running.ref(tls_app["lib"])
    assert reader.block(running.target, ref, bias) is None
    assert "install libc6-dbg" in reader.problems[ref.path]


def test_a_module_not_loaded_by_ld_so_is_not_known(tls_app, running):
    ref, bias = running.ref(tls_app["lib"])
    reader = TlsReader()
    assert reader.block(running.target, ref, bias + 0x1000) is None    # no such link_map
    assert reader.problems == {}


def _ld_so():
    ld_so = open_module(LD_SO)
    if not ld_so.has_debug_info:
        require("ld.so has no debug info (install libc6-dbg)")
    return ld_so


def test_glibc_layouts_are_ld_so_dwarfs():
    """What runtime/tls.py and gs_prelude.h's gs_tls_block take as glibc's
    layout, from ld.so's own DWARF."""
    ld_so = _ld_so()
    head = ld_so.struct_member_offsets("link_map", ("l_addr", "l_ld", "l_next"))
    assert head == {"l_addr": tls_mod._L_ADDR, "l_ld": tls_mod._L_LD, "l_next": tls_mod._L_NEXT}
    assert ld_so.struct_member_offsets("r_debug", ("r_map",)) == {"r_map": tls_mod._R_MAP}
    private = ld_so.struct_member_offsets(
        "link_map", ("l_tls_initimage", "l_tls_initimage_size", "l_tls_blocksize",
                     "l_tls_align", "l_tls_firstbyte_offset", "l_tls_offset", "l_tls_modid"))
    start = private["l_tls_initimage"]
    assert list(private.values()) == [start + 8 * i for i in range(7)]   # the signature's order
    tcb = {m.name: m.offset for m in strip(ld_so.find_type("tcbhead_t")).members}
    assert tcb["dtv"] == 8                                       # gs_tls_block: tp + 8
    dtv = strip(ld_so.find_type("dtv_t"))
    assert dtv.size == 16                                        # dtv + 16 * modid
    pointer = {m.name: m.offset for m in strip(ld_so.find_type("struct dtv_pointer")).members}
    assert pointer["val"] == 0


def test_a_static_executable_has_its_block_after_the_tcb(tmp_path):
    """No ld.so: csu/libc-tls.c puts the block at roundup(p_memsz, p_align)."""
    if shutil.which("gcc") is None:
        require("gcc is not installed")
    source = tmp_path / "static.c"
    source.write_text(textwrap.dedent("""\
        #include <asm/prctl.h>
        #include <stdio.h>
        #include <sys/syscall.h>
        #include <unistd.h>
        __thread int first = 3;
        __thread char rest[40];
        int main(void)
        {
            unsigned long tp = 0;
            syscall(SYS_arch_prctl, ARCH_GET_FS, &tp);
            printf("%lx %p\\n", tp, (void *)&first);
            fflush(stdout);
            pause();
            return rest[0];
        }
        """))
    exe = tmp_path / "static"
    built = subprocess.run(["gcc", "-g", "-static", "-o", str(exe), str(source)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        require(f"cannot link a static executable: {built.stderr.strip()[-200:]}")
    child = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, text=True)
    try:
        tp, first = (int(x, 16) for x in child.stdout.readline().split())
        target = proc.open_process(child.pid)
        module = open_module(str(exe))
        file = proc.module_files(target)[0]
        ref = ModuleRef(file, 1, tuple(module.segments), module.tls_segment, module.dynamic_vaddr)
        block = TlsReader().block(target, ref, proc.module_offsets(target, ref).text)
        assert block == TlsBlock(tp - (first - module.find_global("first").address), 1)
    finally:
        child.kill()
        child.wait()


# ------------------------------------------------------------ the keeper

class _Session:
    def __init__(self):
        self.offsets, self.tls = [], []

    def set_module_offsets(self, pid, cookie, offsets):
        self.offsets.append((pid, cookie))

    def set_module_tls(self, pid, cookie, block):
        self.tls.append((pid, cookie, block))

    def rearm_offsets_notice(self, pid):
        pass


def test_keeper_fills_tls_and_waits_for_it(tls_app, running, monkeypatch):
    """A module read for its TLS is done only once its block is known;
    its load offsets are written once, before."""
    ref, _ = running.ref(tls_app["lib"])
    answers = iter([None, TlsBlock(112, 2)])
    monkeypatch.setattr(TlsReader, "block", lambda self, target, module, bias: next(answers))
    session = _Session()
    keeper = OffsetKeeper(session, (ref,))
    assert keeper.fill(running.proc.pid) is False
    assert session.offsets == [(running.proc.pid, ref.cookie)] and session.tls == []
    assert keeper.fill(running.proc.pid) is True
    assert session.offsets == [(running.proc.pid, ref.cookie)]
    assert session.tls == [(running.proc.pid, ref.cookie, TlsBlock(112, 2))]


def test_keeper_says_once_why_tls_is_unavailable(tls_app, running, monkeypatch):
    ref, _ = running.ref(tls_app["lib"])

    def fails(self, target, module, bias):
        self.problems[module.path] = "no way to read it"
        return None
    monkeypatch.setattr(TlsReader, "block", fails)
    notes = []
    keeper = OffsetKeeper(_Session(), (ref, replace(ref, cookie=ref.cookie + 1)),
                          notes=notes.append)
    keeper.fill(running.proc.pid)
    keeper.fill(running.proc.pid)
    assert notes == [f"thread-local variables of {ref.path} are unavailable in process "
                     f"{running.proc.pid}: no way to read it"]
