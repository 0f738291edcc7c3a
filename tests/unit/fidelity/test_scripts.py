"""The gs-cgen scripts the fidelity harness writes, and how it reads
gs-cgen's refusals (fidelity/tracer_recorder.py), without running gs-cgen."""
from __future__ import annotations

from fidelity.corpus import Site
from fidelity.tracer_recorder import Probe, parse_failure, render_script


def site(pattern: str, address: int = 0x1159) -> Site:
    return Site("/tmp/prog", address, "describe_rect", "types.c", 60, (), pattern)


def test_one_block_per_pattern_and_every_line_has_an_owner():
    text, owners = render_script([Probe("0x1159", [site("0x1159")], ["r", "offset"]),
                                  Probe("lib.so:0x10", [site("lib.so:0x10", 0x10)], ["n"])])
    lines = text.splitlines()
    assert lines[:6] == ["trace 0x1159 {", "    print $sp;", "    print $pc;",
                         "    print r;", "    print offset;", "}"]
    assert owners[4] == ("0x1159", "r") and owners[8] == ("lib.so:0x10", None)
    assert lines[9] == "    print n;" and owners[10] == ("lib.so:0x10", "n")


def test_a_refusal_names_its_script_line():
    stderr = ("<script>:4:11: error: no variable 'nosuch' at describe_rect (0x1159)\n"
              "      print nosuch;\n            ^^^^^^\n")
    outcome = parse_failure(stderr)
    assert (outcome.ok, outcome.line) == (False, 4)
    assert outcome.message == "no variable 'nosuch' at describe_rect (0x1159)"


def test_a_crash_has_no_line():
    outcome = parse_failure("gs-cgen: internal error: KeyError: 'DW_OP_x' (set GS_CGEN_DEBUG=1 "
                            "for a traceback; probes were removed)\n")
    assert outcome.line is None and outcome.message.startswith("KeyError")


def test_site_keys_and_patterns():
    assert site("0x1159").key == "prog:0x1159" and not site("0x1159").by_function
    assert not site("libfidlib.so:0x1139").by_function
    assert site("PyDict_New").by_function
