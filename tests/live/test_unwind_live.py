"""`bt` in -O2 -fomit-frame-pointer code equals gdb's `bt` at the same
breakpoint (tests/fixtures/unwind): function, file and line of every frame,
through a shared library called via the PLT, two inlined levels, a
recursion and a signal handler frame; and python3.11 from PyDict_SetItem
out to _start. gdb runs the same binary in batch mode as the oracle."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.gdb_backtrace import parse_bt
from tests.live.conftest import FIXTURES, RunningTarget, gs_cgen, require
from tests.live.test_libpython_live import _python311

FLAGS = ["-O2", "-g", "-fomit-frame-pointer"]
FRAME = re.compile(r"  #(\d+) (?:(<signal handler called>)|(\S*(?:\(anonymous namespace\)\S*)*)"
                   r"(?: at (\S+):(\d+))?) "
                   r"\[([^\]+]+)\+0x([0-9a-f]+)\]( \(inlined\))?")


@pytest.fixture(scope="module")
def chain(build_dir):
    out = build_dir / "unwind"
    out.mkdir(exist_ok=True)
    subprocess.run(["gcc", *FLAGS, "-fPIC", "-shared", "-o", str(out / "libchain.so"),
                    str(FIXTURES / "unwind" / "chain_lib.c")], check=True)
    subprocess.run(["gcc", *FLAGS, "-o", str(out / "chain_main"),
                    str(FIXTURES / "unwind" / "chain_main.c"), "-L", str(out), "-lchain",
                    "-Wl,-rpath,$ORIGIN"], check=True)
    return out / "chain_main"


def gdb_bts(argv: list[str], breakpoint: str, count: int) -> list[str]:
    """gdb's `bt` at the first `count` stops at `breakpoint`."""
    args = ["gdb", "-nx", "-batch", "-ex", "set pagination off",
            "-ex", "set breakpoint pending on", "-ex", "handle SIGSEGV nostop noprint pass",
            "-ex", f"break {breakpoint}", "-ex", "run"]
    for _ in range(count):
        args += ["-ex", "echo ==bt==\\n", "-ex", "bt", "-ex", "continue"]
    out = subprocess.run(args + ["--args", *argv], capture_output=True, text=True,
                         timeout=180).stdout
    return out.split("==bt==\n")[1:]


def shown_frames(lines: list[str]) -> list[tuple]:
    """gs-cgen's frame lines as (function, file basename, line)."""
    frames = []
    for line in lines:
        match = FRAME.fullmatch(line)
        assert match, line
        _, signal, function, file, number, *_ = match.groups()
        if signal:
            frames.append((signal, None, None))
        else:
            frames.append((function, os.path.basename(file) if file else None,
                           int(number) if number else None))
    return frames


def backtraces(stdout: str) -> list[tuple[str, list[str]]]:
    """(header, frame lines) of each `bt` in the output."""
    found, lines = [], stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("backtrace: "):
            count = int(re.fullmatch(r"backtrace: .*, (\d+) frames", line).group(1))
            found.append((line, lines[i + 1:i + 1 + count]))
    return found


def assert_backtraces_are_gdbs(stdout: str, argv: list[str], breakpoint: str, count: int):
    """Each `bt` of `stdout` is gdb's `bt` at the same stop of the same
    run (the first `count` stops at `breakpoint`); returns ours."""
    ours = backtraces(stdout)
    oracle = gdb_bts(argv, breakpoint, count)
    assert len(ours) == len(oracle) == count
    for (header, lines), gdb_text in zip(ours, oracle):
        expected = [(f.function, f.file, f.line) for f in parse_bt(gdb_text)]
        assert header == f"backtrace: complete, {len(expected)} frames", (header, lines)
        assert shown_frames(lines) == expected
    return ours


def test_backtraces_equal_gdbs(chain):
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    result = gs_cgen("trace", "-s", "trace chain_leaf { print path; bt; }", "--output", "plain",
                     "--", str(chain), "once")
    assert result.returncode == 0, result.stderr
    ours = assert_backtraces_are_gdbs(result.stdout, [str(chain), "once"], "chain_leaf", 3)
    # the three paths: the 6-deep chain with two inlined levels, the
    # recursion, the signal handler frame
    chain_lines, recursion, signal = (lines for _, lines in ours)
    assert [line.endswith("(inlined)") for line in chain_lines].count(True) == 3
    assert sum("chain_recurse" in line for line in recursion) == 3
    assert any("<signal handler called> [libc.so.6+0x" in line for line in signal)


