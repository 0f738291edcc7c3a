"""Every function of a Rust binary through the planner (tests/rust_fuzz.py):
tests/fixtures/rust/values.rs, which holds every std type the contract
names, at -C opt-level=0 and 2, std's functions included. No variable may
end in an internal error."""
from __future__ import annotations

import pytest

from tests import rust_toolchain
from tests.rust_fuzz import fuzz


@pytest.mark.parametrize("opt_level", ["0", "2"])
def test_every_rust_function_plans(opt_level, tmp_path_factory):
    binary = rust_toolchain.build("values.rs", tmp_path_factory.mktemp("rust"), opt_level)
    summary = fuzz(binary)
    assert not summary.internal, summary.report()
    assert summary.functions > 300, summary.report()
    read = sum(n for outcome, n in summary.outcomes.items() if outcome.startswith("read"))
    assert read > (400 if opt_level == "0" else 40), summary.report()
