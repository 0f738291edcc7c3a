"""Live, containers (CONTRACT.md "Containers"): the three topologies, each
attaching real uprobes and printing exact values.

  1. gs-cgen on the host, the target in a container (podman --rootfs, also
     on an overlay, and `unshare --root`): `-p HOSTPID`, `-t` with the
     container's path, `-t` with the host's path of the same file;
  2. gs-cgen and the target in the same container (PID + mount namespace):
     `-p` with the container's PID;
  3. gs-cgen in a privileged container sharing the host's PID namespace,
     the target on the host.

Plus a target whose executable was replaced on disk (only map_files reaches
it) and the one-line error when no view can be opened.

The demo is tests/fixtures/shlib (values gdb-verified, see
test_shared_libs_live.py): app_step reads app_data = 2024 and lib_bss = 5150;
at libgsdemo.c's lib_product line product = 126, lib_rodata = 4321,
app_bss = 88; lib compute(x=6, y=7) with module_tag = 2; app compute(a=2, b=5).
In the container its files are stripped: the DWARF is in a debug file found
through .gnu_debuglink next to the executable, and through the build-id in
the container's /usr/lib/debug for the library, neither visible from the host.
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gs_cgen.runtime import target as proc
from tests.live import containers as ct
from tests.live.conftest import REPO, compile_fixture, gs_cgen, marker_line, require

LIB_LINE = marker_line("shlib/libgsdemo.c", "lib_product")
SCRIPT = ('trace app_step { print "app {} {} {} {}", $pid, $host_pid, app_data, lib_bss; }\n'
          f'trace libgsdemo.c:{LIB_LINE} {{ print "lib {{}} {{}} {{}} {{}}", $pid, product, '
          'lib_rodata, app_bss; }')
_names = itertools.count()


def expected(pid: int, host_pid: int) -> set[str]:
    return {f"app {pid} {host_pid} 2024 5150", f"lib {pid} 126 4321 88"}


def trace_lines(*args: str, events: int = 4, **kwargs) -> list[str]:
    result = gs_cgen("trace", *args, "--max-events", str(events), "--output", "plain", **kwargs)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout.splitlines()


@pytest.fixture(scope="module")
def demo(build_dir) -> Path:
    return ct.build_demo(build_dir / "container-demo")


@pytest.fixture(scope="module")
def rootfs(demo, build_dir) -> Path:
    return ct.build_rootfs(demo, build_dir / "rootfs")


@pytest.fixture
def podman_ready():
    require(ct.missing_tools("podman", "runc"))


@pytest.fixture
def unshare_ready():
    require(ct.missing_tools("unshare", "chroot"))


# ------------------------------------------ 1. host -> target in a container

class Contained:
    """The demo running in a container: its host PID and its own PID."""

    def __init__(self, host_pid: int, stop) -> None:
        self.host_pid, self.stop = host_pid, stop
        self.pid = ct.ns_pids(host_pid)[-1]


def _in_podman(rootfs: Path, overlay: bool) -> Contained:
    # --rootfs DIR bind-mounts DIR; DIR:O puts an overlay on top of it.
    name = f"gs-cgen-test-{os.getpid()}-{next(_names)}"
    container = ct.podman_run(name, f"{rootfs}:O" if overlay else str(rootfs))
    return Contained(container.host_pid, container.remove)


def _in_unshare_root(rootfs: Path) -> Contained:
    runner = subprocess.Popen(["unshare", "--mount", "--pid", "--fork", f"--root={rootfs}",
                               ct.APP], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: list[int] = []

    def stop():
        # The demo is PID 1 of its namespace: killing it ends the namespace,
        # and unshare, which waits for it (killing unshare would not).
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        if not children:
            runner.kill()
        runner.wait()
    try:
        children += ct.wait_until(lambda: ct.children(runner.pid), "unshare's child")
        ct.wait_until(lambda: ct.demo_ready(children[0]), "the demo under unshare --root")
    except BaseException:
        stop()
        raise
    return Contained(children[0], stop)


@pytest.fixture(params=["podman", "podman-overlay", "unshare-root"])
def contained(request, rootfs):
    kind = request.param
    request.getfixturevalue("podman_ready" if kind.startswith("podman") else "unshare_ready")
    target = _in_unshare_root(rootfs) if kind == "unshare-root" else \
        _in_podman(rootfs, overlay=kind == "podman-overlay")
    yield target
    target.stop()


def test_container_target_traced_from_the_host(contained):
    assert contained.pid == 1 and contained.host_pid != 1
    lines = trace_lines("-p", str(contained.host_pid), "-s", SCRIPT)
    assert len(lines) == 4 and set(lines) == expected(contained.pid, contained.host_pid)


@pytest.fixture
def in_podman(podman_ready, rootfs):
    target = _in_podman(rootfs, overlay=False)
    yield target
    target.stop()


def test_container_modules_are_named_as_the_container_sees_them(in_podman):
    pid = str(in_podman.host_pid)
    result = gs_cgen("trace", "-p", pid, "-s", SCRIPT, "--dry-run")
    assert result.returncode == 0, result.stderr
    sites = [line.split("[", 1)[1].split(" 0x")[0] for line in result.stdout.splitlines()
             if line.startswith("probe ")]
    assert sites == [ct.APP, ct.LIB]
    result = gs_cgen("info", "-p", pid, "function", "app_step")
    assert result.returncode == 0, result.stderr
    assert f"in {ct.APP}\n" in result.stdout
    # A backtrace from inside the library names each frame's module as the
    # container sees it (gdb's bt there: compute, lib_work, main).
    lines = trace_lines("-p", pid, "-s", f"trace libgsdemo.c:{LIB_LINE} {{ bt; }}", events=1)
    assert lines[0] == "backtrace: complete, 3 frames"
    frames = [(line.split()[1], line.rsplit("[", 1)[1].split("+")[0]) for line in lines[1:]]
    assert frames == [("compute", "libgsdemo.so"), ("lib_work", "libgsdemo.so"),
                      ("main", "app")]


def test_target_path_is_the_containers_path(in_podman):
    assert not os.path.exists(ct.APP_DIR)                    # not on the host
    pid = str(in_podman.host_pid)
    script = 'trace compute { print "{} {} {} {}", x, y, module_tag, app_data; }'
    assert trace_lines("-t", ct.LIB, "-p", pid, "-s", script, events=2) == ["6 7 2 2024"] * 2
    script = 'trace compute { print "{} {} {} {}", $pid, a, b, lib_bss; }'
    assert trace_lines("-t", ct.APP, "-p", pid, "-s", script, events=2) == ["1 2 5 5150"] * 2


def test_host_path_alone_finds_the_container_process(in_podman, rootfs):
    """-t with the host's path of the file the container maps (same device
    and inode under another path): the process is found and traced."""
    host_path = str(rootfs / ct.LIB.lstrip("/"))
    assert in_podman.host_pid in proc.processes_mapping(proc.target_file(host_path, None))
    script = 'trace compute { print "{} {} {}", $pid, x, lib_data; }'
    env = dict(os.environ, GS_CGEN_DEBUG_ROOTS=str(rootfs / "usr/lib/debug"))
    lines = trace_lines("-t", host_path, "-s", script, events=2, env=env)
    assert lines == [f"{in_podman.host_pid} 6 1234"] * 2


# ---------------------------- 2. gs-cgen and the target in the same container

@pytest.fixture(params=["unshare", "podman"])
def sandbox(request, tmp_path):
    """Where gs-cgen runs (see containers.Sandbox), torn down afterwards."""
    kind = request.param
    request.getfixturevalue("unshare_ready" if kind == "unshare" else "podman_ready")
    root = tmp_path / "sandbox-root"
    root.mkdir()
    box = ct.Sandbox(kind, root, name=f"gs-cgen-test-{os.getpid()}-{next(_names)}")
    yield box
    box.remove()


def test_tracer_in_the_targets_container(sandbox, demo):
    """A PID + mount namespace whose root holds the demo at a path that the
    host does not have, and gs-cgen: -p with the container's PID."""
    sandbox.demo = demo
    inside = (f"{ct.APP} > /tmp/app.out 2>&1 & app=$!; "
              "while ! grep -q ready /tmp/app.out; do sleep 0.05; done; "
              'echo "target $app"; '
              f'exec {sys.executable} -m gs_cgen.cli trace -p "$app" -s "$GS_SCRIPT" '
              "--max-events 4 --output plain")
    env = dict(os.environ, GS_SCRIPT=SCRIPT, CONTAINERS_CONF=str(ct.CONTAINERS_CONF))
    runner = subprocess.Popen(sandbox.argv(inside, ("GS_SCRIPT",)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = runner.stdout.readline()
        assert first.startswith("target "), (first, runner.stderr.read())
        pid = int(first.split()[1])
        host_pid = ct.host_pid_of(pid, sandbox.member(runner))
        out, err = runner.communicate(timeout=120)
    finally:
        runner.kill()
        runner.wait()
    assert runner.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and set(lines) == expected(pid, host_pid)
    assert pid != host_pid


# ----------------------- 3. gs-cgen in a privileged container, host target

@pytest.fixture
def host_demo(demo):
    env = dict(os.environ, LD_LIBRARY_PATH=str(demo / "lib"))
    target = subprocess.Popen([str(demo / "app")], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env)
    assert target.stdout.readline().strip() == "ready"
    yield target
    target.kill()
    target.wait()


def test_tracer_in_a_container_with_the_hosts_pid_namespace(sandbox, host_demo, demo):
    """gs-cgen in a mount namespace of its own (the demo's build directory
    does not exist there) that shares the host's PIDs: -p, then -t with the
    host's path of the library."""
    sandbox.host_pids = True
    pid = host_demo.pid
    lib = demo / "lib" / "libgsdemo.so"
    tracer = f"{sys.executable} -m gs_cgen.cli trace --max-events 4 --output plain -p {pid}"
    inside = (f'test ! -e {demo} || exit 9; {tracer} -s "$GS_SCRIPT"; echo ---; '
              f'{tracer} -t {lib} -s "$GS_LIB_SCRIPT"')
    lib_script = 'trace compute { print "{} {} {} {}", $pid, x, y, lib_data; }'
    env = dict(os.environ, GS_SCRIPT=SCRIPT, GS_LIB_SCRIPT=lib_script,
               CONTAINERS_CONF=str(ct.CONTAINERS_CONF))
    result = subprocess.run(sandbox.argv(inside, ("GS_SCRIPT", "GS_LIB_SCRIPT")),
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    traced, _, by_library = result.stdout.partition("---\n")
    assert set(traced.splitlines()) == expected(pid, pid) and len(traced.splitlines()) == 4
    assert by_library.splitlines() == [f"{pid} 6 7 1234"] * 4


# ------------------------------- a replaced executable: only map_files has it

@pytest.fixture
def replaced_target(build_dir, tmp_path):
    """live_basic running from a file that was then deleted and replaced by
    another one at the same path (an upgrade under a running process)."""
    binary = compile_fixture(build_dir, "live_basic.c")
    path = tmp_path / "live_basic"
    shutil.copy(binary, path)
    target = subprocess.Popen([str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    assert target.stdout.readline().strip() == "ready"
    path.unlink()
    path.write_bytes(b"#!/bin/sh\n")
    yield target, path
    target.send_signal(signal.SIGKILL)
    target.wait()


def test_replaced_executable_is_traced_through_map_files(replaced_target):
    target, path = replaced_target
    assert f"{path} (deleted)" in Path(f"/proc/{target.pid}/maps").read_text()
    result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace add { print a; }", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert f"[{path} 0x" in result.stdout                  # named as the process names it
    lines = trace_lines("-p", str(target.pid), "-s",
                        'trace add { print "{} {} {}", a, b, g_int; }', events=2)
    assert lines == ["3 39 -42"] * 2


def test_no_view_of_a_module_is_a_one_line_error(replaced_target):
    """Without CAP_SYS_ADMIN (and CAP_CHECKPOINT_RESTORE) map_files cannot be
    followed; the path shows another file: neither view works."""
    require(ct.missing_tools("setpriv"))
    target, path = replaced_target
    drop = "-sys_admin,-checkpoint_restore"
    result = subprocess.run(["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}",
                             sys.executable, "-m", "gs_cgen.cli", "trace", "-p", str(target.pid),
                             "-s", "trace add { print a; }"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 1
    mapping = next(line.split()[0] for line in Path(f"/proc/{target.pid}/maps").read_text()
                   .splitlines() if line.endswith("(deleted)") and " r-xp " in line)
    assert result.stderr == (
        f"error: cannot open {path} of process {target.pid} through any view: {path}: another "
        "file (device and inode differ from the maps line); "
        f"/proc/{target.pid}/map_files/{mapping}: Operation not permitted\n")
