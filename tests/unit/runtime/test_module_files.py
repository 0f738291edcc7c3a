"""Module files across namespaces, without root: maps lines with device and
inode, the choice of a view from (faked) stat results, display vs open path
through ModuleSet, sites and the debug-file search (DESIGN.md "Module files
across namespaces")."""
from __future__ import annotations

import dataclasses
import errno
import os

import pytest

from gs_cgen.dwarf import debugfile
from gs_cgen.dwarf.model import FunctionSite
from gs_cgen.errors import TargetError
from gs_cgen.plan import modules as modules_mod
from gs_cgen.plan.model import ModuleFile
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.sites import resolve_sites
from gs_cgen.runtime.target import (Mapping, ProcessTarget, module_file, module_files,
                                    parse_maps, target_file)
from gs_cgen.script.parser import parse
from tests.fakes import FakeModule

DEV = os.makedev(0xFE, 0x01)
MAPS = """\
55e35e362000-55e35e363000 r--p 00000000 fe:01 2156966    /usr/bin/demo
55e35e363000-55e35e364000 r-xp 00001000 fe:01 2156966    /usr/bin/demo
55e35e366000-55e35e367000 rw-p 00003000 fe:01 2156966    /usr/bin/demo
55e397d50000-55e397d71000 rw-p 00000000 00:00 0          [heap]
7fe7c5700000-7fe7c5800000 r--p 00000000 fe:01 88         /usr/lib/locale/locale-archive
7fe7c5969000-7fe7c598f000 r--p 00000000 00:33 2156967    /lib/x86_64-linux-gnu/libc.so.6
7fe7c598f000-7fe7c5ae5000 r-xp 00026000 00:33 2156967    /lib/x86_64-linux-gnu/libc.so.6
7fe7c5b00000-7fe7c5b01000 r-xp 00000000 fe:01 4242       /opt/my app/lib x.so (deleted)
7fe7c5b53000-7fe7c5b55000 r-xp 00000000 00:00 0          [vdso]
"""
ENTRY = 0x55E35E363040                       # inside the r-xp mapping of /usr/bin/demo


def target(root: str = "/proc/77/root", maps: str = MAPS) -> ProcessTarget:
    return ProcessTarget(77, tuple(parse_maps(maps)), (1, 2), root, ENTRY)


def fake_stat(results: dict):
    """identify(): (dev, inode) per path, or an errno to raise."""
    def identify(path: str):
        result = results.get(path, errno.ENOENT)
        if isinstance(result, int):
            raise OSError(result, os.strerror(result))
        return result
    return identify


# ------------------------------------------------------------------ maps lines

def test_maps_lines_carry_device_inode_and_the_deleted_mark():
    lines = parse_maps(MAPS)
    assert lines[0] == Mapping(0x55E35E362000, 0x55E35E363000, "r--p", 0, "/usr/bin/demo",
                               DEV, 2156966, False)
    assert (lines[5].dev, lines[5].inode) == (os.makedev(0, 0x33), 2156967)   # overlayfs
    spaced = lines[7]
    assert (spaced.path, spaced.deleted, spaced.inode) == ("/opt/my app/lib x.so", True, 4242)
    assert not lines[3].is_file and not lines[8].is_file      # [heap], [vdso]


def test_executable_is_the_mapping_of_the_entry_point():
    assert target().executable().path == "/usr/bin/demo"
    with pytest.raises(TargetError, match="process 77 maps no executable file"):
        dataclasses.replace(target(), entry=None).executable()


def test_modules_are_files_with_code_once_each():
    paths = [m.path for m in target().module_mappings()]
    assert paths == ["/usr/bin/demo", "/lib/x86_64-linux-gnu/libc.so.6", "/opt/my app/lib x.so"]
    assert target().module_mappings()[0].offset == 0          # the file's first mapping


# --------------------------------------------------------------- view choice

def demo_mapping() -> Mapping:
    return target().executable()


MAP_FILES = "/proc/77/map_files/55e35e363000-55e35e364000"


def test_the_targets_root_is_used_when_it_is_the_same_file():
    stat = fake_stat({"/proc/77/root/usr/bin/demo": (DEV, 2156966)})
    assert module_file(target(), demo_mapping(), stat) == ModuleFile(
        "/usr/bin/demo", "/proc/77/root/usr/bin/demo", DEV, 2156966, "/proc/77/root")


def test_a_shared_root_opens_the_path_itself():
    stat = fake_stat({"/usr/bin/demo": (DEV, 2156966)})
    file = module_file(target(root=""), demo_mapping(), stat)
    assert (file.display_path, file.open_path, file.root) == ("/usr/bin/demo", "/usr/bin/demo", "")


