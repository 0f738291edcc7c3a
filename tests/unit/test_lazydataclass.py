"""gs_cgen.lazydataclass makes exactly what dataclasses.dataclass makes, only
later: every use a record has in gs-cgen, compared with the eager decorator."""
from __future__ import annotations

import dataclasses
import threading
import typing

import pytest

from gs_cgen import lazydataclass
from gs_cgen.lazydataclass import dataclass


def _pair(**options):
    """The same class made by both decorators."""
    def body():
        class Point:
            x: int
            y: int = 0
            tags: tuple = dataclasses.field(default_factory=tuple)
        return Point
    return dataclasses.dataclass(**options)(body()), dataclass(**options)(body())


def _pending(cls) -> bool:
    return lazydataclass._PENDING in cls.__dict__


def test_nothing_is_generated_until_first_use():
    _, lazy = _pair(frozen=True)
    assert _pending(lazy)
    lazy(1)
    assert not _pending(lazy)


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"eq": False}, {"order": True},
                                     {"frozen": True, "kw_only": True}])
def test_instances_behave_as_the_eager_decorator_makes_them(options):
    eager, lazy = _pair(**options)
    args = {"x": 1, "y": 2}
    a, b = eager(**args), lazy(**args)
    assert repr(a).split("Point")[1] == repr(b).split("Point")[1]
    assert (b == lazy(**args)) == (a == eager(**args))
    assert (eager.__hash__ is None) == (lazy.__hash__ is None)
    if eager.__hash__ is not None and options.get("frozen"):
        assert hash(b) == hash(a)
    assert [f.name for f in dataclasses.fields(b)] == [f.name for f in dataclasses.fields(a)]
    assert dataclasses.replace(b, y=5).y == 5
    if options.get("order"):
        assert lazy(x=1) < lazy(x=2)


def test_fields_left_out_of_compare_and_repr():
    def body():
        class Entry:
            key: int
            note: str = dataclasses.field(default="", compare=False, repr=False)
            weight: int = dataclasses.field(default=0, hash=False)
        return Entry
    eager, lazy = dataclasses.dataclass(frozen=True)(body()), dataclass(frozen=True)(body())
    assert lazy(1, "a") == lazy(1, "b")
    assert lazy(1, weight=1) != lazy(1, weight=2)
    assert hash(lazy(1, "a", 5)) == hash(eager(1, "b", 5))
    assert repr(lazy(1, "a")).endswith("Entry(key=1, weight=0)")
    assert repr(eager(1, "a")).endswith("Entry(key=1, weight=0)")


def test_recursive_repr_does_not_loop():
    @dataclass
    class Node:
        children: list

    node = Node([])
    node.children.append(node)
    assert repr(node).endswith("Node(children=[...])")


