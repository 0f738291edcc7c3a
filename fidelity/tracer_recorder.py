"""The gs-cgen side: one `trace PATTERN { print $sp; print $pc; print NAME;
... }` block per pattern (`0xPC`, or a function name whose sites are gdb's
`break FUNC` locations), naming exactly the variables gdb listed there, in
one launch-mode session per target (`gs-cgen trace -f SCRIPT --output json
-- PROG`). `$pc` tells which site an event is from; the first event of each
site is its record.

A script with one bad name fails as a whole (exit 1, naming the script
line). So the script is first checked with `--emit-c` (no BCC, no probes),
in this process through gs-cgen's command line (`gs_cgen.cli`, ~30 ms a
site): a failure that names a script line removes that `print` and records
its message as the variable's error; a failure without a line (an internal
error) is narrowed down print by print. The checked script then runs for
real; should loading or attaching still fail, the failing sites are found
by halving the site list with `--dry-run`, and left out with that message.

Using many probes in one session is what makes this fast enough: BCC
compiles one C program for all of them. Detaching is the slow part (about
0.1 s per probe on this kernel: each uprobe perf-event fd's close waits
for the kernel's uprobe unregistration)."""
from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from fidelity.corpus import Site, Target
from fidelity.environment import TARGET_ENVIRONMENT, without_aslr

CHUNK = 32                      # sites checked together before falling back to one by one
_SPANNED = re.compile(r"^(?P<name>.*?):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.*)$")
_ATTACH = re.compile(r"cannot attach uprobe for '(?P<pattern>[^']+)'")
_LOST = re.compile(r"lost (\d+) events in total")


@dataclass(frozen=True)
class Outcome:
    """What gs-cgen said about a script: ok, or its first error line."""

    ok: bool
    message: str = ""
    line: int | None = None      # script line the error names


@dataclass
class Probe:
    """One pattern's block: the names it prints and what happened to the others."""

    pattern: str
    sites: list[Site]
    names: list[str]
    errors: dict[str, str] = field(default_factory=dict)     # name -> gs-cgen's message
    site_error: str | None = None


@dataclass
class TraceRun:
    events: dict[str, dict]      # site key -> first JSON event there
    probes: dict[str, Probe]     # site key -> its block
    lost_events: int
    exit_code: int
    stderr: str
    strays: list[str] = field(default_factory=list)   # events at PCs that are no site
    check_seconds: float = 0.0


# ------------------------------------------------------------------ scripts

def render_script(probes: list[Probe]) -> tuple[str, dict[int, tuple[str, str | None]]]:
    """Script text and what each line is: (pattern, name) for a print of
    NAME, (pattern, None) for the block's other lines."""
    lines: list[str] = []
    owners: dict[int, tuple[str, str | None]] = {}

    def add(text: str, pattern: str, name: str | None) -> None:
        lines.append(text)
        owners[len(lines)] = (pattern, name)

    for probe in probes:
        pattern = probe.pattern
        add(f"trace {pattern} {{", pattern, None)
        add("    print $sp;", pattern, None)
        add("    print $pc;", pattern, None)
        for name in probe.names:
            add(f"    print {name};", pattern, name)
        add("}", pattern, None)
    return "\n".join(lines) + "\n", owners


def parse_failure(stderr: str) -> Outcome:
    for line in stderr.splitlines():
        match = _SPANNED.match(line)
        if match:
            return Outcome(False, match["message"], int(match["line"]))
        if "error:" in line:
            return Outcome(False, line.split("error:", 1)[1].strip())
    text = stderr.strip().splitlines()
    return Outcome(False, text[-1] if text else "failed without a message")


# ------------------------------------------------------------------ checking

def gs_cgen_in_process(arguments: list[str]) -> tuple[int, str, str]:
    """gs-cgen's command line run in this process: (exit status, stdout,
    stderr); an exception escaping it is reported as the CLI reports one."""
    from gs_cgen import cli  # noqa: PLC0415 — only the tracer side needs gs-cgen
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.cli.main(arguments, prog_name="gs-cgen", standalone_mode=False)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # noqa: BLE001 — a crash of the tool under test is data
            status = 1
            err.write(f"gs-cgen: internal error: {type(exc).__name__}: {exc}\n")
    return status, out.getvalue(), err.getvalue()


class Checker:
    """Finds the prints gs-cgen refuses, with `trace --emit-c`."""

    def __init__(self, target: Target) -> None:
        self.argv = target.argv

    def compile(self, probes: list[Probe]) -> tuple[Outcome, dict]:
        text, owners = render_script(probes)
        status, _, err = gs_cgen_in_process(["trace", "-s", text, "--emit-c", "--", *self.argv])
        return (Outcome(True) if status == 0 else parse_failure(err)), owners

    def check(self, probes: list[Probe]) -> None:
        for start in range(0, len(probes), CHUNK):
            chunk = probes[start:start + CHUNK]
            if not self.compile(chunk)[0].ok:
                for probe in chunk:
                    self._check_one(probe)

    def _check_one(self, probe: Probe) -> None:
        for _ in range(len(probe.names) + 1):
            outcome, owners = self.compile([probe])
            if outcome.ok:
                return
            _, name = owners.get(outcome.line, (None, None))
            if name is None:
                break
            self._refuse(probe, name, outcome.message)
        self._isolate(probe)

    def _isolate(self, probe: Probe) -> None:
        """An error that names no print: try the block bare, then print by print."""
        bare = self.compile([Probe(probe.pattern, probe.sites, [])])[0]
        if not bare.ok:
            probe.site_error = bare.message
            for name in list(probe.names):
                self._refuse(probe, name, bare.message)
            return
        for name in list(probe.names):
            alone = self.compile([Probe(probe.pattern, probe.sites, [name])])[0]
            if not alone.ok:
                self._refuse(probe, name, alone.message)
        together = self.compile([probe])[0]
        if not together.ok:              # only fails in company: keep nothing
            for name in list(probe.names):
                self._refuse(probe, name, together.message)

    @staticmethod
    def _refuse(probe: Probe, name: str, message: str) -> None:
        probe.errors[name] = message
        probe.names.remove(name)


