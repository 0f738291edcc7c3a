"""Known deliberate differences between gs-cgen and GhostScope, and how a
failing GhostScope e2e test is matched to one.

Only differences documented in docs/ghostscope-reference.md ("Where
gs-cgen deliberately differs from GhostScope") are here. A failure is DELIBERATE only when every failed check of the
test is explained by one of them, with the evidence found in gs-cgen's own
output; anything else stays FAIL.
"""
from __future__ import annotations

import re

# id -> (wording of docs/ghostscope-reference.md, short reason)
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
    "bt-header": (
        "`bt` heads its frames with `backtrace: <status>, N frames` and the statuses of CONTRACT.md "
        "(`complete`, `depth limit`, ...); GhostScope writes `truncated, N frames (max D)`.",
        "bt's header is `backtrace: <status>, N frames` in gs-cgen, `... (max D)` in GhostScope"),
    "bt-past-main": (
        "`bt` ends at `main`, as gdb's `bt` does; GhostScope goes on into libc's start-up frames.",
        "bt ends at main in gs-cgen, as in gdb; GhostScope continues into libc"),
    "bt-full": (
        "`bt full` prints each frame's parameters as `name = VALUE` lines under the frame; GhostScope "
        "prints the frame's signature (`f(int x)`) without values.",
        "bt full prints parameter values under each frame in gs-cgen, the signature in GhostScope"),
    "bt-raw": (
        "`bt raw` prints the addresses only; GhostScope adds `raw=0x...` and `cookie=0x...`.",
        "bt raw prints addresses only in gs-cgen; GhostScope adds raw=/cookie="),
    "c-type-name": (
        "a pointer's type is its C type as the program spells it (`(struct Complex*)`); GhostScope "
        "drops the `struct` (`(Complex*)`).",
        "pointer types are C spellings in gs-cgen (`struct Complex*`)"),
    "expr-label": (
        "`print EXPR;` labels the value with the expression as written (`a.status == 0 = true`); "
        "GhostScope prints its own parenthesised form (`(a.status==0) = true`).",
        "`print EXPR;` is labelled with the expression as written in gs-cgen"),
    "float-g": (
        "floats print as C's `%g` (`123456`, `nan`, CONTRACT.md); GhostScope prints the shortest "
        "round-trip form (`123456.25`, `NaN`).",
        "floats are %g in gs-cgen"),
    "long-double": (
        "`long double` values are read and printed (`-3.5`); GhostScope prints "
        "`<UNSUPPORTED_FLOAT_SIZE_16>`.",
        "long double is read in gs-cgen"),
    "enum-value": (
        "an enum value prints `Type::NAME` (CONTRACT.md); GhostScope adds the number and, through a "
        "typedef, the typedef's name (`T(T::NAME(-3))`).",
        "an enum value is `Type::NAME` in gs-cgen"),
    "optimized-out": (
        "an optimized-out value prints `<OPTIMIZED_OUT>` (CONTRACT.md); GhostScope prints "
        "`<optimized out>`.",
        "optimized-out values print <OPTIMIZED_OUT> in gs-cgen"),
    "simd-value": (
        "a value that lives in a SIMD register (which uprobes cannot read) is that value's "
        "`<error: unsupported: value in SIMD register xmmN ...>` and the rest of the script runs; "
        "GhostScope refuses the whole script.",
        "a value in a SIMD register is an error value in gs-cgen; GhostScope refuses the script"),
    "inline-site-optimized-out": (
        "a function that was inlined is probed where gdb's `break FUNC` stops in each inlined copy; "
        "a parameter whose location list has no entry at that PC is `<OPTIMIZED_OUT>` there, as gdb "
        "prints it, and a condition built on it is an ExprError. GhostScope probes the copy's entry PC "
        "and reads zero-length (location-view) entries there.",
        "an inlined copy is probed at gdb's address, where gdb too finds the parameter optimized out"),
    "address-arith": (
        "`&x + n` is C pointer arithmetic, scaled by the size of `x` (CONTRACT.md); GhostScope "
        "adds `n` bytes.",
        "`&x + n` is scaled by sizeof x in gs-cgen, bytes in GhostScope"),
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


BT_HEADER = re.compile(r"(?m)^backtrace: (complete|depth limit|stack copy exhausted|no unwind info for "
                       r"0x[0-9a-f]+|unreadable), \d+ frames?$")


