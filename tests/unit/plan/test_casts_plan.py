"""cast(expr, "TYPE") planned on tests/fixtures/casts: which module's type
a name means, the ABI spellings, errors, what a cast reads; and builtin
lengths that are run-time values."""
from __future__ import annotations

import shutil

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import StructType, TypedefType, strip, type_name
from gs_cgen.errors import PlanError
from gs_cgen.plan import ir
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import ScalarCapture
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.runtime.target import PidNamespace
from gs_cgen.script.parser import parse
from tests.casts_fixture import build_casts
from tests.prerequisites import require

OPTIONS = PlanOptions("t.gs", PidNamespace(False))


@pytest.fixture(scope="module")
def casts(tmp_path_factory):
    require(None if shutil.which("gcc") else "gcc is not installed")
    paths = build_casts(tmp_path_factory.mktemp("casts"))
    return {name: open_module(str(path)) for name, path in paths.items()}


def planned(casts, text: str, own: str = "app"):
    others = [casts[n] for n in ("app", "libb", "liba") if n != own]
    plan = build_plan(parse(text), ModuleSet.of(casts[own], *others), OPTIONS)
    return plan.probes[0]


def cast_type_of(casts, type_text: str, own: str = "app", function: str = "cast_probe"):
    probe = planned(casts, f'trace {function} {{ print cast(0, "{type_text} *"); }}', own)
    return probe.slots[0].capture.ctype.target


def test_own_module_first_then_the_one_other_module_that_has_it(casts):
    assert strip(cast_type_of(casts, "struct Duplicate")).members[0].name == "app_marker"
    lib = cast_type_of(casts, "struct Duplicate", own="liba", function="liba_probe")
    assert strip(lib).members[0].name == "lib_marker"
    only = cast_type_of(casts, "OnlyInA")                     # liba's alone; no keyword needed
    assert isinstance(only, StructType) and only.size == 24


def test_alike_in_several_other_modules_resolves(casts):
    same = cast_type_of(casts, "struct Same")
    assert [m.name for m in same.members] == ["x", "y"]


def test_defined_differently_in_other_modules_is_ambiguous(casts):
    with pytest.raises(PlanError) as info:
        cast_type_of(casts, "struct Twice")
    message = info.value.message
    assert message.startswith("type 'struct Twice' is ambiguous: the probe's module does not "
                              "define it, and other modules define it differently: ")
    assert f"{casts['liba'].path} (struct Twice {{ int a_first; int a_second; }}, 8 bytes)" in message
    assert f"{casts['libb'].path} (struct Twice {{ long int b_only; }}, 8 bytes)" in message
    assert info.value.span is not None


def test_unknown_type_lists_nearest_names_of_every_module(casts):
    with pytest.raises(PlanError) as info:
        cast_type_of(casts, "struct OnlyInB")
    assert info.value.message == "unknown type 'struct OnlyInB' in cast: no loaded module's " \
                                 "DWARF defines it"
    assert info.value.candidates[0] == "OnlyInA"
    assert info.value.hints[0].startswith("searched ")


def test_abi_spellings_hold_where_dwarf_has_none(casts):
    # app.c never uses uint64_t or __s16; u8 is its own typedef.
    u64 = cast_type_of(casts, "uint64_t")
    assert isinstance(u64, TypedefType) and type_name(strip(u64)) == "unsigned long"
    assert strip(cast_type_of(casts, "__s16")).size == 2
    assert type_name(cast_type_of(casts, "u8")) == "u8"
    assert type_name(cast_type_of(casts, "void")) == "void"
    assert type_name(cast_type_of(casts, "const volatile CastNode")) == "const volatile CastNode"


def test_scalar_casts_convert_as_c(casts):
    probe = planned(casts, 'trace cast_probe { print cast(n, "u8"); print cast(n, "bool"); '
                           'print cast(-1, "unsigned long long"); }')
    narrow, truth, wide = (slot.capture.value for slot in probe.slots)
    assert narrow == ir.Convert(narrow.operand, 1, False)
    assert isinstance(truth, ir.BinaryOp) and truth.op == "!="      # _Bool: != 0, not a byte
    # -1 is an int constant, folded when planned (plan/arith.py fold); the
    # cast to unsigned long long does not narrow it: all 64 bits set.
    assert wide == ir.Const(-1)


def test_aggregate_cast_of_an_address_reads_the_object_there(casts):
    probe = planned(casts, 'trace cast_probe { print cast(raw, "struct CastNode"); '
                           'print cast(&node->words, "uint32_t[4]")[2]; }')
    whole, element = (slot.capture for slot in probe.slots)
    assert whole.size == 56 and isinstance(whole.address, ir.NonNull)
    assert element.size == 4


@pytest.mark.parametrize("call, length, clamp", [
    ('memcmp(text, "hel", n)', "n", None),
    ('strncmp(text, "help", n - 1)', "n - 1", 4),
])
def test_run_time_lengths(casts, call, length, clamp):
    capture = planned(casts, f"trace cast_probe {{ print {call}; }}").slots[0].capture
    assert isinstance(capture, ScalarCapture)
    node = capture.value
    assert isinstance(node, ir.BytesEqual) and node.length is not None and node.clamp == clamp


def test_constant_lengths_fold_and_are_checked(casts):
    probe = planned(casts, 'trace cast_probe { let k = 3; print memcmp(text, "hel", k); '
                           'print strncmp("hello", "help", n); print memcmp(raw, raw, 0); }')
    first, second, third = (slot.capture.value for slot in probe.slots)
    assert first.length is None and first.expected == b"hel"
    assert second == ir.BinaryOp("<=", second.left, ir.Const(3), True)   # equal over <= 3 bytes
    assert third == ir.Const(1)
    with pytest.raises(PlanError) as info:
        planned(casts, "trace cast_probe { print memcmp(raw, node, 65); }")
    assert info.value.message == "memcmp length 65 exceeds the 64 bytes a comparison of two " \
                                 "target buffers can compare"


def test_known_strings_are_compared_whole_or_refused(casts):
    """A literal longer than the 64 bytes compared between two target
    buffers is compared whole (it was cut to 64 and called equal); one
    beyond the work area is a compile-time error, never a partial
    comparison."""
    long_text = "x" * 100
    probe = planned(casts, f'trace cast_probe {{ print starts_with(text, "{long_text}"); '
                           f'print strncmp(text, "{long_text}", 90); }}')
    first, second = (slot.capture.value for slot in probe.slots)
    assert first.expected == long_text.encode() and second.expected == long_text[:90].encode()
    too_long = "y" * 600
    for statement in (f'print starts_with(text, "{too_long}");',
                      f'print memcmp(text, "{too_long}", 520);',
                      f'if text == "{too_long}" {{ print 1; }}'):
        with pytest.raises(PlanError) as info:
            planned(casts, f"trace cast_probe {{ {statement} }}")
        assert "at most 510 bytes" in info.value.message