# ------------------------------------------------------------------ running

def record(target: Target, names: dict[str, list[str]], bases: dict[str, int],
           timeout: float = 900) -> TraceRun:
    """Trace the sites in `names` (site key -> variable names) in one
    session; `bases` (module path -> load address, from gdb's run: the
    runs are alike) turn an event's $pc into its site."""
    ordered = _probes(target, names)
    began = time.monotonic()
    Checker(target).check(ordered)
    checked = time.monotonic() - began
    runnable = [p for p in ordered if p.site_error is None]
    run = TraceRun({}, {}, 0, 0, "")
    while runnable:
        run = _run(target, runnable, bases, timeout)
        if run.exit_code == 0:
            break
        failing = _failing_probes(target, runnable, run)
        if not failing:
            raise RuntimeError(f"gs-cgen failed on {target.label}: {run.stderr[-2000:]}")
        for probe, message in failing:
            probe.site_error = message
            runnable.remove(probe)
    run.probes = {site.key: probe for probe in ordered for site in probe.sites}
    run.check_seconds = checked
    return run


def _probes(target: Target, names: dict[str, list[str]]) -> list[Probe]:
    """One probe per pattern, printing every name gdb listed at any of its sites."""
    probes: dict[str, Probe] = {}
    for site in target.sites:
        if site.key not in names:
            continue
        probe = probes.setdefault(site.pattern, Probe(site.pattern, [], []))
        probe.sites.append(site)
        probe.names.extend(n for n in names[site.key] if n not in probe.names)
    return list(probes.values())


def _run(target: Target, probes: list[Probe], bases: dict[str, int], timeout: float) -> TraceRun:
    text, _ = render_script(probes)
    with tempfile.NamedTemporaryFile("w", suffix=".gs", prefix="fidelity-") as script:
        script.write(text)
        script.flush()
        command = without_aslr([sys.executable, "-m", "gs_cgen.cli", "trace", "-f", script.name,
                                "--output", "json", "--", *target.argv])
        try:
            done = subprocess.run(command, env=TARGET_ENVIRONMENT, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"gs-cgen did not end within {timeout:.0f} s on {target.label}") \
                from None
    run = TraceRun({}, {}, sum(int(n) for n in _LOST.findall(done.stderr)), done.returncode,
                   done.stderr)
    sites = {site.key: site for probe in probes for site in probe.sites}
    for line in done.stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError, KeyError, TypeError):
            event = json.loads(line)
            key = _event_site(event, probes, bases)
            if key in sites:
                run.events.setdefault(key, event)
            elif key not in run.strays:
                run.strays.append(key)
    return run


def _event_site(event: dict, probes: list[Probe], bases: dict[str, int]) -> str:
    """MODULE:0xADDR of the PC an event was taken at."""
    pc = next(v["value"] for v in event["values"] if v["expr"] == "$pc")
    module = next(p.sites[0].module for p in probes if p.pattern == event["trace"])
    return f"{Path(module).name}:0x{pc - bases[module]:x}"


def _failing_probes(target: Target, probes: list[Probe], run: TraceRun) -> list[tuple[Probe, str]]:
    """The probes that make a checked script fail to load or attach."""
    outcome = parse_failure(run.stderr)
    attach = _ATTACH.search(run.stderr)
    if attach:
        return [(p, outcome.message) for p in probes if p.pattern == attach["pattern"]]
    if outcome.line is not None:
        _, owners = render_script(probes)
        pattern, _ = owners.get(outcome.line, (None, None))
        return [(p, outcome.message) for p in probes if p.pattern == pattern]
    return _bisect(target, probes)


def _bisect(target: Target, probes: list[Probe]) -> list[tuple[Probe, str]]:
    """Halve the probe list with --dry-run (compile and verifier-load)."""
    outcome = _dry_run(target, probes)
    if outcome.ok:
        return []
    if len(probes) == 1:
        return [(probes[0], outcome.message)]
    middle = len(probes) // 2
    return _bisect(target, probes[:middle]) + _bisect(target, probes[middle:])


def _dry_run(target: Target, probes: list[Probe]) -> Outcome:
    text, _ = render_script(probes)
    with tempfile.NamedTemporaryFile("w", suffix=".gs", prefix="fidelity-") as script:
        script.write(text)
        script.flush()
        done = subprocess.run([sys.executable, "-m", "gs_cgen.cli", "trace", "-f", script.name,
                               "--dry-run", "--", *target.argv],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return Outcome(True) if done.returncode == 0 else parse_failure(done.stderr)


def location_descriptions(site: Site) -> dict[str, str]:
    """`gs-cgen info address` at a site: variable name -> where gs-cgen
    says it lives (the reason column of the report)."""
    status, out, err = gs_cgen_in_process(["info", "-t", site.module, "address", f"0x{site.address:x}"])
    if status != 0:
        return {"*": parse_failure(err).message}
    found = {}
    for line in out.splitlines():
        declaration, at, location = line.partition("  @ ")
        if at and declaration.startswith("  "):
            found.setdefault(declaration.split()[-1], location.strip())
    return found
