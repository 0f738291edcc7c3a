"""emit/aggregations.py beyond the golden: a probe with only aggregations
builds no event, an unreadable key becomes the <error> key in C, and the
map kinds (preallocated counts, histograms allocated on demand)."""
from __future__ import annotations

from gs_cgen.emit.probe import emit_probe
from gs_cgen.emit.program import emit_program
from gs_cgen.plan import ir
from tests.unit.plan.test_build import plan


def test_an_aggregation_only_probe_sends_no_event():
    probe = plan("trace handle { count calls by fd; sum total = size; }").probes[0]
    text = emit_probe(probe)
    assert "gs_agg_update0(" in text and "gs_agg_update1(" in text
    assert "gs_begin_event" not in text and "gs_submit" not in text
    assert text.rstrip().endswith("return 0;\n}")


def test_an_optimized_out_key_is_the_error_key():
    result = plan("trace handle { count c by ok; }")
    (step,) = result.probes[0].steps
    assert isinstance(step.keys[0], ir.Fail) and step.keys[0].status == "GS_STATUS_OPTIMIZED_OUT"
    text = emit_probe(result.probes[0])
    assert "gs_st ? gs_st : GS_STATUS_READ_ERROR" in text


def test_counts_are_preallocated_histograms_are_not():
    text = emit_program(plan("trace handle { count c; hist h = size; }"))
    assert "BPF_PERCPU_HASH(gs_agg0, struct gs_agg_key0, __u64, GS_AGG_MAX_KEYS);" in text
    assert ('BPF_F_TABLE("percpu_hash", struct gs_agg_key1, struct gs_agg_hist, gs_agg1, '
            "GS_AGG_MAX_KEYS, BPF_F_NO_PREALLOC);") in text
    assert "gs_hist_bucket(value, 1)" in text           # size is a signed long
