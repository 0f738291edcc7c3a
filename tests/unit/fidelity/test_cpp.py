"""The C++ corpus's harness logic (fidelity/README.md "The C++ corpus"):
how gdb's C++ values are recorded (gdb_script.py, run by gdb_recorder on
the corpus program built by corpus.py) and how they are compared with
gs-cgen's raw() (compare.as_layout, measure.py)."""
from __future__ import annotations

import shutil

import pytest

from fidelity import compare, corpus, gdb_recorder
from fidelity.corpus import Site, Target
from fidelity.measure import TargetResult, _classify_site
from fidelity.tracer_recorder import Probe, TraceRun
from tests.prerequisites import require

SITE = Site("/bin/prog", 0x1159, "f", "f.cpp", 3, (), "0x1159")


def classify(variables: list[dict], values: list[dict]) -> TargetResult:
    """One site of a target compared by layout (raw(NAME) on gs-cgen's side)."""
    result = TargetResult("cpp", "prog", "O0", 1, 1, [], [], [], 0, [])
    hit = {"id": SITE.key, "pc": 0x555555555159, "sp": 0x7FF0, "function": "f",
           "variables": variables}
    event = {"trace": "0x1159", "values": [{"expr": "$sp", "value": 0x7FF0, "status": "ok"},
                                           *values]}
    probe = Probe("0x1159", [SITE], [f"raw({v['name']})" for v in variables])
    _classify_site(result, SITE, hit, TraceRun({SITE.key: event}, {SITE.key: probe}, 0, 0, ""),
                   set(), raw_layout=True)
    return result


def variable(name: str, raw: dict, type_text: str = "int") -> dict:
    return {"name": name, "kind": "local", "type": type_text, "raw": raw}


def test_a_char_pointer_is_its_address_in_a_layout_target():
    """raw(s) of a `const char *` is the pointer (gdb's print/r shows the
    text as well; the text is no part of the layout)."""
    text = {"k": "cstr", "ptr": 0x5555555560A0, "hex": b"basic_string::append".hex(),
            "end": "nul"}
    assert compare.as_layout(text) == {"k": "ptr", "v": 0x5555555560A0}
    assert compare.as_layout({"k": "cstr", "null": True}) == {"k": "ptr", "v": 0}
    assert compare.as_layout({"k": "int", "v": 3}) == {"k": "int", "v": 3}
    result = classify([variable("s", text, "const char *")],
                      [{"expr": "raw(s)", "type": "const char*", "status": "ok",
                        "value": {"address": 0x5555555560A0, "type": "const char*"}}])
    assert [(v.name, v.verdict, v.gdb) for v in result.values] == [
        ("s", compare.MATCH, "p:0x5555555560a0")]


def test_bases_compare_by_gdbs_names_and_compiler_members_are_not_gdbs():
    """gdb's `<Base> = {...}` is gs-cgen's `<Base>` member; the _vptr that
    gs-cgen's layout shows is artificial in gdb's, which leaves it out."""
    raw = {"k": "struct", "fields": [
        ["<shop::LeftPart>", {"k": "struct", "fields": [["<shop::Root>", {"k": "int", "v": 40}],
                                                        ["left", {"k": "int", "v": 41}]]}],
        ["extra", {"k": "int", "v": 43}]]}
    ours = {"<shop::LeftPart>": {"<shop::Root>": None, "_vptr.LeftPart": {
        "address": 0x555555557D00, "type": "function**"}, "left": 41}, "extra": 43}
    result = classify([variable("diamond", raw, "shop::Diamond")],
                      [{"expr": "raw(diamond)", "type": "shop::Diamond", "status": "ok",
                        "value": ours}])
    assert [(v.verdict, v.paths) for v in result.values] == [
        (compare.TRACER_UNAVAILABLE, [".<shop::LeftPart>.<shop::Root>"])]
    ours["<shop::LeftPart>"]["<shop::Root>"] = 40
    result = classify([variable("diamond", raw, "shop::Diamond")],
                      [{"expr": "raw(diamond)", "type": "shop::Diamond", "status": "ok",
                        "value": ours}])
    assert [v.verdict for v in result.values] == [compare.MATCH]


def test_a_value_gdb_left_out_is_not_compared():
    absent = {"k": "absent", "msg": "a reference into the program's code, where probes "
              "replace instructions (gdb hides its breakpoints)"}
    result = classify([variable("value", absent, "unsigned int &")], [])
    assert result.values == [] and result.not_compared == [
        f"{SITE.key} value: {absent['msg']}"]


def test_the_suites_languages():
    assert [Target(suite, "p", "O0", []).language for suite in ("corpus", "rust", "cpp",
                                                                "libpython")] == \
        ["c", "rust", "cpp", "c"]
    cpp = [p for p in corpus.PROGRAMS if p.language == "cpp"]
    assert [(p.name, p.source) for p in cpp] == [("cppvalues", "values.cpp")]


# ------------------------------------------------------- gdb_script.py, in gdb

@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, gdb_recorder.GdbRun]:
    for tool in ("gdb", "g++"):
        require(None if shutil.which(tool) else f"{tool} is not installed")
    program = next(p for p in corpus.PROGRAMS if p.language == "cpp")
    targets = corpus.build(("O0", "O1"), (program,), tmp_path_factory.mktemp("fidelity-cpp"))
    assert all(t.suite == "cpp" and t.raw_layout for t in targets)
    return {t.level: gdb_recorder.record(t) for t in targets}


def _first(run: gdb_recorder.GdbRun, function: str, name: str, pick=lambda raw: True) -> dict:
    return next(v["raw"] for hit in sorted(run.hits.values(), key=lambda h: h["pc"])
                if hit.get("function") == function
                for v in hit.get("variables", []) if v["name"] == name and pick(v["raw"]))


def test_gdb_shows_bases_and_a_virtual_base_once(recorded):
    """`<Base>` members, as gdb prints them; the virtual base Root where
    gdb's print first meets it (under LeftPart), not again under RightPart."""
    diamond = compare.from_gdb(_first(recorded["O0"], "shop::walk", "diamond",
                                      lambda raw: raw["k"] == "struct"))
    assert list(diamond) == ["<shop::LeftPart>", "<shop::RightPart>", "extra"]
    assert "<shop::Root>" in diamond["<shop::LeftPart>"]
    assert "<shop::Root>" not in diamond["<shop::RightPart>"]


def test_a_static_member_is_no_member_and_a_reference_is_its_object(recorded):
    counter = compare.from_gdb(_first(recorded["O0"], "main", "counter"))
    assert list(counter) == ["value", "step"]          # not `instances`
    item = compare.from_gdb(_first(recorded["O0"], "shop::total", "item",
                                   lambda raw: raw["k"] == "struct"))
    assert list(item) == ["<shop::Point>", "price", "color"]


def test_a_reference_member_of_a_value_in_pieces_is_left_out(recorded):
    """-O1 keeps the lambda's closure in pieces, its capture by reference
    a DW_OP_implicit_pointer piece, which gdb 13 cannot touch: gdb's run
    records the closure without it (and did not die)."""
    run = recorded["O1"]
    assert run.exit_code == 0
    closures = [compare.from_gdb(v["raw"]) for hit in run.hits.values()
                if hit.get("function") == "main"
                for v in hit.get("variables", []) if v["name"] == "add"]
    assert {"__offset": 10} in closures
