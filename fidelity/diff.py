"""`python -m fidelity.diff OLD.json NEW.json`: what changed between two
fidelity reports, value by value (same program, level, site and name):
how many values moved from one verdict to another, and every value that
became a MISMATCH or TRACER_ONLY."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from fidelity.compare import MISMATCH, TRACER_ONLY

Key = tuple[str, str, str, str]


def values_of(path: Path) -> dict[Key, dict]:
    report = json.loads(path.read_text())
    return {(v["program"], v["level"], v["site"], v["name"]): v
            for target in report["targets"] for v in target["values"]}


def diff(old: dict[Key, dict], new: dict[Key, dict]) -> str:
    moves = Counter((old[k]["verdict"] if k in old else "(absent)",
                     new[k]["verdict"] if k in new else "(absent)")
                    for k in old.keys() | new.keys())
    lines = [f"{count:>6}  {before} -> {after}"
             for (before, after), count in sorted(moves.items(), key=lambda m: -m[1])
             if before != after]
    lines = lines or ["no value changed its verdict"]
    for key in sorted(new.keys()):
        value = new[key]
        if value["verdict"] in (MISMATCH, TRACER_ONLY) and \
                old.get(key, {}).get("verdict") != value["verdict"]:
            lines.append(f"new {value['verdict']}: {' '.join(key)}: gdb {json.dumps(value['gdb'])}"
                         f" | gs-cgen {json.dumps(value['tracer'])}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(diff(values_of(Path(argv[0])), values_of(Path(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
