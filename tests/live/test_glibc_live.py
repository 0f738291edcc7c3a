"""Live: real glibc functions of a running process (tests/fixtures/libc_calls.c),
named as users name them: `malloc` (DWARF: __libc_malloc), other aliases,
versioned names, and GNU IFUNCs (`strlen`, `memcpy`), whose probe goes on
the implementation the process runs. Needs libc6-dbg (DWARF of libc) and gdb.

gdb is the oracle at the same function in the same process
(`gdb -batch -p PID -ex 'break malloc' -ex continue -ex 'info args'`):
the sizes the fixture passes, the probe address, and for IFUNCs which
implementation the process runs (gdb reads the GOT too).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import RunningTarget, compile_fixture, gs_cgen, require, traced_values

SOURCE = "libc_calls.c"
SIZES = (24, 1000, 4096)          # SIZES[] of the fixture, in call order


@pytest.fixture(scope="module")
def libc_target(tmp_path_factory):
    require(None if shutil.which("gdb") else "gdb is not installed")
    binary = compile_fixture(tmp_path_factory.mktemp("glibc"), SOURCE,
                             flags="-g -O0 -fno-builtin -fPIE -pie")
    target = RunningTarget([str(binary)])
    libc = mapped_libc(target.pid)
    require(None if _has_libc_dwarf(libc) else f"no DWARF for {libc} (install libc6-dbg)")
    yield target
    target.stop()


def mapped_libc(pid: int) -> str:
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        path = line.split()[-1]
        if os.path.basename(path).startswith("libc.so"):
            return os.path.realpath(path)
    raise AssertionError("the fixture maps no libc")


def libc_base(pid: int) -> int:
    libc = mapped_libc(pid)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if fields[-1] == libc and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16)
    raise AssertionError("libc has no offset-0 mapping")


def _has_libc_dwarf(libc: str) -> bool:
    from gs_cgen.dwarf import open_module  # noqa: PLC0415
    return open_module(libc).has_debug_info


def trace(pid: int, script: str, events: int) -> list[str]:
    result = gs_cgen("trace", "-p", str(pid), "-s", script, "--max-events", str(events),
                     "--output", "plain")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def dry_run(*args: str) -> str:
    (line,) = dry_runs(*args)
    return line


def dry_runs(*args: str) -> list[str]:
    """--dry-run lines, one per probe (one compile for all trace blocks)."""
    result = gs_cgen("trace", *args, "--dry-run")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def sites_by_pattern(pid: int, names: tuple[str, ...], body: str = "") -> dict[str, dict]:
    script = " ".join(f"trace {name} {{ {body} }}" for name in names)
    sites = [site_of(line) for line in dry_runs("-p", str(pid), "-s", script)]
    assert [s["pattern"] for s in sites] == list(names)
    return {s["pattern"]: s for s in sites}


_SITE = re.compile(r"probe \d+: (\S+) -> (\S+)(?: \((.+)\))? at (\S+):(\d+) \[(\S+) "
                   r"0x([0-9a-f]+), ")


def site_of(line: str) -> dict:
    pattern, function, notes, file, number, module, address = _SITE.match(line).groups()
    return {"pattern": pattern, "function": function, "notes": notes, "file": file,
            "line": int(number), "module": module, "address": int(address, 16)}


def gdb_batch(pid: int, *commands: str) -> str:
    args = ["gdb", "-nx", "-batch", "-p", str(pid)]
    for command in commands:
        args += ["-ex", command]
    return subprocess.run(args, capture_output=True, text=True, timeout=120).stdout


def assert_cycle(sizes: list[int]) -> None:
    """Consecutive rounds of the fixture: SIZES in order, from anywhere."""
    start = SIZES.index(sizes[0])
    assert sizes == [SIZES[(start + i) % 3] for i in range(len(sizes))], sizes


def test_malloc_prints_the_sizes_the_fixture_passes(libc_target):
    pid = libc_target.pid
    lines = trace(pid, "trace malloc { print bytes; }", events=6)
    assert all(line.startswith("bytes = ") for line in lines), lines
    assert_cycle([int(line.removeprefix("bytes = ")) for line in lines])
    site = site_of(dry_run("-p", str(pid), "-s", "trace malloc { print bytes; }"))
    gdb = gdb_batch(pid, "break malloc", "continue", "info args", "p/x $pc")
    assert int(re.search(r"^bytes = (\d+)$", gdb, re.M).group(1)) in SIZES, gdb
    pc = int(re.search(r"^\$1 = (0x[0-9a-f]+)$", gdb, re.M).group(1), 16)
    assert pc - libc_base(pid) == site["address"]
    # gdb: "__GI___libc_malloc (bytes=24) at ./malloc/malloc.c:3288"
    hit = re.search(r"Breakpoint 1\.\d+, \S+ \(bytes=\d+\) at \./(\S+):(\d+)", gdb)
    assert (site["function"], site["file"]) == ("__libc_malloc", hit.group(1))


def test_aliases_and_versions_name_the_same_function(libc_target):
    pid = libc_target.pid
    names = ("malloc", "__libc_malloc", "malloc@@GLIBC_2.2.5", "malloc@GLIBC_2.2.5", "__malloc")
    sites = sites_by_pattern(pid, names + ("calloc",))
    assert {sites[n]["address"] for n in names} == {sites["malloc"]["address"]}
    assert {sites[n]["function"] for n in names} == {"__libc_malloc"}
    assert sites["calloc"]["function"] == "__libc_calloc"
    assert sites["malloc"]["notes"] is None
    lines = trace(pid, 'trace malloc@@GLIBC_2.2.5 { print "m {}", bytes; }\n'
                       'trace calloc { print "c {} {}", n, elem_size; }', events=8)
    assert_cycle([int(line.removeprefix("m ")) for line in lines if line.startswith("m ")])
    assert {line for line in lines if not line.startswith("m ")} == {"c 7 9"}


def test_old_version_is_its_own_function(libc_target):
    libc = mapped_libc(libc_target.pid)
    site = site_of(dry_run("-p", str(libc_target.pid), "-s",
                           "trace memcpy@GLIBC_2.2.5 { print $pid; }"))
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-ex", "break memcpy@GLIBC_2.2.5", libc],
                         capture_output=True, text=True, timeout=120).stdout
    address, file, line = re.search(r"Breakpoint 1 at (0x[0-9a-f]+): file \.\./(\S+), "
                                    r"line (\d+)\.", gdb).groups()
    assert (site["address"], site["file"], site["line"]) == (int(address, 16), file, int(line))
    assert site["notes"] == "assembly, no DWARF variables"


def test_ifunc_dry_run_names_the_implementation_this_process_runs(libc_target):
    pid = libc_target.pid
    sites = sites_by_pattern(pid, ("strlen", "memcpy", "memcpy@@GLIBC_2.14"), "print $pid;")
    assert sites["memcpy"]["address"] == sites["memcpy@@GLIBC_2.14"]["address"]
    # The fixture calls strlen, then memcpy, each round.
    gdb = gdb_batch(pid, "break strlen", "break memcpy", "continue", "p/x $pc", "continue",
                    "p/x $pc")
    hits = re.findall(r"Breakpoint \d+\.\d+, (\S+) \(\) at \.\./(\S+):(\d+)", gdb)
    pcs = [int(pc, 16) for pc in re.findall(r"^\$\d+ = (0x[0-9a-f]+)$", gdb, re.M)]
    assert len(hits) == len(pcs) == 2, gdb
    base = libc_base(pid)
    for name, (function, file, line), pc in zip(("strlen", "memcpy"), hits, pcs):
        site = sites[name]
        assert (site["function"], site["file"], site["line"], site["address"]) == \
            (function, file, int(line), pc - base), name
        assert site["notes"] == "IFUNC, chosen by this process; assembly, no DWARF variables"


def test_ifunc_probe_fires_and_assembly_has_no_variables(libc_target):
    pid = libc_target.pid
    assert trace(pid, 'trace strlen { print "strlen {}", $pid; }', events=3) == \
        [f"strlen {pid}"] * 3
    implementation = site_of(dry_run("-p", str(pid), "-s", "trace strlen { }"))["function"]
    result = gs_cgen("trace", "-p", str(pid), "-s", "trace strlen { print s; }")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"error: no variable 's' at {implementation} (strlen): {implementation} is " \
           "hand-written assembly (../sysdeps/x86_64/multiarch/" in result.stderr
    assert "DWARF describes no parameters or locals" in result.stderr


def test_ifunc_without_a_process_uses_gs_cgens_own_choice(libc_target):
    libc = mapped_libc(libc_target.pid)
    by_pid = site_of(dry_run("-p", str(libc_target.pid), "-s", "trace strlen { }"))
    alone = site_of(dry_run("-t", libc, "-s", "trace strlen { }"))
    assert (alone["function"], alone["address"]) == (by_pid["function"], by_pid["address"])
    assert alone["notes"] == ("IFUNC, chosen by gs-cgen's own process, which maps the same "
                              f"{os.path.basename(libc)}; assembly, no DWARF variables")


def test_backtrace_names_the_dwarf_function(libc_target):
    pid = libc_target.pid
    lines = trace(pid, "trace malloc { bt; }", events=1)
    gdb = gdb_batch(pid, "break malloc", "continue", "bt 1")
    file, line = re.search(r"^#0\s+\S+ \(bytes=\d+\) at \./(\S+):(\d+)$", gdb, re.M).groups()
    offset = site_of(dry_run("-p", str(pid), "-s", "trace malloc { }"))["address"]
    assert lines[1] == f"  #0 __libc_malloc at {file}:{line} " \
                       f"[{os.path.basename(mapped_libc(pid))}+0x{offset:x}]", lines


def test_a_function_only_inlined_in_libc_is_found_from_the_process(libc_target):
    """`checked_request2size` exists only inlined, in libc (not in the
    fixture, whose symbol tables are searched first): `-p` finds its copies
    at gdb's `break` locations and reads `req` there (before: "no function
    'checked_request2size' in ... or the libraries it loads")."""
    from tests.gdb_oracle import gdb_locations  # noqa: PLC0415
    pid = str(libc_target.pid)
    libc = mapped_libc(libc_target.pid)
    dry = gs_cgen("trace", "-p", pid, "--dry-run", "-s", "trace checked_request2size { print req; }")
    assert dry.returncode == 0, dry.stderr
    ours = sorted(int(a, 16) for a in re.findall(r"libc\.so\.6 (0x[0-9a-f]+), file offset", dry.stdout))
    assert ours == gdb_locations(libc, ["checked_request2size"])["checked_request2size"] != []
    result = gs_cgen("trace", "-p", pid, "--output", "plain", "--max-events", "6", "-s",
                     "trace checked_request2size { print req; }")
    assert result.returncode == 0, result.stderr
    values = {int(line.removeprefix("req = ")) for line in result.stdout.splitlines()}
    assert values <= {*SIZES, 7 * 9} and len(values) >= 2, result.stdout


