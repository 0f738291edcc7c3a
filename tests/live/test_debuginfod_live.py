"""Debug info from debuginfod, against the real server: Debian's `debuginfod
-F DIR` serves the `objcopy --only-keep-debug` files of the shlib fixture
(tests/fixtures/shlib: app and libgsdemo.so), and `gs-cgen info` and `trace`
on the stripped copies (app with `strip`, .symtab gone too; the library with
`strip --strip-debug`) print exactly what they print on the unstripped ones.
Then, with the server stopped, a second run is served from the client's
cache, where gdb (`set debuginfod enabled on`) finds the same files; a server
that is down or lacks the build-id is an error naming module and build-id.

The values are the gdb-verified ones of tests/live/test_shared_libs_live.py:
lib_work(iteration) calls compute(6, 7): product = 126, scale = 3,
lib_data = 1234, lib_name = "gsdemo"; app_step: app_data = 2024.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.live.conftest import FIXTURES, gs_cgen, marker_line, our_uprobes
from tests.prerequisites import require

LIB_SOURCE = "shlib/libgsdemo.c"
APP_SOURCE = "shlib/app.c"
SCRIPT = ('trace app_step { print "app_step {} {}", iteration, app_data; }\n'
          'trace lib_work { print "lib_work {} {} {}", iteration, lib_data, lib_name; }\n'
          f'trace libgsdemo.c:{marker_line(LIB_SOURCE, "lib_product")} '
          '{ print product; print scale; }')
EXPECTED = [line for iteration in range(3) for line in (
    f"app_step {iteration} 2024", f'lib_work {iteration} 1234 "gsdemo"', "product = 126",
    "scale = 3")]
# Big enough (~1.2 MB of DWARF) for the progress line of a large download.
BIG_STRUCTS = 2500


def _run(*args) -> None:
    subprocess.run(list(map(str, args)), check=True)


def _build_id(path: Path) -> str:
    notes = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True,
                           check=True).stdout
    return notes.split("Build ID:")[1].split()[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """full/ and stripped/ copies of app (rpath $ORIGIN) and libgsdemo.so,
    debug/ with their debug files and a large one's, and a stripped
    library whose debug file no server has."""
    for tool in ("debuginfod", "objcopy", "strip", "readelf", "gcc"):
        if shutil.which(tool) is None:
            require(f"{tool} is not installed (scripts/setup.sh installs Debian's debuginfod)")
    root = tmp_path_factory.mktemp("debuginfod")
    full, stripped, debug = root / "full", root / "stripped", root / "debug"
    for folder in (full, stripped, debug):
        folder.mkdir()
    _run("gcc", "-g", "-O0", "-fPIC", "-shared", "-o", full / "libgsdemo.so", FIXTURES / LIB_SOURCE)
    _run("gcc", "-g", "-O0", "-fPIE", "-pie", "-o", full / "app", FIXTURES / APP_SOURCE,
         f"-L{full}", "-lgsdemo", "-Wl,-rpath,$ORIGIN", "-ldl")
    big_source = root / "big.c"
    big_source.write_text("".join(
        f"struct s{i} {{ " + " ".join(f"int m{i}_{j};" for j in range(20)) + f" }} g{i};\n"
        for i in range(BIG_STRUCTS)) + "int main(void) { return 0; }\n")
    _run("gcc", "-g", "-O0", "-o", full / "big", big_source)
    for name in ("app", "libgsdemo.so", "big"):
        _run("objcopy", "--only-keep-debug", full / name, debug / f"{name}.debug")
    _run("strip", "-o", stripped / "app", full / "app")
    _run("strip", "-o", stripped / "big", full / "big")
    _run("strip", "--strip-debug", "-o", stripped / "libgsdemo.so", full / "libgsdemo.so")
    # Another build (another build-id) whose debug file is served nowhere.
    _run("gcc", "-g", "-O1", "-fPIC", "-shared", "-o", root / "libunserved.so",
         FIXTURES / LIB_SOURCE)
    _run("strip", "--strip-debug", "-o", stripped / "libunserved.so", root / "libunserved.so")
    assert (debug / "big.debug").stat().st_size > 1 << 20
    return {"root": root, "full": full, "stripped": stripped, "debug": debug}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DebuginfodServer:
    """`debuginfod -F DIR` on a free port with its own database, started
    and stopped by the test; ready once it has indexed `expected` files."""

    def __init__(self, directory: Path, state: Path, expected: int) -> None:
        state.mkdir(exist_ok=True)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Without DEBUGINFOD_URLS: a server with one forwards what it lacks there.
        env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
        self.log = open(state / "server.log", "w")
        self.proc = subprocess.Popen(
            ["debuginfod", "-F", "-d", str(state / "db.sqlite"), "-p", str(self.port),
             str(directory)], stdout=self.log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        self._wait_indexed(expected, state / "server.log")

    def _wait_indexed(self, expected: int, log: Path) -> None:
        wanted = f'found_debuginfo_total{{source="files"}} {expected}'
        for _ in range(300):                  # up to ~30 s on a loaded machine
            if self.proc.poll() is not None:
                pytest.fail(f"debuginfod exited: {log.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as answer:
                    if wanted in answer.read().decode():
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.1)
        pytest.fail(f"debuginfod indexed fewer than {expected} files: {log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def server(built):
    started = DebuginfodServer(built["debug"], built["root"] / "server", expected=3)
    yield started
    started.stop()


def _client_env(url: str, cache: Path) -> dict[str, str]:
    # GS_CGEN_NO_CACHE: the stripped and unstripped files share a build-id,
    # and gs-cgen's own index cache must not answer for either.
    return {**os.environ, "DEBUGINFOD_URLS": url, "DEBUGINFOD_CACHE_PATH": str(cache),
            "GS_CGEN_NO_CACHE": "1", "GSDEMO_ITERATIONS": "3"}


def _info(env, binary: Path, function: str) -> subprocess.CompletedProcess:
    return gs_cgen("info", "-t", str(binary), "function", function, env=env)


def _trace(env, folder: Path) -> subprocess.CompletedProcess:
    return gs_cgen("trace", "-s", SCRIPT, "--", str(folder / "app"), env=env)


def _events(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line != "ready"]   # the app's own


def _as_if_full(stripped_output: str, built) -> str:
    """`info` names the file it read: the stripped one's folder, else the same."""
    return stripped_output.replace(str(built["stripped"]), str(built["full"]))