@pytest.mark.parametrize("rooted", [(DEV, 1), errno.ENOENT])
def test_another_or_missing_file_falls_back_to_map_files(rooted):
    """Replaced on disk after exec, or deleted: map_files is the mapped file."""
    stat = fake_stat({"/proc/77/root/usr/bin/demo": rooted, MAP_FILES: (DEV, 2156966)})
    file = module_file(target(), demo_mapping(), stat)
    assert (file.display_path, file.open_path) == ("/usr/bin/demo", MAP_FILES)
    assert (file.dev, file.inode) == (DEV, 2156966)           # the maps line's identity


def test_overlayfs_map_files_wins_when_nothing_matches_the_maps_line():
    # The maps line shows overlayfs's device, stat the layer's: map_files is
    # the truth even though its stat does not match either.
    stat = fake_stat({"/proc/77/root/usr/bin/demo": (os.makedev(0, 0x40), 2156966),
                      MAP_FILES: (os.makedev(0xFE, 9), 2156966)})
    assert module_file(target(), demo_mapping(), stat).open_path == MAP_FILES


def test_no_view_is_a_one_line_error_naming_every_path_tried():
    stat = fake_stat({"/proc/77/root/usr/bin/demo": (DEV, 1), MAP_FILES: errno.EPERM})
    with pytest.raises(TargetError) as err:
        module_file(target(), demo_mapping(), stat)
    assert err.value.message == (
        "cannot open /usr/bin/demo of process 77 through any view: "
        "/proc/77/root/usr/bin/demo: another file (device and inode differ from the maps "
        "line); /usr/bin/demo: No such file or directory; "
        f"{MAP_FILES}: Operation not permitted")
    assert "\n" not in err.value.message


def test_maps_path_within_our_reach_is_ours():
    """Under `unshare --root=/srv/c`, maps says /srv/c/usr/bin/demo (the
    kernel writes paths relative to the reader's root): the target calls it
    /usr/bin/demo, and it opens in the target's root."""
    maps = MAPS.replace(" /usr/bin/demo", " /srv/c/usr/bin/demo")
    chrooted = dataclasses.replace(target(maps=maps), root_path="/srv/c")
    stat = fake_stat({"/proc/77/root/usr/bin/demo": (DEV, 2156966)})
    file = module_file(chrooted, chrooted.executable(), stat)
    assert (file.display_path, file.open_path) == ("/usr/bin/demo", "/proc/77/root/usr/bin/demo")
    assert chrooted.own_view("/srv/cc/x") == "/srv/cc/x"       # outside its root: ours
    assert target().own_view("/usr/bin/demo") == "/usr/bin/demo"


def test_maps_path_of_ours_is_tried_after_the_targets_root():
    stat = fake_stat({"/proc/77/root/usr/bin/demo": errno.ENOENT, "/usr/bin/demo": (DEV, 2156966)})
    file = module_file(target(), demo_mapping(), stat)
    assert (file.display_path, file.open_path, file.root) == ("/usr/bin/demo", "/usr/bin/demo", "")


# ------------------------------------------------------------------- -t PATH

@pytest.fixture
def container(tmp_path):
    """A directory standing for a container's root, holding /opt/app and
    /opt/unmapped, and a target whose maps show /opt/app by its inode."""
    root = tmp_path / "root"
    (root / "opt").mkdir(parents=True)
    for name in ("app", "unmapped"):
        (root / "opt" / name).write_bytes(b"\x7fELF")
    st = os.stat(root / "opt" / "app")
    maps = (f"5000-6000 r-xp 00000000 {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x} "
            f"{st.st_ino}    /opt/app\n")
    return ProcessTarget(5, tuple(parse_maps(maps)), (1, 2), str(root), 0x5000)


def test_target_path_is_the_containers_path_first(container):
    file = target_file("/opt/app", container)
    assert (file.display_path, file.open_path) == ("/opt/app", container.root + "/opt/app")
    assert module_files(container) == [file]


def test_target_path_not_mapped_yet_is_opened_in_the_targets_root(container):
    file = target_file("/opt/unmapped", container)
    assert (file.display_path, file.open_path, file.root) == \
        ("/opt/unmapped", container.root + "/opt/unmapped", container.root)


def test_target_path_of_the_tracer_names_the_mapping_it_is(container):
    host_path = container.root + "/opt/app"           # the same file, by our path
    assert target_file(host_path, container).display_path == "/opt/app"


def test_target_path_alone_is_a_host_path(tmp_path):
    (tmp_path / "real").write_bytes(b"")
    os.symlink(tmp_path / "real", tmp_path / "link")
    file = target_file(str(tmp_path / "link"), None)
    assert file.display_path == file.open_path == str(tmp_path / "real")
    assert file.inode == os.stat(tmp_path / "real").st_ino and file.root == ""


