"""`python -m fidelity` (`make fidelity`): build the corpus, measure every
target with both tools, print the tables, write the JSON report."""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from fidelity import corpus, report
from fidelity.measure import failed, measure

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fidelity", description=__doc__)
    parser.add_argument("--levels", default=",".join(corpus.LEVELS),
                        help="comma-separated, e.g. O0,O2 (default: all four)")
    parser.add_argument("--programs", default=",".join(p.name for p in corpus.PROGRAMS),
                        help="comma-separated corpus programs (default: all; '' for none)")
    parser.add_argument("--no-python", action="store_true", help="leave libpython3.11 out")
    parser.add_argument("--compiler", choices=tuple(corpus.COMPILERS), default="gcc",
                        help="of the C and C++ corpus: gcc/g++ (default) or clang/clang++")
    parser.add_argument("--out", type=Path,
                        help="default: build/fidelity, build/fidelity-clang for clang")
    options = parser.parse_args(argv)
    if options.out is None:
        suffix = "" if options.compiler == "gcc" else f"-{options.compiler}"
        options.out = REPO / "build" / f"fidelity{suffix}"
    started = time.monotonic()
    targets = corpus.build(tuple(options.levels.split(",")),
                           _programs(options.programs.split(",")), options.out,
                           options.compiler)
    if not options.no_python:
        from fidelity import libpython  # noqa: PLC0415
        targets.append(libpython.target())
    results = []
    for target in targets:
        began = time.monotonic()
        try:
            results.append(measure(target))
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            results.append(failed(target, exc))     # the other targets still count
        phases = ", ".join(f"{k} {v:.0f} s" for k, v in results[-1].seconds.items())
        print(f"fidelity: {target.label}: {len(target.sites)} sites, "
              f"{len(results[-1].values)} values in {time.monotonic() - began:.0f} s ({phases})",
              file=sys.stderr, flush=True)
    seconds = time.monotonic() - started
    print(report.format_tables(results))
    print(report.format_footnotes(results))
    print(report.format_reasons(results))
    print(report.format_bugs(results))
    json_path = options.out / "report.json"
    report.write_json(results, json_path, seconds, options.compiler)
    print(f"\n{len(targets)} targets ({options.compiler}) in {seconds:.0f} s; "
          f"report: {json_path}")
    return 0 if all(r.measured for r in results) else 1


def _programs(names: list[str]) -> tuple[corpus.Program, ...]:
    known = {p.name: p for p in corpus.PROGRAMS}
    names = [n for n in names if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown corpus programs: {', '.join(unknown)} "
                         f"(known: {', '.join(known)})")
    return tuple(known[n] for n in names)


if __name__ == "__main__":
    sys.exit(main())
