"""`make test`'s share of `make fidelity` (fidelity/README.md): two C corpus
programs, one at -O0 and one at -O2, and the Rust one at -O2, read by gdb
and by gs-cgen at the first hit of every line-table PC. It holds gs-cgen
to the guarantees it makes today, never a wrong value: no MISMATCH (a
value other than gdb's) and no TRACER_ONLY (a value where gdb says
optimized out); in the Rust program no TRACER_ERROR either. The other
counts are printed with the test output, for the record."""
from __future__ import annotations

import shutil

import pytest

from fidelity import corpus, report
from fidelity.compare import MATCH, MISMATCH, TRACER_ERROR, TRACER_ONLY
from fidelity.measure import measure
from tests import rust_toolchain
from tests.live.conftest import require

QUICK = (("inline", "O0"), ("types", "O2"), ("values", "O2"))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    for tool in ("gdb", "gcc", "setarch"):
        require(None if shutil.which(tool) else f"{tool} is not installed")
    rust_toolchain.tool("rustc")
    out = tmp_path_factory.mktemp("fidelity")
    programs = {p.name: p for p in corpus.PROGRAMS}
    targets = [target for name, level in QUICK
               for target in corpus.build((level,), (programs[name],), out)]
    return [measure(target) for target in targets]


def test_gs_cgen_never_prints_a_value_gdb_does_not(results, capsys):
    with capsys.disabled():
        print("\n" + report.format_tables(results) + report.format_footnotes(results))
    counts = report.verdict_counts(results)
    assert counts[MISMATCH] == 0 and counts[TRACER_ONLY] == 0, report.format_bugs(results)


def test_both_tools_saw_the_same_run(results):
    """The comparison means something: both runs took the same path with
    the same addresses ($sp equal at every site), nothing was lost, and
    most values gdb reads were compared and found equal."""
    for result in results:
        assert result.diverged_sites == [], result.diverged_sites
        assert result.lost_events == 0 and not result.notes, result.notes
        assert result.sites_hit > 0.8 * result.sites, (result.sites_hit, result.sites)
    assert report.verdict_counts(results)[MATCH] > 150


def test_the_rust_program_has_a_value_for_every_name(results):
    rust = [r for r in results if r.suite == "rust"]
    assert rust and report.verdict_counts(rust)[TRACER_ERROR] == 0, report.format_reasons(rust)
