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
        return dataclasses.dataclass(cls, **options)


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
