"""What `gs-cgen --version` reports: our version and the resolved versions
of every dependency, so a bug report (and the head of `make test`) says
exactly which set was in use."""
from __future__ import annotations

from importlib import metadata

from gs_cgen.runtime.session import bcc_version

DEPENDENCIES = ("pyelftools", "pycparser", "click", "lark", "rich", "capstone", "prometheus-client",
                "pytest")


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def version_report() -> str:
    lines = [f"gs-cgen {_installed('gs-cgen')}", f"  bcc {bcc_version()}"]
    lines += [f"  {name} {_installed(name)}" for name in DEPENDENCIES]
    return "\n".join(lines)
