"""Rust std layouts recognized from the DWARF of a real rustc build
(tests/fixtures/rust/values.rs): std's own types by their members and
namespaces, a user's same-named types left alone, and the note of a std
type whose layout does not validate."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import StructType
from gs_cgen.printers import rust
from tests import rust_toolchain


@pytest.fixture(scope="module")
def values(tmp_path_factory):
    return open_module(rust_toolchain.build("values.rs", tmp_path_factory.mktemp("rs"), "0"))


@pytest.mark.parametrize("name, kind", [
    ("GREETING", rust.Kind.TEXT),          # &str
    ("WORDS", rust.Kind.SEQUENCE),         # Vec<String>
    ("MY_STRING", rust.Kind.PLAIN),        # values::mine::String
    ("MY_VEC", rust.Kind.PLAIN),           # values::mine::Vec<u32>
])
def test_std_layouts_and_look_alikes(values, name, kind):
    assert rust.layout(values.find_global(name).type).kind is kind


def test_a_std_type_of_an_unknown_layout_is_noted(values):
    strange = StructType("struct", "Vec<u8, alloc::alloc::Global>", 24, lambda: (),
                         language="rust", scope_loader=lambda: "alloc::vec")
    assert rust.layout(strange).kind is rust.Kind.PLAIN
    assert rust.layout_notes(strange) == [
        "the layout of Vec<u8, alloc::alloc::Global> is not one gs-cgen knows"]
    assert rust.layout_notes(values.find_global("WORDS").type) == []


def test_a_hash_table_is_read_a_group_at_a_time_at_any_max_elements(values):
    from gs_cgen.plan.follows import plan_follows
    table = values.find_type("HashMap<u32, u64, std::hash::random::RandomState, "
                             "alloc::alloc::Global>")
    assert rust.layout(table).kind is rust.Kind.MAP
    control, buckets = plan_follows(table, 1, 60_000)[:2]
    assert control.cap == 8 and buckets.cap == 8 * 16 and buckets.backwards
