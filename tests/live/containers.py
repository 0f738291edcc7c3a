"""Containers for the live tests, built from this machine's own files (no
image registry is reachable): a minimal root filesystem for a target, podman
running it with --rootfs, and sandboxes in which gs-cgen itself runs (the
host's /usr, /etc, /sys, /dev and the repository bound into an empty root,
a fresh /proc; by unshare + chroot, or by podman --privileged).

The target's files live at /opt/demo-in-container, a path that does not
exist on the host, so no view of them can be right by accident."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gs_cgen.elf.image import ElfImage
from tests.live.conftest import FIXTURES, REPO

APP_DIR = "/opt/demo-in-container"
APP, LIB = f"{APP_DIR}/app", f"{APP_DIR}/lib/libgsdemo.so"
CONTAINERS_CONF = REPO / "tests" / "live" / "containers.conf"


def missing_tools(*names: str) -> str | None:
    absent = [name for name in names if shutil.which(name) is None]
    return f"missing {', '.join(absent)} (make setup installs them)" if absent else None


def _run(*argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True,
                          **kwargs)


# ------------------------------------------------------------------ binaries

def build_demo(out: Path) -> Path:
    """tests/fixtures/shlib built to run from /opt/demo-in-container:
    out/app and out/lib/libgsdemo.so, with DWARF."""
    (out / "lib").mkdir(parents=True, exist_ok=True)
    _run("gcc", "-g", "-O0", "-fPIC", "-shared", "-o", out / "lib" / "libgsdemo.so",
         FIXTURES / "shlib" / "libgsdemo.c")
    _run("gcc", "-g", "-O0", "-fPIE", "-pie", "-o", out / "app", FIXTURES / "shlib" / "app.c",
         f"-L{out / 'lib'}", "-lgsdemo", f"-Wl,-rpath,{APP_DIR}/lib", "-ldl")
    return out


def build_rootfs(demo: Path, rootfs: Path) -> Path:
    """A root filesystem holding the demo (stripped), its separate debug
    files where a debugger inside the container finds them, and the system
    libraries it needs (ldd), ld.so included:

      /opt/demo-in-container/app            .gnu_debuglink -> .debug/app.debug
      /opt/demo-in-container/lib/libgsdemo.so  build-id -> /usr/lib/debug/.build-id/"""
    app, lib = rootfs / APP.lstrip("/"), rootfs / LIB.lstrip("/")
    lib.parent.mkdir(parents=True)
    (app.parent / ".debug").mkdir()
    debug = app.parent / ".debug" / "app.debug"
    _run("objcopy", "--only-keep-debug", demo / "app", debug)
    _run("strip", "-o", app, demo / "app")
    _run("objcopy", f"--add-gnu-debuglink={debug}", app)
    image = ElfImage(str(demo / "lib" / "libgsdemo.so"))
    build_id = image.build_id
    image.close()
    by_id = rootfs / "usr/lib/debug/.build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    by_id.parent.mkdir(parents=True)
    _run("objcopy", "--only-keep-debug", demo / "lib" / "libgsdemo.so", by_id)
    _run("strip", "-o", lib, demo / "lib" / "libgsdemo.so")
    for path in _system_libraries(demo / "app"):
        copy = rootfs / path.lstrip("/")
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, copy)                     # follows symlinks: a real file inside
    return rootfs


def _system_libraries(binary: Path) -> list[str]:
    """What ldd says `binary` loads (our own library, not found here, aside)."""
    env = dict(os.environ, LD_LIBRARY_PATH=str(binary.parent / "lib"))
    text = _run("ldd", binary, env=env).stdout
    paths = re.findall(r"^\s*(?:\S+ => )?(/\S+) \(0x", text, re.M)
    return [p for p in paths if not p.startswith(str(binary.parent))]


def wait_until(condition, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def ns_pids(host_pid: int) -> list[int]:
    """NSpid of a process: its PID in each PID namespace, host view first."""
    status = Path(f"/proc/{host_pid}/status").read_text()
    return [int(p) for p in re.search(r"^NSpid:\s+(.*)$", status, re.M).group(1).split()]


def demo_ready(host_pid: int) -> bool:
    """The demo has set its globals (it prints "ready" then): libgsdemo is mapped."""
    try:
        return "libgsdemo.so" in Path(f"/proc/{host_pid}/maps").read_text()
    except OSError:
        return False


# -------------------------------------------------------------------- podman

@dataclass
class PodmanContainer:
    name: str
    host_pid: int

    def remove(self) -> None:
        podman("rm", "--force", "--time", "0", self.name, check=False)


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # runc, and no default ulimits: crun and podman's default RLIMIT_NOFILE
    # are refused on these machines (tests/live/containers.conf).
    env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
    result = subprocess.run(["podman", "--runtime", "runc", *args], env=env, capture_output=True,
                            text=True, timeout=120)
    assert not check or result.returncode == 0, f"podman {' '.join(args)}: {result.stderr}"
    return result


def podman_run(name: str, rootfs: str, *args: str) -> PodmanContainer:
    """`podman run --rootfs` the demo, detached; wait until it is ready."""
    podman("run", "--detach", "--name", name, "--network", "none", *args,
           "--rootfs", rootfs, APP)
    pid = int(podman("inspect", "--format", "{{.State.Pid}}", name).stdout)
    container = PodmanContainer(name, pid)
    try:
        wait_until(lambda: demo_ready(pid), f"container {name}")
    except BaseException:
        container.remove()
        raise
    return container


# ------------------------------------------------ where gs-cgen runs inside

def _top_level_links() -> list[tuple[str, str | None]]:
    """(/bin, its link target) for the host's top-level program and library
    directories; None for one that is a real directory (bound in)."""
    found = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / name
        if host.is_symlink():
            found.append((f"/{name}", os.readlink(host)))
        elif host.is_dir():
            found.append((f"/{name}", None))
    return found


def _host_binds() -> list[str]:
    """What gs-cgen needs from the host: python, BCC, kernel headers (/usr,
    /lib/modules), /etc, /sys (BTF, tracefs), /dev, the repository, and the
    venv running the tests (usually the repository's .venv, but any other)."""
    venv = [sys.prefix] if not Path(sys.prefix).is_relative_to(REPO) else []
    return ["/usr", "/etc", "/sys", "/dev", str(REPO), *venv] + \
        [name for name, link in _top_level_links() if link is None]


@dataclass
class Sandbox:
    """A container that gs-cgen runs in, built from the host's own files:
    `unshare` (a tmpfs root, host directories bound in, a fresh /proc,
    chroot) or `podman` (--privileged, the same directories bound with -v,
    --rootfs). `host_pids` shares the host's PID namespace; else it has its
    own, as a container does. With `demo`, its files are at
    /opt/demo-in-container inside (and nowhere on the host)."""

    kind: str
    root: Path
    host_pids: bool = False
    demo: Path | None = None
    name: str = ""

    def argv(self, inside: str, env: tuple[str, ...] = ()) -> list[str]:
        """Run the shell commands `inside` in the sandbox, from the repository,
        with the variables `env` of our environment."""
        inside = f"cd {shlex.quote(str(REPO))} && {inside}"
        if self.kind == "unshare":
            pids = [] if self.host_pids else ["--pid", "--fork"]
            setup = _namespace_root_script(self.root, self.demo)
            chroot = f"exec chroot {shlex.quote(str(self.root))} sh -c {shlex.quote(inside)}"
            return ["unshare", "--mount", *pids, "sh", "-c", f"{setup}\n{chroot}"]
        self._make_podman_root()
        # podman makes /dev itself (--privileged: with the host's devices).
        binds = [arg for path in _host_binds() if path != "/dev"
                 for arg in ("--volume", f"{path}:{path}")]
        pids = ["--pid", "host"] if self.host_pids else []
        passed = [arg for name in env for arg in ("--env", name)]
        return ["podman", "--runtime", "runc", "run", "--rm", "--name", self.name,
                "--privileged", "--network", "none", *pids, *binds, *passed,
                "--rootfs", str(self.root), "sh", "-c", inside]

    def member(self, runner: subprocess.Popen) -> int:
        """The host PID of a process inside, `runner` running argv()."""
        if self.kind == "podman":
            return int(podman("inspect", "--format", "{{.State.Pid}}", self.name).stdout)
        return wait_until(lambda: children(runner.pid), "unshare's child")[0]

    def remove(self) -> None:
        if self.kind == "podman":
            podman("rm", "--force", "--time", "0", self.name, check=False)

    def _make_podman_root(self) -> None:
        for name, link in _top_level_links():
            if link is not None and not (self.root / name.lstrip("/")).is_symlink():
                os.symlink(link, self.root / name.lstrip("/"))
        for path in ("proc", "tmp", "root"):
            (self.root / path).mkdir(parents=True, exist_ok=True)
        if self.demo is not None:
            shutil.copytree(self.demo, self.root / APP_DIR.lstrip("/"), dirs_exist_ok=True)


def _namespace_root_script(root: Path, demo: Path | None) -> str:
    """Shell commands, run in a new mount namespace, that make the empty
    directory `root` a root for gs-cgen: a tmpfs, the host directories bound
    in, the host's top-level links, a fresh /proc of the current PID
    namespace, an empty /tmp and /root, and `demo` at /opt/demo-in-container."""
    r = shlex.quote(str(root))
    lines = ["set -e", f"mount -t tmpfs gs-cgen-root {r}"]
    for path in map(shlex.quote, _host_binds()):
        lines += [f"mkdir -p {r}{path}", f"mount --rbind {path} {r}{path}"]
    lines += [f"ln -s {shlex.quote(link)} {r}{name}" for name, link in _top_level_links() if link]
    lines += [f"mkdir -p {r}/proc {r}/tmp {r}/root", f"mount -t proc proc {r}/proc"]
    if demo is not None:
        lines += [f"mkdir -p {r}{APP_DIR}", f"cp -r {shlex.quote(str(demo))}/. {r}{APP_DIR}/"]
    return "\n".join(lines)


def host_pid_of(ns_pid: int, member: int) -> int:
    """The host PID of the process that is `ns_pid` in `member`'s PID namespace."""
    namespace = os.stat(f"/proc/{member}/ns/pid").st_ino
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/pid").st_ino == namespace and \
                    ns_pids(int(entry))[-1] == ns_pid:
                return int(entry)
        except OSError:
            continue
    raise AssertionError(f"no process {ns_pid} in the PID namespace of {member}")
