"""Command line: the only place that prints errors and chooses exit codes.

Exit status: 0 normal end, 1 user error (GsError), 2 bad usage (click).
"""
from __future__ import annotations

import os
import sys

from gs_cgen import gcpolicy

gcpolicy.start_up()     # before the imports: see gcpolicy

import click  # noqa: E402

from gs_cgen.errors import GsError  # noqa: E402
from gs_cgen.lazydataclass import dataclass  # noqa: E402

EXIT_USER_ERROR = 1


class _ScriptSource:
    """The script text and the name errors use for it."""

    def __init__(self, text: str, name: str) -> None:
        self.text, self.name = text, name


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from gs_cgen.versions import version_report  # noqa: PLC0415
    click.echo(version_report())
    ctx.exit(0)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Print the versions of gs-cgen and its dependencies.")
def cli() -> None:
    """gs-cgen: trace a live process at a function or source line and print
    its variables, typed and read from DWARF, through eBPF uprobes."""


@dataclass(frozen=True)
class TraceRequest:
    """What `gs-cgen trace` was asked to do, as typed on the command line."""

    pid: int | None
    target_path: str | None
    command: tuple[str, ...]
    output: str | None
    max_events: int | None
    duration: float | None
    dry_run: bool
    emit_c: bool
    event_map: str
    mem_dump_cap: int
    backtrace_depth: int
    backtrace_stack: int
    max_elements: int = 200
    stats: bool = False
    interval: float | None = None
    metrics: tuple[str, int] | None = None


class _MetricsAddress(click.ParamType):
    """--metrics [HOST:]PORT, host 127.0.0.1 by default; an IPv6 host in
    brackets ([::1]:9100). Port 0: one the kernel picks (stderr says which)."""

    name = "[HOST:]PORT"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        host, _, port = value.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not port.isdigit() or int(port) > 65535 or (":" in host and "[" not in value):
            self.fail(f"{value!r} is not [HOST:]PORT (e.g. 9100, 0.0.0.0:9100, [::1]:9100)",
                      param, ctx)
        return host or "127.0.0.1", int(port)


@cli.command(context_settings={"ignore_unknown_options": False})
@click.option("-p", "--pid", type=int, help="A running process.")
@click.option("-t", "--target", "target_path", type=str, help="An executable or shared library.")
@click.option("-s", "--script", "script_text", help="Trace script text.")
# A plain string: a missing, unreadable or directory script file is a user
# error (exit 1, CONTRACT.md), not bad usage as click.Path would make it.
@click.option("-f", "--script-file", type=str, help="Trace script file.")
@click.option("--output", type=click.Choice(["plain", "pretty", "json"]), default=None,
              help="Default: pretty on a TTY, plain otherwise.")
@click.option("--max-events", type=click.IntRange(min=1), help="Exit after N events.")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), help="Exit after SECONDS.")
@click.option("--dry-run", is_flag=True, help="Resolve, compile and verifier-load; attach nothing.")
@click.option("--emit-c", is_flag=True, help="Print the generated C and exit (no root needed).")
@click.option("--event-map", type=click.Choice(["ringbuf", "perf"]), default="ringbuf",
              show_default=True, help="How events reach gs-cgen: the BPF ring buffer or "
              "per-CPU perf event arrays.")
@click.option("--mem-dump-cap", type=click.IntRange(min=1), default=256, show_default=True,
              help="Bytes a string or memory dump reads at most.")
@click.option("--backtrace-depth", type=click.IntRange(1, 128), default=64, show_default=True,
              help="Frames a `bt` shows at most.")
@click.option("--backtrace-stack", type=click.IntRange(min=512), default=16384, show_default=True,
              help="Bytes of stack a `bt` copies from sp for the unwinder.")
@click.option("--max-elements", type=click.IntRange(min=1), default=200, show_default=True,
              help="Elements of each collection (bytes of each string) a value shows.")
@click.option("--stats", is_flag=True,
              help="Per-probe cost on stderr at exit (and every --interval): hits, "
                   "average ns per hit, events sent and lost.")
@click.option("--interval", type=click.FloatRange(min=0, min_open=True),
              help="Print aggregations (and --stats) every SECONDS, not only at exit.")
