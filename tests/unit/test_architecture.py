"""Imports flow one way and each third-party library has one home."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gs_cgen"
HOMES = {"elftools": ("elf", "dwarf"), "capstone": "elf", "bcc": "runtime", "lark": "script", "click": "cli.py",
         "rich": "render", "pycparser": "abi.py",
         # the metric families (render/metrics.py), the HTTP server (runtime/metrics.py)
         "prometheus_client": ("render", "runtime")}
# stage -> stages it must not import
FORBIDDEN = {"script": {"dwarf", "plan", "emit", "runtime", "render"},
             "elf": {"script", "dwarf", "plan", "emit", "runtime", "render", "unwind"},
             "dwarf": {"script", "plan", "emit", "runtime", "render"},
             "plan": {"emit", "runtime", "render"},
             "emit": {"runtime", "render", "dwarf", "elf"},
             "render": {"runtime", "emit"},
             "unwind": {"script", "plan", "emit", "runtime", "render"}}


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_third_party_libraries_have_one_home():
    for path in PACKAGE.rglob("*.py"):
        where = path.relative_to(PACKAGE).parts[0]
        for name in imports_of(path):
            root = name.split(".")[0]
            if root in HOMES:
                homes = HOMES[root] if isinstance(HOMES[root], tuple) else (HOMES[root],)
                assert where in homes, f"{path} imports {root}"


def test_stages_do_not_reach_around_each_other():
    for stage, banned in FORBIDDEN.items():
        for path in (PACKAGE / stage).rglob("*.py"):
            for name in imports_of(path):
                parts = name.split(".")
                if parts[0] == "gs_cgen" and len(parts) > 1:
                    assert parts[1] not in banned, f"{path} imports {name}"