def test_frozen_records_stay_frozen():
    _, lazy = _pair(frozen=True)
    point = lazy(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2


def test_class_metadata_before_any_instance():
    _, lazy = _pair(frozen=True)
    assert dataclasses.is_dataclass(lazy)
    assert [f.name for f in dataclasses.fields(lazy)] == ["x", "y", "tags"]
    assert lazy.__match_args__ == ("x", "y", "tags")


def test_positional_and_keyword_class_patterns():
    _, lazy = _pair(frozen=True)
    match lazy(3, 4):
        case lazy(3, y):
            assert y == 4
        case _:
            pytest.fail("positional pattern did not match")
    match lazy(3, 4):
        case lazy(y=4):
            pass
        case _:
            pytest.fail("keyword pattern did not match")


def test_lazy_subclass_of_a_lazy_base_inherits_its_fields():
    @dataclass(frozen=True)
    class Base:
        a: int

    @dataclass(frozen=True)
    class Derived(Base):
        b: int = 7

    assert Derived(1) == Derived(1, 7)
    assert repr(Derived(1)).endswith("Derived(a=1, b=7)")
    assert Base(1) != Derived(1)


def test_eager_subclass_of_a_lazy_base_sees_the_base_fields():
    @dataclass(frozen=True)
    class Base:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Derived(Base):
        b: int = 7

    assert [f.name for f in dataclasses.fields(Derived)] == ["a", "b"]
    assert Derived(1).a == 1


def test_plain_subclass_uses_the_base_methods():
    @dataclass
    class Base:
        a: int

    class Plain(Base):
        def doubled(self):
            return 2 * self.a

    assert Plain(4).doubled() == 8
    assert Plain(4) == Plain(4)


def test_methods_the_class_defines_itself_are_kept():
    @dataclass(frozen=True)
    class Named:
        name: str

        def __repr__(self):
            return f"<{self.name}>"

        def __eq__(self, other):
            return isinstance(other, Named) and other.name.lower() == self.name.lower()

        __hash__ = object.__hash__

    assert repr(Named("x")) == "<x>"
    assert Named("A") == Named("a")


def test_post_init_runs():
    @dataclass(frozen=True)
    class Checked:
        n: int

        def __post_init__(self):
            if self.n < 0:
                raise ValueError("negative")

    with pytest.raises(ValueError):
        Checked(-1)


def test_slots_classes_are_made_at_once():
    @dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    assert not _pending(Slotted)
    assert Slotted.__slots__ == ("a",)


def test_threads_racing_to_the_first_instance():
    _, lazy = _pair(frozen=True)
    made, errors = [], []

    def make():
        try:
            made.append(lazy(1))
        except Exception as error:          # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(point == lazy(1) for point in made) and len(made) == 8


def _error(make):
    try:
        make()
    except Exception as error:              # noqa: BLE001 - compared below
        return type(error), str(error).split(".", 1)[-1]
    return None


def test_records_made_without_exec_match_the_eager_decorator():
    def body():
        class Point:
            x: int
            y: int = 0
            tags: tuple = dataclasses.field(default_factory=tuple)
            seen: list = dataclasses.field(default_factory=list, init=False, repr=False)
            label: str = dataclasses.field(default="p", init=False)
        return Point
    for options in ({}, {"frozen": True}, {"eq": False}):
        eager, lazy = dataclasses.dataclass(**options)(body()), dataclass(**options)(body())
        a, b = eager(1, tags=(2,)), lazy(1, tags=(2,))
        assert lazy.__init__.__code__.co_filename == "<gs_cgen.lazydataclass>"   # no exec of its own
        assert (b.x, b.y, b.tags, b.seen, b.label) == (a.x, a.y, a.tags, a.seen, a.label)
        assert lazy(1).seen is not lazy(1).seen                  # a new list each time
        assert repr(b).split("Point")[1] == repr(a).split("Point")[1]
        assert lazy.__doc__ == eager.__doc__ == "Point(x: 'int', y: 'int' = 0, tags: 'tuple' = <factory>)"
        assert str(__import__("inspect").signature(lazy)) == str(__import__("inspect").signature(eager))
        assert lazy.__match_args__ == eager.__match_args__
        params = ("init", "repr", "eq", "order", "unsafe_hash", "frozen")
        assert [getattr(lazy.__dataclass_params__, p) for p in params] == \
            [getattr(eager.__dataclass_params__, p) for p in params]
        for call in (lambda c: c(), lambda c: c(1, 2, (), 4), lambda c: c(1, z=2),
                     lambda c: c(1, x=2)):
            assert _error(lambda: call(lazy)) == _error(lambda: call(eager))
        if options.get("frozen"):
            assert _error(lambda: setattr(b, "x", 2)) == _error(lambda: setattr(a, "x", 2))
            assert _error(lambda: delattr(b, "x")) == _error(lambda: delattr(a, "x"))
            assert _error(lambda: hash(b)) == _error(lambda: hash(a))
        else:
            b.x = 5
            assert b.x == 5


def test_eager_frozen_subclass_of_a_record_made_without_exec():
    @dataclass(frozen=True)
    class Base:
        a: int

    Base(1)                                  # made now, without exec

    @dataclasses.dataclass(frozen=True)
    class Child(Base):
        b: int = 2

    child = Child(1)
    assert (child.a, child.b) == (1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.a = 3


def test_pseudo_fields_take_the_dataclasses_path():
    @dataclass
    class WithClassVar:
        limit: typing.ClassVar[int] = 3
        a: int = 0

    @dataclass
    class WithInitVar:
        a: int
        scale: dataclasses.InitVar[int] = 1

        def __post_init__(self, scale):
            self.a *= scale

    assert WithClassVar().limit == 3
    assert WithClassVar.__init__.__code__.co_filename != "<gs_cgen.lazydataclass>"
    assert [f.name for f in dataclasses.fields(WithClassVar)] == ["a"]
    assert WithInitVar(2, 5).a == 10
