"""One environment for both tools, so that their runs of a program are
the same run: the same argv (absolute program path, which is also the
AT_EXECFN string on the stack), the same environment strings in the same
order, no ASLR, stdin from /dev/null. Then stack, heap and library
addresses are equal in both, and so are pointer values.

- gdb disables ASLR itself (`set disable-randomization on`) and adds LINES
  and COLUMNS to the program's environment, which gdb_script.py unsets;
  `startup-with-shell off` makes gdb exec the program directly, as gs-cgen does.
- gs-cgen runs under `setarch -R`: its launch mode starts the command as
  its own child, and the personality (ADDR_NO_RANDOMIZE) is inherited
  across fork and exec. The command inherits gs-cgen's environment, so
  gs-cgen itself gets exactly the program's environment.

Every site also records the stack pointer in both tools ($sp); a site
where they differ is not compared (the runs diverged there)."""
from __future__ import annotations

import os

# PYTHONHASHSEED: the libpython workload's hashes (and so its dicts) are
# the same in every run. HOME: gs-cgen's DWARF cache and gdb's index cache.
TARGET_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": os.environ.get("HOME", "/root"),
    "LC_ALL": "C",
    "PYTHONHASHSEED": "0",
}


def without_aslr(argv: list[str]) -> list[str]:
    return ["setarch", "x86_64", "-R", *argv]
