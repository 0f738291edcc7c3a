"""Run a target under gdb (gdb_script.py) and read what gdb saw at the
first hit of each site. Each target runs twice: a value that differs
between two gdb runs depends on something other than the program (stack
garbage from the loader, a random canary) and is not compared."""
from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fidelity.corpus import Target, entry_point
from fidelity.environment import TARGET_ENVIRONMENT

SCRIPT = Path(__file__).resolve().parent / "gdb_script.py"
STRING_CAP = 300                 # bytes of a C string gdb reads (compare.py compares fewer)


@dataclass
class GdbRun:
    hits: dict[str, dict]        # site key -> its first hit (gdb_script.py "hits")
    bases: dict[str, int]        # module path -> load address
    exit_code: int | None
    last_stop: str


def record(target: Target, timeout: float = 600) -> GdbRun:
    with tempfile.TemporaryDirectory(prefix="fidelity-gdb-") as scratch:
        request, result = Path(scratch) / "request.json", Path(scratch) / "result.json"
        request.write_text(json.dumps({
            "result": str(result), "entry": entry_point(target.argv[0]),
            "string_cap": STRING_CAP, "language": "rust" if target.raw_layout else "c",
            "sites": [{"id": s.key, "module": s.module, "address": s.address,
                       "function": s.pattern if s.by_function else None,
                       "globals": list(s.globals)} for s in target.sites]}))
        # The request's path is set as a C string: in a Rust program's
        # language a string literal needs a live target.
        command = ["gdb", "-batch", "-nx", "-ex", "set language c",
                   "-ex", f'set $fidelity_request = "{request}"', "-ex", "set language auto",
                   "-x", str(SCRIPT), "--args", *target.argv]
        done = subprocess.run(command, env=TARGET_ENVIRONMENT, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        if not result.exists():
            raise RuntimeError(f"gdb recorded nothing for {target.label} "
                               f"(exit {done.returncode}):\n{done.stderr[-2000:]}")
        data = json.loads(result.read_text())
    return GdbRun({hit["id"]: hit for hit in data["hits"]}, data["bases"], data["exit_code"],
                  data["last_stop"])


def unstable_values(first: GdbRun, second: GdbRun) -> dict[str, set[str]]:
    """Per site, the variables whose raw value differs between two gdb
    runs; a site hit in one run only, or at another stack pointer, has
    every variable unstable ("*")."""
    unstable: dict[str, set[str]] = {}
    for site in set(first.hits) | set(second.hits):
        a, b = first.hits.get(site), second.hits.get(site)
        if a is None or b is None or a["sp"] != b["sp"]:
            unstable[site] = {"*"}
            continue
        values_b = {v["name"]: v["raw"] for v in b.get("variables", [])}
        differing = {v["name"] for v in a.get("variables", []) if values_b.get(v["name"]) != v["raw"]}
        if differing:
            unstable[site] = differing
    return unstable