def test_missing_target_path_says_where_it_was_looked_for(container):
    with pytest.raises(TargetError) as err:
        target_file("/opt/none", container)
    assert err.value.message == \
        "no such file: /opt/none (looked in the root of process 5 and in ours)"
    with pytest.raises(TargetError, match=r"^no such file: /nonexistent/x$"):
        target_file("/nonexistent/x", None)


# ------------------------------------------------- display path vs open path

DEMO = ModuleFile("/usr/bin/demo", "/proc/77/root/usr/bin/demo", DEV, 2156966, "/proc/77/root")


def test_module_set_opens_through_the_view_and_names_by_display_path(monkeypatch):
    opened = []

    def fake_open(path, name=None, target_root=""):
        opened.append((path, name, target_root))
        return FakeModule(path=name or path)
    monkeypatch.setattr(modules_mod, "open_module", fake_open)
    modules = ModuleSet.over(DEMO, [DEMO, ModuleFile("/lib/libc.so.6", "/proc/77/map_files/7-8")])
    assert modules.default.path == "/usr/bin/demo"
    assert opened == [("/proc/77/root/usr/bin/demo", "/usr/bin/demo", "/proc/77/root")]
    assert modules.other_paths == ("/usr/bin/demo", "/lib/libc.so.6")
    assert modules.file("/usr/bin/demo") is DEMO


class ViewedModule(FakeModule):
    """A module opened through /proc/77/root."""

    @property
    def open_path(self) -> str:
        return "/proc/77/root" + self.path


def test_probe_site_names_the_display_path_and_attaches_the_open_path():
    module = ViewedModule(path="/usr/bin/demo")
    module.functions["main"] = [FunctionSite("main", 0x1100, 0x1200, 0x1110, "x.c", 3)]
    ((_, site),) = resolve_sites(parse("trace main { }").traces[0], ModuleSet.of(module), 0)
    assert site.module_path == "/usr/bin/demo"
    assert site.attach_path == "/proc/77/root/usr/bin/demo"


# ------------------------------------------------------ separate debug files

def test_debug_files_are_looked_for_inside_the_targets_root(monkeypatch):
    monkeypatch.setattr(debugfile, "DEBUG_ROOTS", ("/usr/lib/debug",))
    monkeypatch.delenv("GS_CGEN_DEBUG_ROOTS", raising=False)
    assert debugfile.build_id_paths("abcdef", "/proc/77/root") == [
        "/proc/77/root/usr/lib/debug/.build-id/ab/cdef.debug",
        "/usr/lib/debug/.build-id/ab/cdef.debug"]
    assert debugfile.debuglink_paths("/usr/bin/demo", "demo.debug", "/proc/77/root") == [
        "/proc/77/root/usr/bin/demo.debug", "/proc/77/root/usr/bin/.debug/demo.debug",
        "/proc/77/root/usr/lib/debug/usr/bin/demo.debug", "/usr/lib/debug/usr/bin/demo.debug"]


def test_one_cookie_for_the_probe_and_the_offsets_it_is_filled_under():
    """The cookie is made from the display path (and build-id): the C
    constant, the global's address and the map key Python writes agree,
    whatever view the module was opened through."""
    from gs_cgen.plan.build import PlanOptions, build_plan
    from gs_cgen.plan.model import PidNamespace
    from tests.unit.emit.test_golden import server_module
    module = server_module()                         # /opt/app/bin/server
    viewed = ModuleFile(module.path, "/proc/77/root" + module.path, DEV, 99, "/proc/77/root")
    modules = ModuleSet.of(module)
    modules.files[module.path] = viewed
    plan = build_plan(parse("trace handle { print g_count; }"), modules,
                      PlanOptions("t.gs", PidNamespace(False)))
    (ref,) = plan.modules
    (probe,) = plan.probes
    global_cookie = probe.slots[0].capture.address.cookie
    assert ref.file is viewed and ref.path == module.path
    assert ref.cookie == probe.site.module_cookie == global_cookie


def test_an_unreadable_process_says_root_is_not_enough_when_root(monkeypatch):
    from gs_cgen.runtime import target as target_mod  # noqa: PLC0415
    monkeypatch.setattr(target_mod.os, "geteuid", lambda: 1000)
    assert target_mod._unreadable_process(1) == "cannot read /proc/1 (run gs-cgen as root)"
    monkeypatch.setattr(target_mod.os, "geteuid", lambda: 0)
    assert target_mod._unreadable_process(1).startswith("cannot read /proc/1, even as root")
