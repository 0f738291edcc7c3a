"""`dataclasses.dataclass`, with the class's methods generated on first use.

The standard decorator compiles up to six methods per class with `exec`
when the module is imported: about 0.9 ms a class on CPython 3.11. gs-cgen
defines some 240 records and one run uses a fraction of them, so at start-up
the decorator cost more than all of `info`'s DWARF work on a small binary
(issue #10). This decorator takes the same arguments, marks the class, and
hands it to `dataclasses.dataclass` the first time anything needs what that
would have made: an instance (`__init__`), `==`, `hash`, `repr`, or the
class's dataclass metadata (`dataclasses.fields`, `is_dataclass`,
`__match_args__`, a dataclass subclass reading its bases' fields). From then
on the class is exactly what `@dataclasses.dataclass(...)` makes.

Classes with `slots=True` are made at once: that option builds a new class,
so the class object would change under its users.
"""
from __future__ import annotations

import dataclasses
import operator
import reprlib
import threading

_PENDING = "__gs_dataclass_pending__"
_METHODS = ("__init__", "__repr__", "__eq__", "__hash__")
_METADATA = ("__dataclass_fields__", "__dataclass_params__", "__match_args__")
_lock = threading.RLock()


def dataclass(cls=None, /, **options):
    """Same signature and result as `dataclasses.dataclass`."""
    def defer(cls):
        if options.get("slots"):
            return dataclasses.dataclass(cls, **options)
        placeholders = tuple(name for name in _METHODS if name not in cls.__dict__)
        for name in placeholders:
            setattr(cls, name, _method_placeholder(cls, name))
        for name in _METADATA:
            setattr(cls, name, _MetadataPlaceholder(cls, name))
        setattr(cls, _PENDING, (placeholders, options))
        return cls
    return defer if cls is None else defer(cls)


def materialize(cls: type) -> type:
    """Make CLS the dataclass its decorator asked for, if not yet done."""
    with _lock:
        pending = cls.__dict__.get(_PENDING)
        if pending is None:
            return cls
        placeholders, options = pending
        for base in reversed(cls.__mro__[1:]):
            materialize(base)
        for name in (*placeholders, *_METADATA, _PENDING):
            delattr(cls, name)
        if set(placeholders) != set(_METHODS) or options.get("order") or options.get("unsafe_hash"):
            return dataclasses.dataclass(cls, **options)
        made = dataclasses.dataclass(cls, **{**options, "eq": False, "repr": False})
        _share_methods(made, options)
        return made


def _share_methods(cls: type, options: dict) -> None:
    """`==`, `hash` and `repr` as dataclasses would generate them, from
    functions made without exec: they are half of its cost per class."""
    fields = dataclasses.fields(cls)
    if options.get("repr", True):
        cls.__repr__ = _repr([f.name for f in fields if f.repr])
    if options.get("eq", True):
        compared = _values([f.name for f in fields if f.compare])

        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return compared(self) == compared(other)
            return NotImplemented
        cls.__eq__ = __eq__
        if options.get("frozen"):
            hashed = _values([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
            cls.__hash__ = lambda self: hash(hashed(self))
        else:
            cls.__hash__ = None


def _values(names: list[str]):
    """-> a function from a record to the tuple of those fields' values."""
    if len(names) >= 2:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()


def _repr(names: list[str]):
    @reprlib.recursive_repr()
    def __repr__(self):
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"
    return __repr__


def _method_placeholder(cls: type, name: str):
    def placeholder(self, *args, **kwargs):
        materialize(cls)
        return getattr(cls, name)(self, *args, **kwargs)
    placeholder.__name__ = placeholder.__qualname__ = name
    return placeholder


class _MetadataPlaceholder:
    """A class attribute that makes its class a dataclass when read."""

    def __init__(self, cls: type, name: str):
        self.cls, self.name = cls, name

    def __get__(self, instance, owner):
        materialize(self.cls)
        for klass in self.cls.__mro__:
            if self.name in klass.__dict__:
                return klass.__dict__[self.name]
        raise AttributeError(self.name)