def _bt_header(needle: str, stdout: str) -> bool:
    return bool(re.search(r"\(max \d+\)|backtrace: truncated", needle)) and bool(BT_HEADER.search(stdout))


def _bt_past_main(needle: str, stdout: str) -> bool:
    """A frame past `main` expected (`#5 `, `libc.so.6+`); ours end at main."""
    if not (re.fullmatch(r"#\d+ ", needle) or "libc.so" in needle or "__libc_start" in needle):
        return False
    lines = stdout.splitlines()
    ends = [k for k, line in enumerate(lines) if re.match(r"\s+#\d+ main at ", line)]
    return bool(ends) and all(k + 1 >= len(lines) or not re.match(r"\s+#\d+ ", lines[k + 1]) or
                              re.match(r"\s+#0 ", lines[k + 1]) for k in ends)


def _bt_full(needle: str, script: str, stdout: str) -> bool:
    m = re.fullmatch(r"#(\d+) (\w+)\(.*\)", needle)
    return bool(m) and "bt full" in script and \
        re.search(rf"(?m)^\s+#{m.group(1)} {m.group(2)} at .*\n\s+\w+ = ", stdout) is not None


def _bt_raw(needle: str, script: str, stdout: str) -> bool:
    return needle.strip() in ("raw=0x", "cookie=0x") and re.search(r"\bbt raw\b", script) is not None \
        and re.search(r"(?m)^\s+#\d+ 0x[0-9a-f]+", stdout) is not None


def _c_type_name(needle: str, stdout: str) -> bool:
    m = re.search(r"\((\w+)\*+\)", needle)
    return bool(m) and re.search(rf"\((struct|union|enum) {m.group(1)}\*+\)", stdout) is not None


def _expr_label(needle: str, script: str, stdout: str) -> bool:
    m = re.fullmatch(r"\((.+)\) = (true|false|-?\d+)", needle)
    if not m:
        return False
    for expr in re.findall(r"(?m)^\s*print\s+([^\"\s][^;]*);", script):
        if _squash(expr) == _squash(m.group(1)):
            return re.search(rf"(?m)^{re.escape(expr.strip())} = ", stdout) is not None
    return False


def _numbers(text: str) -> list[str]:
    return re.findall(r"-?(?:\d+\.\d+|\d+|inf|NaN)", text)


def _float_g(needle: str, stdout: str) -> bool:
    """The needle with each decimal written as %g is in our output."""
    def g(m):
        word = m.group(0)
        return "nan" if word == "NaN" else "%g" % float(word)
    if not re.search(r"\d\.\d|NaN", needle):
        return False
    want = re.sub(r"-?\d+\.\d+|NaN", g, needle)
    return want != needle and want in stdout


def _long_double(needle: str, stdout: str) -> bool:
    m = re.fullmatch(r"(.*)<UNSUPPORTED_FLOAT_SIZE_16>", needle)
    return bool(m) and re.search(re.escape(m.group(1)) + r"-?[\d.e+-]+\b", stdout) is not None


def _enum_value(needle: str, stdout: str) -> bool:
    """`T(T::NAME(N))` / `T::NAME(N)` expected; ours `T::NAME` in the same place."""
    ours = re.sub(r"\b(\w+)\((\w+::\w+)\(-?\d+\)\)", r"\2", needle)
    ours = re.sub(r"\b(\w+::\w+)\(-?\d+\)", r"\1", ours)
    return ours != needle and ours in stdout


def _optimized_out(needle: str, stdout: str) -> bool:
    return needle in ("<optimized out>", "<optimized_out>") and "<OPTIMIZED_OUT>" in stdout


def _simd_value(stdout: str) -> bool:
    return "<error: unsupported: value in SIMD register" in stdout


def _statement_of(needle: str, script: str) -> str | None:
    """The script line that prints the needle's label."""
    for line in script.splitlines():
        for fmt in re.findall(r'print\s+"((?:\\.|[^"\\])*)"', line):
            label = fmt.split("{")[0]
            if label and needle.startswith(label):
                return line
    return None


