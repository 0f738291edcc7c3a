"""A C-level exit() while the compiler's stderr is captured (clang's fatal
diagnostics end the process from inside BCC) still shows the user what was
captured, as a gs-cgen error, with the exit status the C code chose."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.live.conftest import REPO

_EXITS_WHILE_CAPTURED = textwrap.dedent("""
    import ctypes, io, os
    from gs_cgen.runtime.session import _stderr_to
    with _stderr_to(io.StringIO(), report_if_exited=True):
        os.write(2, b"error: in function gs_probe_0: Looks like the BPF stack limit "
                    b"of 512 bytes is exceeded.\\n")
        ctypes.CDLL(None).exit(1)
""")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=30)


def test_exit_inside_the_compiler_prints_what_it_said():
    result = _run(_EXITS_WHILE_CAPTURED)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: BPF compilation failed: clang stopped gs-cgen with a fatal error in the "
        "generated C (no probe was attached)",
        "hint: error: in function gs_probe_0: Looks like the BPF stack limit of 512 bytes "
        "is exceeded."]


def test_an_exit_after_the_capture_ended_prints_nothing_of_it():
    result = _run(_EXITS_WHILE_CAPTURED.replace("    ctypes.CDLL(None).exit(1)\n", "")
                  + "ctypes.CDLL(None).exit(3)\n")
    assert result.returncode == 3
    assert result.stderr == ""


def test_the_captured_text_still_reaches_the_caller_when_nothing_exits():
    result = _run(textwrap.dedent("""
        import io, os
        from gs_cgen.runtime.session import _stderr_to
        buffer = io.StringIO()
        with _stderr_to(buffer, report_if_exited=True):
            os.write(2, b"warning: something\\n")
        print(repr(buffer.getvalue()))
    """))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "'warning: something\\n'\n"
    assert result.stderr == ""