def test_aliases_of_libc_objects_read_as_their_object(libc_target):
    """DWARF names glibc's objects once; their aliases are symbols only
    (program_invocation_short_name is __progname, __libc_errno is the TLS
    errno): gdb's `print` finds them, and so does a trace (before: "no
    variable 'program_invocation_short_name' ... did you mean:
    program_invocation_short_name")."""
    result = gs_cgen("trace", "-p", str(libc_target.pid), "--output", "plain", "--max-events", "2",
                     "-s", 'trace free { print "{} {} {} {}", program_invocation_short_name, '
                           '__progname, __libc_errno == errno, &__libc_errno == &errno; }')
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['"libc_calls" "libc_calls" true true'] * 2, result.stdout


def test_a_libc_function_the_program_inlined_is_traced_in_its_copies(libc_target, build_dir):
    """glibc's <stdlib.h> inlines atoi into a program built -O2, which then
    never calls libc's atoi. gdb's `break atoi` stops in the program's copy
    and in libc's; so does `trace atoi` (before: libc's alone, and the
    trace printed nothing). Values as gdb prints them at the same stops."""
    from tests.gdb_oracle import gdb_locations, gdb_values  # noqa: PLC0415
    binary = compile_fixture(build_dir, "libc_inlined.c", "-g -O2 -fPIE -pie")
    dry = gs_cgen("trace", "--dry-run", "-s", "trace atoi { print __nptr; }", "--", str(binary))
    assert dry.returncode == 0, dry.stderr
    modules = re.findall(r"\[(\S+) (0x[0-9a-f]+), file offset", dry.stdout)
    ours = [int(address, 16) for path, address in modules if path == str(binary)]
    assert ours == gdb_locations(str(binary), ["atoi"])["atoi"] != [], dry.stdout
    assert [os.path.basename(path) for path, _ in modules][len(ours):] == ["libc.so.6"]
    probes = [("atoi", ["__nptr"])]
    traced = traced_values(binary, probes, 6, lambda value: f'"{value["value"]}"')
    expected = [(spec, [re.sub(r"^0x[0-9a-f]+ ", "", v) for v in values])
                for spec, values in gdb_values(str(binary), probes, 6)]
    assert traced == expected and {v for _, (v,) in traced} == {'"12"', '"-7"', '"300"'}
