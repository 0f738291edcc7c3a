#!/usr/bin/env python3
"""Per-hit cost of a uprobe, by the instruction it sits on and the program
it runs (issue #10, "per-hit cost at the uprobe floor"). Not a test: a
measurement, run as root.

  .venv/bin/python scripts/hitcost.py [--runs 5] [--kinds nop,mov] [--tracers ...]

The target (tests/fixtures/hitcost.c, built -O2 -g) calls on_KIND(i, i) N
times in a tight loop, pinned to the last CPU, and times the loop itself,
so tracer start-up is not counted; each on_KIND begins with one instruction
of that kind. Tracers run on the other CPUs:

  bcc-empty   BCC program `return 0;` attached at on_KIND's entry: the floor
  bpftrace    `uprobe:...:on_KIND /arg0 == 999999/ { printf(...) }`
  gs-cgen     `trace on_KIND { if x == 999999 { print x; } }` (this checkout;
              --script changes the block, e.g. to read only globals)
  gs-cgen@REV the same at commit REV (--baseline REV, via git archive)

--opt O0 builds the target -O0 (every on_KIND then begins with push %rbp
and gdb's `break` stops after the prologue, at a single-stepped spill).

Each row is the median of --runs runs of ns added per call (traced loop
minus the median untraced loop), with min-max. Timings on a shared 2-CPU
machine are noisy: compare medians taken in one run of this script.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "hitcost.c"
BUILD = REPO / "build" / "hitcost"
KINDS = ("nop", "nop5", "nop6", "endbr", "push", "push_r12", "jmp", "mov")
CALLS = {"fast": 200_000, "slow": 40_000}
GS_SCRIPT = 'trace on_{kind} {{ if x == 999999 {{ print x; }} }}'
BPFTRACE = 'uprobe:{path}:on_{kind} /arg0 == 999999/ {{ printf("x = %d\\n", arg0); }}'


def build(opt: str) -> Path:
    BUILD.mkdir(parents=True, exist_ok=True)
    binary = BUILD / f"hitcost_{opt}"
    subprocess.run(["gcc", f"-{opt}", "-g", "-o", str(binary), str(FIXTURE)], check=True)
    return binary


def export(rev: str) -> Path:
    """gs-cgen as of `rev`, exported with git archive (its cli.py runs it)."""
    out = BUILD / f"rev-{rev}"
    if not out.exists():
        out.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def cpus() -> tuple[str, str]:
    """(target CPU, tracer CPUs): the target alone on the last CPU."""
    available = sorted(os.sched_getaffinity(0))
    target = available[-1]
    rest = [c for c in available if c != target] or [target]
    return str(target), ",".join(map(str, rest))


def start_target(binary: Path, kind: str, calls: int, cpu: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(["taskset", "-c", cpu, str(binary), kind, str(calls)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready"):
        raise RuntimeError(f"target said {line!r}")
    return proc, int(line.split()[1], 16)


def finish_target(proc: subprocess.Popen) -> int:
    proc.stdin.write("go\n")
    proc.stdin.flush()
    m = re.match(r"ns (\d+) (\d+)", proc.stdout.readline())
    proc.stdin.close()                 # lets the target exit
    if not m:
        raise RuntimeError("target gave no timing")
    return int(m.group(2))


_WATCHED = 64          # bytes of on_KIND watched for the uprobe's int3


def code_bytes(pid: int, address: int) -> bytes:
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address)
        return mem.read(_WATCHED)


def wait_armed(pid: int, address: int, original: bytes, proc: subprocess.Popen | None,
               limit: float = 30.0) -> None:
    """Until the function's code is patched (an int3 at the probe, which
    may sit after the prologue, or a call once the kernel optimizes a
    uprobe on a 5-byte nop)."""
    end = time.monotonic() + limit
    while code_bytes(pid, address) == original:
        if (proc is not None and proc.poll() is not None) or time.monotonic() > end:
            err = proc.stderr.read() if proc is not None and proc.stderr else ""
            raise RuntimeError(f"probe never armed: {err.strip()[-400:]}")
        time.sleep(0.005)
    time.sleep(0.2)        # let the tracer settle into its read loop


def untraced(binary: Path, kind: str, calls: int, cpu: str) -> int:
    proc, _ = start_target(binary, kind, calls, cpu)
    elapsed = finish_target(proc)
    proc.wait(30)
    return elapsed


class EmptyBcc:
    """The floor: an empty BCC program, compiled once, attached per run
    (libbcc's bpf_attach_uprobe at the file offset, as gs-cgen attaches)."""

    def __init__(self) -> None:
        from bcc import BPF                     # noqa: PLC0415
        self.bpf = BPF(text="int gs_floor(struct pt_regs *ctx) { return 0; }")
        self.fn = self.bpf.load_func(b"gs_floor", BPF.KPROBE)

    def run(self, binary: Path, kind: str, calls: int, cpu: str, _tracer_cpu: str) -> int:
        from bcc.libbcc import lib              # noqa: PLC0415
        proc, address = start_target(binary, kind, calls, cpu)
        fd = lib.bpf_attach_uprobe(self.fn.fd, 0, f"hitcost_{os.getpid()}".encode(),
                                   str(binary).encode(), _symbol_address(binary, kind), proc.pid)
        if fd < 0:
            raise RuntimeError("bpf_attach_uprobe failed")
        try:
            return finish_target(proc)
        finally:
            lib.bpf_close_perf_event_fd(fd)
            proc.wait(30)


def _symbol_address(binary: Path, kind: str) -> int:
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    return int(next(line.split()[0] for line in out.splitlines()
                    if line.endswith(f" on_{kind}")), 16)


def run_external(argv_for, binary: Path, kind: str, calls: int, cpu: str,
                 tracer_cpu: str) -> int:
    proc, address = start_target(binary, kind, calls, cpu)
    start = _symbol_address(binary, kind)                    # PIE: .text vaddr = offset
    original = binary.read_bytes()[start:start + _WATCHED]
    tracer = subprocess.Popen(["taskset", "-c", tracer_cpu, *argv_for(binary, kind, proc.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        wait_armed(proc.pid, address, original, tracer)
        return finish_target(proc)
    finally:
        tracer.send_signal(2)
        proc.wait(30)
        try:
            tracer.wait(10)
        except subprocess.TimeoutExpired:
            tracer.kill()


def gs_cgen_argv(checkout: Path, script: str):
    def argv(binary: Path, kind: str, pid: int) -> list[str]:
        return [sys.executable, str(checkout / "cli.py"), "trace", "-p", str(pid),
                "-s", script.format(kind=kind), "--output", "plain"]
    return argv


def bpftrace_argv(binary: Path, kind: str, pid: int) -> list[str]:
    return ["bpftrace", "-p", str(pid), "-e", BPFTRACE.format(path=binary, kind=kind)]


def calls_for(kind: str, opt: str) -> int:
    single_stepped = kind in ("mov", "endbr") or opt == "O0"
    return CALLS["slow"] if single_stepped else CALLS["fast"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kinds", default="nop,mov")
    parser.add_argument("--tracers", default="bcc-empty,bpftrace,gs-cgen")
    parser.add_argument("--baseline", metavar="REV", help="also measure gs-cgen at REV")
    parser.add_argument("--opt", default="O2", choices=("O2", "O0"))
    parser.add_argument("--script", default=GS_SCRIPT, help="gs-cgen block ({kind} is on_KIND)")
    args = parser.parse_args()
    binary = build(args.opt)
    cpu, tracer_cpu = cpus()
    floor = EmptyBcc() if "bcc-empty" in args.tracers else None
    runners = {
        "bcc-empty": floor.run if floor else None,
        "bpftrace": lambda *a: run_external(bpftrace_argv, *a),
        "gs-cgen": lambda *a: run_external(gs_cgen_argv(REPO, args.script), *a),
    }
    tracers = args.tracers.split(",")
    if args.baseline:
        name = f"gs-cgen@{args.baseline}"
        old = export(args.baseline)
        runners[name] = lambda *a: run_external(gs_cgen_argv(old, args.script), *a)
        tracers.insert(tracers.index("gs-cgen") if "gs-cgen" in tracers else len(tracers), name)
    print(f"-{args.opt} target on CPU {cpu}, tracers on CPU {tracer_cpu}; load average "
          f"{os.getloadavg()[0]:.2f}; median of {args.runs} runs; gs-cgen: {args.script.format(kind='KIND')}")
    print(f"{'instruction':12} {'tracer':16} {'calls':>7} {'ns/call':>8} {'added ns':>9} "
          f"{'min-max':>13} {'x floor':>7}")
    for kind in args.kinds.split(","):
        calls = calls_for(kind, args.opt)
        base = statistics.median(untraced(binary, kind, calls, cpu)
                                 for _ in range(max(3, args.runs))) / calls
        print(f"{kind:12} {'untraced':16} {calls:7} {base:8.1f}")
        floor_added = None
        for name in tracers:
            added = [runners[name](binary, kind, calls, cpu, tracer_cpu) / calls - base
                     for _ in range(args.runs)]
            median = statistics.median(added)
            if name == "bcc-empty":
                floor_added = median
            ratio = f"{median / floor_added:7.2f}" if floor_added else ""
            print(f"{kind:12} {name:16} {calls:7} {base + median:8.1f} {median:9.1f} "
                  f"{min(added):6.0f}-{max(added):<6.0f} {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
