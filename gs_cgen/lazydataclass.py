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
on the class behaves exactly as `@dataclasses.dataclass(...)` makes it; for
most records its methods are made without exec (see "records made without
exec" below).

Classes with `slots=True` are made at once: that option builds a new class,
so the class object would change under its users.

What it buys (issue #27 asks that it earn its place: > 20 ms of a real
command): with `dataclass = dataclasses.dataclass` instead, median of 9
runs each, byte-compiled, Dec 2026: `info` on a small binary 71 -> 123 ms,
`info function` on libpython 80 -> 132 ms, `trace --dry-run` 134 ->
243 ms. msgspec.Struct would mean rewriting every record's users
(positional construction, `dataclasses.replace`, `fields`), for at best
this decorator's gain.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import operator
import reprlib
import threading
import types

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
        if _without_exec_applies(cls, options):
            return _made_without_exec(cls, options)
        made = dataclasses.dataclass(cls, **{**options, "eq": False, "repr": False})
        _share_methods(made, options)
        return made


# ----------------------------------------------- records made without exec
#
# `dataclasses` compiles __init__ (and, for a frozen class, __setattr__ and
# __delattr__) from source text with one `exec` each: ~0.5 ms a class, 55 ms
# of a `trace` start-up that makes 85 records. Here dataclasses only
# collects the fields (no method generated, no exec); __init__ is a
# precompiled template of the same arity with its parameters renamed to the
# fields (`CodeType.replace`), so it binds arguments, reports missing ones
# and runs as fast as dataclasses' own; __setattr__/__delattr__ of a frozen
# record are shared functions. Anything else (a dataclass base, InitVar,
# ClassVar, keyword-only fields, a field named as a template global) takes
# dataclasses' own path.

_TEMPLATE_GLOBALS = frozenset({"self", "_set", "_finish", "__builtins__"})
_PSEUDO_FIELDS = ("ClassVar", "InitVar", "KW_ONLY")


def _without_exec_applies(cls: type, options: dict) -> bool:
    if not options.get("init", True) or options.get("kw_only") or options.get("slots"):
        return False
    if any("__dataclass_fields__" in base.__dict__ for base in cls.__mro__[1:]):
        return False
    if options.get("frozen") and ("__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__):
        return False
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if name in _TEMPLATE_GLOBALS or (name.startswith("_n") and name[2:].isdigit()):
            return False
        if any(word in str(annotation) for word in _PSEUDO_FIELDS):
            return False
    return True


def _made_without_exec(cls: type, options: dict) -> type:
    """CLS made as `dataclasses.dataclass(**options)` would."""
    documented = bool(cls.__dict__.get("__doc__"))
    if not documented:
        cls.__doc__ = "-"            # else dataclasses documents an __init__ it did not make
    made = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False,
                                 match_args=options.get("match_args", True))
    fields = dataclasses.fields(made)
    frozen = bool(options.get("frozen"))
    made.__init__ = _init(made, fields, frozen)
    if frozen:
        made.__setattr__, made.__delattr__ = _frozen_methods(made, fields)
    params = made.__dataclass_params__
    params.init, params.frozen = True, frozen
    params.repr, params.eq = options.get("repr", True), options.get("eq", True)
    if not documented:
        made.__doc__ = _SignatureDoc()
    _share_methods(made, options)
    return made


def _init(cls: type, fields, frozen: bool):
    params = [f for f in fields if f.init]
    defaults, finish_steps = [], []
    for f in params:
        if f.default is not dataclasses.MISSING:
            defaults.append(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            defaults.append(_FACTORY)
            finish_steps.append((f.name, f.default_factory, True))
        elif defaults:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    for f in fields:
        if not f.init and f.default is not dataclasses.MISSING:
            finish_steps.append((f.name, (lambda value=f.default: value), False))
        elif not f.init and f.default_factory is not dataclasses.MISSING:
            finish_steps.append((f.name, f.default_factory, False))
    post_init = getattr(cls, "__post_init__", None) is not None
    code = _template(len(params)).replace(
        co_varnames=("self", *(f.name for f in params)), co_name="__init__",
        co_qualname=f"{cls.__qualname__}.__init__")
    setter = object.__setattr__ if frozen else setattr
    namespace = {"__builtins__": builtins, "_set": setter,
                 "_finish": _finisher(setter, finish_steps, post_init),
                 **{f"_n{i}": f.name for i, f in enumerate(params)}}
    init = types.FunctionType(code, namespace, "__init__", tuple(defaults) or None)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in params}, "return": None}
    return init


class _Factory:
    def __repr__(self):
        return "<factory>"


_FACTORY = _Factory()       # dataclasses' default for a field with a default_factory


def _finisher(setter, steps, post_init: bool):
    """What __init__ does after the assignments: default factories (a
    parameter still holding _FACTORY, fields outside __init__) and
    __post_init__; None when there is nothing."""
    if not steps and not post_init:
        return None

    def finish(self):
        for name, make, is_parameter in steps:
            if not is_parameter or getattr(self, name) is _FACTORY:
                setter(self, name, make())
        if post_init:
            self.__post_init__()
    return finish


@functools.cache
def _template(arity: int):
    """The code of `__init__(self, p0, ..., pN)` assigning each parameter
    to the field named by global _nI, then calling _finish."""
    parameters = ", ".join(f"p{i}" for i in range(arity))
    body = "".join(f"    _set(self, _n{i}, p{i})\n" for i in range(arity))
    source = (f"def __init__(self{', ' if arity else ''}{parameters}):\n{body}"
              "    if _finish is not None:\n        _finish(self)\n")
    namespace: dict = {}
    exec(compile(source, "<gs_cgen.lazydataclass>", "exec"), namespace)   # noqa: S102 - fixed text
    return namespace["__init__"].__code__


def _frozen_methods(cls: type, fields):
    names = frozenset(f.name for f in fields)

    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __setattr__, __delattr__


class _SignatureDoc:
    """The docstring dataclasses gives an undocumented class ("Name(a: int,
    b: str = '')"), worked out when first read: inspect.signature is not
    cheap, and nothing but help() reads it."""

    def __get__(self, instance, owner):
        import inspect  # noqa: PLC0415 - dataclasses imported it already
        try:
            text = str(inspect.signature(owner)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = ""
        return owner.__name__ + text


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