def test_backtraces_through_calls_whose_return_a_uretprobe_redirected(chain):
    """Return probes on the callers (chain_mid, chain_enter, each level of
    chain_recurse) make the kernel replace their return addresses on the
    stack with its trampoline's; the probe copies the real ones from the
    task's return_instances, and the frames are gdb's, as without them
    (before: `no unwind info for 0x7fffffffe000`, `?? [0x7fffffffe000]`)."""
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    script = ("trace chain_leaf { bt; } "
              + " ".join(f'trace {f}:return {{ print "{f}"; }}'
                         for f in ("chain_mid", "chain_enter", "chain_recurse", "main")))
    result = gs_cgen("trace", "-s", script, "--output", "plain", "--", str(chain), "once")
    assert result.returncode == 0, result.stderr
    assert_backtraces_are_gdbs(result.stdout, [str(chain), "once"], "chain_leaf", 3)
    assert result.stdout.count("chain_recurse\n") == 4       # each level returned


def test_a_tail_call_has_its_frame_as_in_gdb(build_dir):
    """middle() reaches leaf() by `jmp`: no frame of its own on the stack.
    gdb shows one at the tail call's return PC (frame-tailcall.c), found
    from the caller's DW_TAG_call_site and middle's tail-call site; so
    does bt (before: leaf, top, main)."""
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    binary = build_dir / "tail_calls"
    subprocess.run(["gcc", "-g", "-O2", "-o", str(binary), str(FIXTURES / "tail_calls.c")],
                   check=True)
    result = gs_cgen("trace", "-s", "trace leaf { bt; }", "--max-events", "2",
                     "--output", "plain", "--", str(binary))
    assert result.returncode == 0, result.stderr
    for _, lines in assert_backtraces_are_gdbs(result.stdout, [str(binary)], "leaf", 2):
        assert [f[0] for f in shown_frames(lines)] == ["leaf", "middle", "top", "main"]


def test_a_tail_call_gdb_cannot_resolve_has_no_frame(build_dir):
    """via_tail() tail-calls shared(), whose call site names shared's
    abstract instance (shared is also inlined): gdb 13 cannot resolve it
    and shows outer calling shared directly; so does bt (before: a
    via_tail frame gdb does not show)."""
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    binary = build_dir / "tail_calls_abstract"
    subprocess.run(["gcc", "-g", "-O2", "-o", str(binary), str(FIXTURES / "tail_calls_abstract.c")],
                   check=True)
    code = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                          capture_output=True, text=True, check=True).stdout
    assert re.search(r"<via_tail>:(?:.|\n)*?jmp\s+\w+ <shared>", code)        # the case
    result = gs_cgen("trace", "-s", "trace shared { bt; }", "--max-events", "2",
                     "--output", "plain", "--", str(binary))
    assert result.returncode == 0, result.stderr
    shown = [[f[0] for f in shown_frames(lines)]
             for _, lines in assert_backtraces_are_gdbs(result.stdout, [str(binary)], "shared", 2)]
    assert shown[0] == ["shared", "outer", "main"]


def test_depth_limit_raw_and_noinline(chain):
    script = "trace chain_leaf { if path == 1 { bt; bt raw; bt noinline; } }"
    result = gs_cgen("trace", "-s", script, "--output", "plain", "--backtrace-depth", "4",
                     "--", str(chain), "once")
    assert result.returncode == 0, result.stderr
    (full, frames), (raw, addresses), (physical, named) = backtraces(result.stdout)
    assert full == "backtrace: depth limit, 4 frames"
    assert [f[0] for f in shown_frames(frames)] == ["chain_leaf", "inner_step", "outer_step",
                                                   "chain_mid"]
    # raw: the machine frames' PCs (an inlined frame has its machine frame's)
    assert raw == "backtrace: depth limit, 4 frames"
    assert all(re.fullmatch(r"  #\d 0x[0-9a-f]+", line) for line in addresses)
    assert physical == "backtrace: depth limit, 4 frames"
    assert [f[0] for f in shown_frames(named)] == ["chain_leaf", "chain_mid", "chain_enter",
                                                  "app_second"]


