"""Verifier refusals say what the limit is, never libbcc's guess."""
from __future__ import annotations

from gs_cgen.runtime.session import refusal_hints

_E2BIG = "Failed to load BPF program b'gs_probe_0': Argument list too long"


def test_libbccs_4096_instruction_guess_is_dropped():
    log = "bpf: Argument list too long. Program  too large (1640 insns), at most 4096 insns\n"
    hints = refusal_hints(log, _E2BIG)
    assert not any("4096" in hint for hint in hints)
    assert hints == ("the verifier explores every path through the probe's branches and gives "
                     "up after 1,000,000 instructions processed in all; split the block into "
                     "several `trace` blocks on the same function",)


def test_other_refusals_keep_the_verifiers_log():
    log = "R1 invalid mem access 'scalar'\nprocessed 12 insns (limit 1000000)\n"
    assert refusal_hints(log, "Failed to load BPF program b'x': Permission denied") == \
        (log.strip(),)
