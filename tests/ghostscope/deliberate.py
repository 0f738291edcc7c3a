"""Known deliberate differences between gs-cgen and GhostScope, and how a
failing GhostScope e2e test is matched to one.

Only differences documented in README.md ("Where gs-cgen deliberately
differs from GhostScope") are here; docs/ghostscope-reference.md points to
the same list. A failure is DELIBERATE only when every failed check of the
test is explained by one of them, with the evidence found in gs-cgen's own
output; anything else stays FAIL.
"""
from __future__ import annotations

import re

# id -> (README wording, short reason)
DIFFERENCES = {
    "error-value": (
        "A read that fails inside `print` makes that value, and every comparison, arithmetic or "
        "builtin built on it, `<error: REASON>`; GhostScope prints `false` for such a comparison "
        "and `0` for such arithmetic.",
        "a failed read inside print is <error: ...> in gs-cgen, false/0 in GhostScope"),
    "hex-no-length": (
        "`{:x}` / `{:X}` without a length print the value as one hexadecimal number; GhostScope "
        "prints the captured bytes.",
        "{:x}/{:X} without a length print one hexadecimal number in gs-cgen, the bytes in GhostScope"),
    "string-var": (
        "a script string variable prints like a C string",
        "a script string variable prints as a quoted C string in gs-cgen"),
    "enum-constant": (
        "an enumeration constant is a name, as in C and gdb",
        "an enumeration constant is a name in gs-cgen"),
    "memcmp-string": (
        "`memcmp` also takes a script string or a string literal on one side",
        "memcmp takes a script string or a string literal in gs-cgen"),
    "pc-sp": (
        "`$pc` and `$sp` exist",
        "$pc and $sp exist in gs-cgen"),
    "or-struct": (
        "`1 || STRUCT` is a type error although the right side would not be evaluated, as in C "
        "and gdb (GhostScope accepts it).",
        "`1 || STRUCT` (and `0 && STRUCT`) is a type error in gs-cgen, as in C; GhostScope accepts it"),
}

# FILE::TEST -> reason, for tests that cannot apply to gs-cgen at all.
NOT_APPLICABLE: dict[str, str] = {
    "globals_target_execution.rs::test_t_mode_library_late_start_without_sysmon_offsets_unavailable":
        "GhostScope with its process monitor off (enable_sysmon_for_target = false) cannot learn a late "
        "library's offsets; gs-cgen has no such mode (it resolves them), so the expected ExprError cannot occur",
    "script_execution.rs::test_stripped_binary_with_explicit_debug_file":
        "GhostScope's --debug-file option; gs-cgen has none (it finds .gnu_debuglink / build-id files itself)",
    "script_execution.rs::test_explicit_debug_file_rejects_mismatch":
        "GhostScope's --debug-file option; gs-cgen has none",
    "script_execution.rs::test_invalid_pid_handling":
        "GhostScope's own diagnostics for a PID that does not exist (the harness attaches to a live fixture)",
}


def _squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _error_value(needle: str, stdout: str) -> bool:
    """`EXPR = false` / `SW:false AFTER` / `X=0` expected; gs-cgen printed
    `<error: ...>` in the place of that value (on one line)."""
    for m in re.finditer(r"(?<![\w.])(false|true|-?\d+)(?![\w.])", needle):
        pre, post = _squash(needle[:m.start()]), _squash(needle[m.end():])
        if not pre and not post:
            continue
        pattern = re.escape(pre) + r"<error:[^>]*>" + re.escape(post)
        if any(re.search(pattern, _squash(line)) for line in stdout.splitlines()):
            return True
    return False


def _hex_no_length(needle: str, script: str, stdout: str) -> bool:
    """The needle comes from a print whose format has `{:x}` / `{:X}` (no length)."""
    for fmt in re.findall(r'print\s+"((?:\\.|[^"\\])*)"', script):
        if not re.search(r"\{:[xX]\}", fmt):
            continue
        literal = re.split(r"\{", fmt)[0]
        if literal and needle.startswith(literal[:max(1, len(literal))]) and literal in stdout:
            return True
    return False


def _string_var(needle: str, script: str, stdout: str) -> bool:
    for name, value in re.findall(r'let\s+(\w+)\s*=\s*"((?:\\.|[^"\\])*)"', script):
        if _squash(needle) in (_squash(f"{name} = {value}"), _squash(f"{name}={value}")) and \
                _squash(f'{name} = "{value}"') in _squash(stdout):
            return True
    return False


def explain(failure: dict, run: dict) -> str | None:
    """The difference id that explains one failed check, if any."""
    script = run.get("script") or ""
    stdout = run.get("stdout") or ""
    stderr = run.get("stderr") or ""
    missing = failure.get("missing") or []
    if missing:
        ids = set()
        for needle in missing:
            if not isinstance(needle, str):
                return None
            if _error_value(needle, stdout):
                ids.add("error-value")
            elif _hex_no_length(needle, script, stdout):
                ids.add("hex-no-length")
            elif _string_var(needle, script, stdout):
                ids.add("string-var")
            else:
                return None
        return ",".join(sorted(ids))
    check = failure.get("check", "")
    got = failure.get("got", "")
    if check == "exit == 0" and got != "exit 0":
        # `1 || *p_struct`: gs-cgen's type error names the unevaluated operand
        m = re.search(r"error: '([^']+)' of type '[^']*' is not a number or pointer", stderr)
        if m and re.search(r"(\|\||&&)\s*\(?\s*" + re.escape(m.group(1)), script):
            return "or-struct"
    if check.startswith("exit != ") and got == "exit 0":
        string_vars = re.findall(r'let\s+(\w+)\s*=\s*"', script)
        for args in re.findall(r"memcmp\s*\(([^;]*)\)", script):
            if '"' in args.split("hex(")[0] or any(re.search(rf"\b{v}\b", args) for v in string_vars):
                return "memcmp-string"
        if re.search(r"\$(pc|sp)\b", script):
            return "pc-sp"
    return None


RUN_LEVEL = {"or-struct", "memcmp-string", "pc-sp", "enum-constant"}


def classify(case) -> str | None:
    """A reason when every failure of the case is a documented difference.

    A difference that decides a run's exit status (the script is refused)
    explains every other failed check on that run's output too."""
    runs = {(r["line"], r.get("level")): r for r in case.runs}
    ids = set()
    whole_run = set()
    explained = {}
    for k, f in enumerate(case.failures):
        key = (f.get("run_line"), f.get("level"))
        run = runs.get(key)
        if run is None:
            return None
        why = explain(f, run)
        explained[k] = why
        if why and set(why.split(",")) & RUN_LEVEL:
            whole_run.add(key)
    for k, f in enumerate(case.failures):
        why = explained[k]
        if not why and (f.get("run_line"), f.get("level")) in whole_run:
            continue
        if not why:
            return None
        ids.update(why.split(","))
    if not ids:
        return None
    return "; ".join(DIFFERENCES[i][1] for i in sorted(ids))