def test_python311_dict_setitem_to_start():
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    found = _python311()
    require(None if found else "no python3.11 with a shared libpython3.11.so.1.0")
    interpreter, _ = found
    target = RunningTarget([interpreter, str(FIXTURES / "dict_inserts.py")])
    try:
        result = gs_cgen("trace", "-p", str(target.pid), "-s", "trace PyDict_SetItem { bt; }",
                         "--max-events", "1", "--output", "plain")
        assert result.returncode == 0, result.stderr
        gdb_out = subprocess.run(
            ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "break PyDict_SetItem",
             "-ex", "continue", "-ex", "echo ==bt==\\n", "-ex", "bt", "-p", str(target.pid)],
            capture_output=True, text=True, timeout=180).stdout
    finally:
        target.stop()
    (header, lines), = backtraces(result.stdout)
    expected = [(f.function, f.file, f.line) for f in parse_bt(gdb_out.split("==bt==\n")[1])]
    assert header == f"backtrace: complete, {len(expected)} frames"
    assert shown_frames(lines) == expected
    assert expected[1][0] == "_PyEval_EvalFrameDefault" and expected[-1][0] == "_start"


def test_a_module_dlopened_by_a_process_that_exits_at_once(tmp_path):
    """python3.11 imports `array` (dlopen) and exits right after the probe:
    with an empty cache, naming the first frames opens libpython's DWARF
    for a while, and a frame in array.so, mapped after the maps were first
    read, was looked up in /proc only after the process had gone ("no
    unwind info", `?? [0x...]`). The maps are fresh when a backtrace
    starts; gdb's `bt` at the same function is the oracle."""
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    found = _python311()
    require(None if found else "no python3.11 with a shared libpython3.11.so.1.0")
    interpreter, _ = found
    code = 'import array; repr(array.array("d", [2.5]))'
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))      # nothing known yet
    result = gs_cgen("trace", "-s", "trace float_repr { bt; }", "--max-events", "1",
                     "--output", "plain", "--", interpreter, "-c", code, env=env)
    assert result.returncode == 0, result.stderr
    gdb_out = subprocess.run(["gdb", "-nx", "-batch", "-ex", "set pagination off",
                              "-ex", "set breakpoint pending on", "-ex", "break float_repr",
                              "-ex", "run", "-ex", "echo ==bt==\\n", "-ex", "bt",
                              "--args", interpreter, "-c", code],
                             capture_output=True, text=True, timeout=180).stdout
    (header, lines), = backtraces(result.stdout)
    expected = [(f.function, f.file, f.line) for f in parse_bt(gdb_out.split("==bt==\n")[1])]
    assert header == f"backtrace: complete, {len(expected)} frames", lines
    assert shown_frames(lines) == expected
    assert any("array" in line for line in lines)


def gdb_arguments(gdb_text: str) -> list[dict[str, str]]:
    """Each frame's `name=value` arguments as gdb's bt prints them (an
    entry value `p=p@entry=1` is the value 1)."""
    found = []
    for line in gdb_text.splitlines():
        if line.startswith("#"):
            inside = re.search(r" \((.*)\) (?:at|from) ", line)
            pairs = re.findall(r"(\w+)=(?:\w+@entry=)?([^,]+)", inside.group(1) if inside else "")
            found.append(dict(pairs))
    return found


def test_bt_full_values_are_gdbs(chain):
    result = gs_cgen("trace", "-s", "trace chain_leaf { bt full; }", "--output", "plain",
                     "--", str(chain), "once")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    oracle = gdb_bts([str(chain), "once"], "chain_leaf", 3)
    starts = [i for i, line in enumerate(lines) if line.startswith("backtrace: ")]
    recovered = 0
    for start, gdb_text in zip(starts, oracle):
        expected = gdb_arguments(gdb_text)
        frame = -1
        for line in lines[start + 1:]:
            if line.startswith("backtrace: "):
                break
            if line.startswith("  #"):
                frame += 1
                continue
            for name, value in re.findall(r"(\w+) = ([^,]+)", line.strip()):
                if value == "<OPTIMIZED_OUT>" or not re.fullmatch(r"-?\d+", value):
                    continue        # pointers differ between the two processes
                assert expected[frame][name] == value, (frame, name, line, gdb_text)
                recovered += 1
    # chain_leaf's path/depth in all three, chain_recurse's n in three
    # callers (callee-saved registers restored by CFI), run_paths's i
    assert recovered >= 12, (result.stdout, result.stderr, oracle)