def _address_arith(needle: str, script: str) -> bool:
    """The needle comes from a statement that uses `&x +/- n`, directly or
    through script variables bound to one."""
    stmt = _statement_of(needle, script)
    if stmt is None:
        return False
    addr = re.compile(r"&[\w.\[\]]+\s*[-+]")
    names = set()
    for name, rhs in re.findall(r"let\s+(\w+)\s*=\s*([^;]*);", script):
        if addr.search(rhs) or any(re.search(rf"\b{n}\b", rhs) for n in names):
            names.add(name)
    return bool(addr.search(stmt)) or any(re.search(rf"\b{n}\b", stmt) for n in names)


OPTIMIZED_OUT_ERROR = re.compile(r"^ExprError: (.*) \(([\w, ]+) optimized out at this PC\)$")


def _inline_site_optimized_out(needle: str, script: str, stdout: str) -> bool:
    """Every ExprError in stdout is an optimized-out parameter, and the needle
    is either `ExprError` itself or printed by an `if` whose condition is one
    of those ExprErrors."""
    errors = [line for line in stdout.splitlines() if line.startswith("ExprError: ")]
    if not errors or not all(OPTIMIZED_OUT_ERROR.match(line) for line in errors):
        return False
    if needle == "ExprError":
        return True
    failed = {_squash(m.group(1)) for m in map(OPTIMIZED_OUT_ERROR.match, errors)}
    for cond, body in re.findall(r"if\s+(.+?)\s*\{([^{}]*)\}", script):
        if any(needle.startswith(text) for text in re.findall(r'print\s+"([^"{]+)', body)):
            return _squash(cond) in failed
    return False


def _missing_needle(needle: str, script: str, stdout: str) -> str | None:
    """The difference that explains one missing expected text, if any."""
    if _error_value(needle, stdout):
        return "error-value"
    if _hex_no_length(needle, script, stdout):
        return "hex-no-length"
    if _string_var(needle, script, stdout):
        return "string-var"
    checks = [("bt-header", _bt_header(needle, stdout)),
              ("bt-past-main", _bt_past_main(needle, stdout)),
              ("bt-full", _bt_full(needle, script, stdout)),
              ("bt-raw", _bt_raw(needle, script, stdout)),
              ("c-type-name", _c_type_name(needle, stdout)),
              ("expr-label", _expr_label(needle, script, stdout)),
              ("float-g", _float_g(needle, stdout)),
              ("long-double", _long_double(needle, stdout)),
              ("enum-value", _enum_value(needle, stdout)),
              ("optimized-out", _optimized_out(needle, stdout)),
              ("address-arith", _address_arith(needle, script)),
              ("inline-site-optimized-out", _inline_site_optimized_out(needle, script, stdout))]
    return next((name for name, ok in checks if ok), None)


def explain(failure: dict, run: dict) -> str | None:
    """The difference id that explains one failed check, if any."""
    script = run.get("script") or ""
    stdout = run.get("stdout") or ""
    stderr = run.get("stderr") or ""
    missing = failure.get("missing") or []
    if missing:
        ids = set()
        for needle in missing:
            why = _missing_needle(needle, script, stdout) if isinstance(needle, str) else None
            if why is None:
                return None
            ids.add(why)
        return ",".join(sorted(ids))
    check = failure.get("check", "")
    got = failure.get("got", "")
    if check == "exit == 0" and got != "exit 0":
        # `1 || *p_struct`: gs-cgen's type error names the unevaluated operand
        m = re.search(r"error: '([^']+)' of type '[^']*' is not a number or pointer", stderr)
        if m and re.search(r"(\|\||&&)\s*\(?\s*" + re.escape(m.group(1)), script):
            return "or-struct"
    refused = check.startswith("exit != ") or re.match(r"\w+ != 0\b", check)
    if refused and run.get("exit") == 0 and _simd_value(stdout):
        return "simd-value"
    if refused and run.get("exit") == 0:
        string_vars = re.findall(r'let\s+(\w+)\s*=\s*"', script)
        for args in re.findall(r"memcmp\s*\(([^;]*)\)", script):
            if '"' in args.split("hex(")[0] or any(re.search(rf"\b{v}\b", args) for v in string_vars):
                return "memcmp-string"
        if re.search(r"\$(pc|sp)\b", script):
            return "pc-sp"
    return None


RUN_LEVEL = {"or-struct", "memcmp-string", "pc-sp", "enum-constant", "simd-value"}


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