@click.option("--metrics", type=_MetricsAddress(),
              help="Serve the aggregations and per-probe statistics to Prometheus at "
                   "http://HOST:PORT/metrics while tracing (HOST default 127.0.0.1).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def trace(script_text, script_file, **options) -> None:
    """Attach a trace script to a process, a binary, or a command to launch."""
    request = TraceRequest(**options)
    _check_usage(request, script_text, script_file)
    script = _read_script(script_text, script_file)
    try:
        status = _run_trace(script, request)
    except GsError as exc:
        _fail(exc, script)
    sys.exit(status)


def _check_usage(request: TraceRequest, script_text, script_file) -> None:
    if (script_text is None) == (script_file is None):
        raise click.UsageError("give exactly one of -s/--script and -f/--script-file")
    if request.command and request.pid is not None:
        raise click.UsageError("'-- COMMAND' cannot be combined with -p")
    if not request.command and request.pid is None and not request.target_path:
        raise click.UsageError("name a target: -p PID, -t PATH, or -- COMMAND [ARGS...]")


def _read_script(script_text: str | None, script_file: str | None) -> _ScriptSource:
    if script_text is not None:
        return _ScriptSource(script_text, "<script>")
    try:
        with open(script_file, encoding="utf-8") as f:
            return _ScriptSource(f.read(), script_file)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        _fail(GsError(f"cannot read script file {script_file}: {reason}"), None)


def _run_trace(script: _ScriptSource, request: TraceRequest) -> int:
    from gs_cgen.runtime.launch import launch_held  # noqa: PLC0415 — keep --help fast
    launched = launch_held(list(request.command)) if request.command else None
    try:
        compiled, process = _compile_held(script, request, launched) if launched \
            else _compile(script, request, None)
        if request.emit_c:
            click.echo(compiled.c_text, nl=False)
            return 0
        from gs_cgen.tracer import TraceOptions, run_trace  # noqa: PLC0415
        style = request.output or ("pretty" if sys.stdout.isatty() else "plain")
        options = TraceOptions(style, request.max_events, request.duration, request.dry_run,
                               pid=process.pid if process else None,
                               stop_when_gone=None if launched else request.pid,
                               stats=request.stats, interval=request.interval,
                               metrics=request.metrics)
        return run_trace(compiled, options, _diagnostic, launched)
    finally:
        if launched is not None and not launched.released:
            launched.abandon()


def _compile_held(script: _ScriptSource, request: TraceRequest, launched):
    """`-- COMMAND`. A command that is a script (a pyenv shim, a wrapper)
    is first its interpreter: while the patterns do not resolve there, and
    the held program is one running a script, follow it to its next exec
    (gdb re-sets pending breakpoints at each exec the same way)."""
    from gs_cgen.errors import DebugInfoError, PlanError  # noqa: PLC0415
    followed = False
    while True:
        try:
            return _compile(script, request, launched)
        except (DebugInfoError, PlanError):
            if not launched.runs_script():
                raise
            if not followed:
                _diagnostic(f"{launched.argv[0]} is a script: following it to the program "
                            "it runs, held at each exec")
                followed = True
            if not launched.follow_exec():
                _diagnostic(f"command {launched.exit_description()} before the patterns "
                            "resolved")
                raise


def _compile(script: _ScriptSource, request: TraceRequest, launched):
    """The compiled program and the process it is for (None with -t alone)."""
    from gs_cgen.pipeline import compile_script  # noqa: PLC0415
    from gs_cgen.plan.build import PlanOptions  # noqa: PLC0415
    from gs_cgen.plan.model import EventTransport  # noqa: PLC0415
    from gs_cgen.runtime import target as proc  # noqa: PLC0415
    from gs_cgen.runtime.btf import pending_returns, thread_pointer  # noqa: PLC0415
    from gs_cgen.runtime.uprobe_links import links_refusal  # noqa: PLC0415
    pid = launched.pid if launched else request.pid
    process = proc.open_process(pid) if pid is not None else None
    options = PlanOptions(script_name=script.name, pid_namespace=proc.pid_namespaces(process),
                          transport=EventTransport(request.event_map), input_pid=request.pid,
                          mem_dump_cap=request.mem_dump_cap, watch_exec=process is None,
                          backtrace_depth=request.backtrace_depth,
                          backtrace_stack=request.backtrace_stack,
                          max_elements=request.max_elements,
                          thread_pointer=thread_pointer(), pending_returns=pending_returns(),
                          # --stats and --metrics time each probe by its own
                          # program's run time.
                          shared_programs=not request.stats and request.metrics is None
                          and not links_refusal())
    modules = _module_set(process, request.target_path, launched)
    compiled = compile_script(script.text, modules, options)
    _plan_notes(compiled.plan)
    return compiled, process


def _plan_notes(plan) -> None:
    """What the planner decided for the user that they should know (e.g.
    `print $locals;` bounded to fit an event), once each, on stderr."""
    for note in dict.fromkeys(note for probe in plan.probes for note in probe.notes):
        _diagnostic(note)


def _held_libraries(process) -> tuple[str, ...]:
    """A command held right after execve maps only itself and ld.so; the
    libraries ld.so will load come from its library closure (paths of ours:
    we started it). One that cannot be found is a note: the command still runs."""
    from gs_cgen.errors import DebugInfoError  # noqa: PLC0415
    from gs_cgen.runtime import libraries  # noqa: PLC0415
    try:
        closure = libraries.library_closure(process.exe_path,
                                            libraries.process_loader_environment(process.pid))
    except (DebugInfoError, OSError) as exc:
        _diagnostic(f"note: cannot work out the libraries {process.exe_path} will load: {exc}")
        return ()
    for missing in closure.missing:
        _diagnostic(f"note: {missing.describe()}")
    return closure.libraries


def _target_libraries(target_path: str) -> tuple[str, ...]:
    """With -t alone no process says what else is mapped; every process
    running the file maps its library closure, as ld.so finds it from here
    (so globals of those libraries resolve, as with -p). A file whose
    closure cannot be worked out contributes nothing."""
    from gs_cgen.errors import DebugInfoError  # noqa: PLC0415
    from gs_cgen.runtime import libraries  # noqa: PLC0415
    try:
        env = libraries.loader_environment(dict(os.environ), os.getcwd())
        return libraries.library_closure(target_path, env).libraries
    except (DebugInfoError, OSError):
        return ()


def _module_set(process, target_path, launched=None, globals_elsewhere: bool = True):
    """-t names the module (functions and lines resolve there only); else
    they resolve in the executable, then in the libraries it maps (or, held,
    will load: in load order, as ld.so searches them, then what else is
    mapped). Every mapped file is opened through the process's own view.
    With -t alone, the file's library closure is worked out only when
    `globals_elsewhere`: globals are all it is looked in for."""
    from gs_cgen.plan.modules import ModuleSet  # noqa: PLC0415
    from gs_cgen.runtime import target as proc  # noqa: PLC0415
    from gs_cgen.runtime.ifunc import GotReader  # noqa: PLC0415
    reader = GotReader(process)        # which implementation a GNU IFUNC runs
    files = proc.module_files(process) if process else []
    if launched:
        closure = _held_libraries(process)
    else:
        closure = _target_libraries(target_path) if process is None and globals_elsewhere else ()
    default = proc.target_file(target_path, process) if target_path else files[0]
    return ModuleSet.over(default, files, closure, restrict_to_default=bool(target_path),
                          ifunc_reader=reader, default_named=target_path)


@cli.command()
@click.option("-p", "--pid", type=int, help="A running process.")
@click.option("-t", "--target", "target_path", type=str, help="An executable or shared library.")
@click.argument("kind", type=click.Choice(["function", "line", "address"]))
@click.argument("what")
@click.option("--lines", "by_line", is_flag=True,
              help="function only: which variables are readable at each source line, and how.")
@click.option("--output", type=click.Choice(["plain", "json"]), default="plain",
              show_default=True)
def info(pid, target_path, kind, what, by_line, output) -> None:
    """List probe sites and the variables visible at each."""
    if pid is None and target_path is None:
        raise click.UsageError("give -p PID or -t PATH")
    if by_line and kind != "function":
        raise click.UsageError("--lines goes with 'function NAME' only")
    from gs_cgen import info as info_mod  # noqa: PLC0415
    from gs_cgen.runtime import target as proc  # noqa: PLC0415
    try:
        process = proc.open_process(pid) if pid is not None else None
        # info lists parameters and locals: no global is looked up elsewhere.
        modules = _module_set(process, target_path, globals_elsewhere=False)
        click.echo(_info_text(info_mod, modules, kind, what, by_line, output))
    except GsError as exc:
        exc.span = None          # the pattern came from the command line, not a script
        _fail(exc, None)


def _info_text(info_mod, modules, kind: str, what: str, by_line: bool, output: str) -> str:
    if by_line:
        found = info_mod.describe_lines(modules, what, output == "json")
        return _json(found) if output == "json" else found
    if output == "json":
        return _json(info_mod.describe_data(modules, kind, what))
    return info_mod.describe(modules, kind, what)


def _json(value) -> str:
    import json  # noqa: PLC0415 - plain output, the common case, does without it
    return json.dumps(value)


def _diagnostic(message: str) -> None:
    click.echo(f"gs-cgen: {message}", err=True)


def _fail(exc: GsError, script: _ScriptSource | None):
    name, text = (script.name, script.text) if script else ("<script>", "")
    click.echo(exc.render(name, text), err=True)
    sys.exit(EXIT_USER_ERROR)


def main() -> None:
    try:
        cli.main(prog_name="gs-cgen")
    except KeyboardInterrupt:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 — a bug of ours: say so, keep the cause
        if os.environ.get("GS_CGEN_DEBUG"):
            raise
        click.echo(f"gs-cgen: internal error: {type(exc).__name__}: {exc} "
                   "(set GS_CGEN_DEBUG=1 for a traceback; probes were removed)", err=True)
        sys.exit(EXIT_USER_ERROR)
    finally:
        gcpolicy.finish()


if __name__ == "__main__":
    main()