def test_stripped_binary_and_library_answer_as_the_unstripped(built, server, tmp_path):
    env = _client_env(server.url, tmp_path / "cache")
    for binary, function in (("app", "compute"), ("libgsdemo.so", "lib_work")):
        full = _info(env, built["full"] / binary, function)
        stripped = _info(env, built["stripped"] / binary, function)
        assert full.returncode == 0 and stripped.returncode == 0, stripped.stderr
        assert _as_if_full(stripped.stdout, built) == full.stdout
        assert f"{function} at {FIXTURES}" in full.stdout
        assert stripped.stderr == ""                     # small: no progress line
    assert _events(_trace(env, built["stripped"])) == _events(_trace(env, built["full"])) \
        == EXPECTED
    cached = {path.parent.name for path in (tmp_path / "cache").glob("*/debuginfo")}
    assert cached == {_build_id(built["stripped"] / "app"),
                      _build_id(built["stripped"] / "libgsdemo.so")}


def test_large_download_shows_a_progress_line(built, server, tmp_path):
    env = _client_env(server.url, tmp_path / "cache")
    big = built["stripped"] / "big"
    result = _info(env, big, "main")
    assert result.returncode == 0, result.stderr
    size = (built["debug"] / "big.debug").stat().st_size / (1 << 20)
    assert result.stderr == (f"gs-cgen: downloading debug info of '{big}' (build-id "
                             f"{_build_id(big)}) from debuginfod: {size:.1f} MB\n")
    assert _info(env, big, "main").stderr == ""           # from the cache: no download


def test_second_run_is_served_from_the_cache_with_the_server_stopped(built, tmp_path):
    own = DebuginfodServer(built["debug"], tmp_path / "server", expected=3)
    try:
        env = _client_env(own.url, tmp_path / "cache")
        first = _events(_trace(env, built["stripped"]))
    finally:
        own.stop()
    assert first == EXPECTED
    assert _events(_trace(env, built["stripped"])) == EXPECTED
    lib = built["stripped"] / "libgsdemo.so"
    again = _info(env, lib, "lib_work")
    assert again.returncode == 0 and "parameter int iteration" in again.stdout, again.stderr
    # gdb, by the same conventions, finds the same files in the same cache.
    line = marker_line(LIB_SOURCE, "lib_product")
    gdb = subprocess.run(
        ["gdb", "-nx", "-batch", "-ex", "set debuginfod enabled on",
         "-ex", "set breakpoint pending on", "-ex", f"break libgsdemo.c:{line}", "-ex", "run",
         "-ex", "print product", "-ex", "print scale", "-ex", "kill",
         str(built["stripped"] / "app")], capture_output=True, text=True, timeout=120,
        env={**env, "GSDEMO_ITERATIONS": "1"})
    assert "$1 = 126\n$2 = 3\n" in gdb.stdout, gdb.stdout + gdb.stderr


def test_server_down_and_cache_empty_is_an_error_naming_module_and_build_id(built, tmp_path):
    url = f"http://127.0.0.1:{_free_port()}"            # nothing listens there
    env = _client_env(url, tmp_path / "empty-cache")
    app = built["stripped"] / "app"
    for result in (_trace(env, built["stripped"]), _info(env, app, "compute")):
        assert result.returncode == 1, result.stdout
        assert "Traceback" not in result.stderr
        assert (f"error: '{app}' has no DWARF debug info, and fetching it (build-id "
                f"{_build_id(app)}) from debuginfod failed: Connection refused ({url})"
                in result.stderr), result.stderr
    assert our_uprobes() == []


def test_server_that_never_answers_times_out_naming_module_and_build_id(built, tmp_path):
    with socket.socket() as silent:          # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env = {**_client_env(url, tmp_path / "cache"), "DEBUGINFOD_TIMEOUT": "1"}
        app = built["stripped"] / "app"
        result = _info(env, app, "compute")
    assert result.returncode == 1, result.stdout
    assert (f"error: '{app}' has no DWARF debug info, and fetching it (build-id "
            f"{_build_id(app)}) from debuginfod failed: no answer within DEBUGINFOD_TIMEOUT "
            f"(1 s) ({url})\n" in result.stderr), result.stderr


def test_server_without_the_build_id_is_an_error_naming_module_and_build_id(built, server,
                                                                            tmp_path):
    env = _client_env(server.url, tmp_path / "cache")
    lib = built["stripped"] / "libunserved.so"
    message = (f"error: '{lib}' has no DWARF debug info, and no debuginfod server has it: "
               f"build-id {_build_id(lib)} not found on {server.url}")
    info = _info(env, lib, "lib_work")
    trace = gs_cgen("trace", "-t", str(lib), "-s", 'trace lib_work { print iteration; }',
                    env=env)
    for result in (info, trace):
        assert result.returncode == 1, result.stdout
        assert "Traceback" not in result.stderr
        assert message in result.stderr, result.stderr
    assert our_uprobes() == []