def _objdump_stub(binary, stub: str) -> int:
    """The link-time address objdump labels `<stub>` (its own synthetic
    symbols, independent of gs-cgen's PLT decoding)."""
    listing = subprocess.run(["objdump", "-d", str(binary)], capture_output=True, text=True,
                             check=True).stdout
    found = re.search(rf"^([0-9a-f]+) <{re.escape(stub)}>:$", listing, re.M)
    assert found, f"objdump labels no {stub}"
    return int(found.group(1), 16)


@pytest.fixture(scope="module")
def chain_ibt(chain):
    """chain_main linked with IBT PLTs: the named stubs are in .plt.sec
    (endbr64; bnd jmp *slot), the .plt entries only push and jump."""
    out = chain.parent / "chain_main_ibt"
    subprocess.run(["gcc", *FLAGS, "-fcf-protection=full", "-Wl,-z,ibtplt", "-o", str(out),
                    str(FIXTURES / "unwind" / "chain_main.c"), "-L", str(chain.parent),
                    "-lchain", "-Wl,-rpath,$ORIGIN"], check=True)
    return out


@pytest.mark.parametrize("build", ["chain", "chain_ibt"])
def test_plt_stub_frames_equal_gdbs(build, request):
    """A probe on a PLT stub's first instruction: frame #0 is
    `chain_enter@plt`, as gdb's `bt` at `break *'chain_enter@plt'`."""
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    binary = request.getfixturevalue(build)
    stub = _objdump_stub(binary, "chain_enter@plt")
    section = subprocess.run(["objdump", "-d", "-j", ".plt.sec" if build == "chain_ibt" else ".plt",
                              str(binary)], capture_output=True, text=True, check=True).stdout
    assert f"<chain_enter@plt>:" in section          # the stub layout under test
    result = gs_cgen("trace", "-s", f"trace {binary.name}:0x{stub:x} {{ bt; }}", "--output",
                     "plain", "--max-events", "1", "--", str(binary), "once")
    assert result.returncode == 0, result.stderr
    (header, lines), = backtraces(result.stdout)
    oracle = gdb_bts([str(binary), "once"], "*'chain_enter@plt'", 1)
    expected = [(f.function, f.file, f.line) for f in parse_bt(oracle[0])]
    assert expected[0] == ("chain_enter@plt", None, None)
    assert header == f"backtrace: complete, {len(expected)} frames"
    assert shown_frames(lines) == expected
    assert lines[0] == f"  #0 chain_enter@plt [{binary.name}+0x{stub:x}]"


def test_cpp_frames_are_qualified_as_gdbs(build_dir):
    """C++ frames by their qualified names, as gdb's `bt`: a method, an
    operator, an inlined static member, a template instance in a nested
    namespace, a function in an anonymous namespace."""
    require(None if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0
            else "gdb is not installed")
    binary = build_dir / "unwind" / "chain_cpp"
    binary.parent.mkdir(exist_ok=True)
    subprocess.run(["g++", *FLAGS, "-o", str(binary), str(FIXTURES / "unwind" / "chain_cpp.cpp")],
                   check=True)
    result = gs_cgen("trace", "-s", "trace leaf { bt; }", "--output", "plain", "--",
                     str(binary), "once")
    assert result.returncode == 0, result.stderr
    (header, lines), = backtraces(result.stdout)
    expected = [(f.function, f.file, f.line) for f in parse_bt(gdb_bts([str(binary), "once"],
                                                                      "leaf", 1)[0])]
    assert [f[0] for f in expected] == [
        "(anonymous namespace)::leaf", "geo::detail::scale<int>", "geo::Widget::twice",
        "geo::Widget::area", "geo::Widget::operator()", "main"]
    assert header == f"backtrace: complete, {len(expected)} frames"
    assert shown_frames(lines) == expected
    assert lines[2].endswith("(inlined)")
