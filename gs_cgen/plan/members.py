"""`a.field`: which member a name denotes, and the way to it from `a`.

C11 6.7.2.1p13: the members of an anonymous struct/union member are
members of the containing one. C++ [class.member.lookup]: a name declared
in the class hides its bases' members; otherwise it is looked up in every
base, and it is ambiguous unless all the results are one subobject (a
virtual base reached along several paths is one subobject). gdb follows
the same rules (valops.c struct_field_searcher) and says, as here, which
candidates made a name ambiguous.
"""
from __future__ import annotations

from gs_cgen.dwarf.types import BaseClass, StructMember, StructType, strip, type_name
from gs_cgen.errors import PlanError, nearest
from gs_cgen.lazydataclass import dataclass
from gs_cgen.script import ast


@dataclass(frozen=True)
class VirtualBaseStep:
    """Into a virtual base: object + *(vptr + vbase_offset_at), the vptr being
    the object's first 8 bytes (dwarf/types.py BaseClass); `vbase_offset_at`
    None: its location is a DWARF form gs-cgen does not evaluate."""

    base: str                     # the base's name, for messages
    vbase_offset_at: int | None


Step = int | VirtualBaseStep     # an int: that many bytes further into the object


@dataclass(frozen=True)
class MemberPath:
    """A member and the way to it from the start of the searched object;
    `classes` names the classes passed through (gdb's `D -> B1`)."""

    member: StructMember
    steps: tuple[Step, ...]
    classes: tuple[str, ...]

    @property
    def static_offset(self) -> int | None:
        """The member's byte offset when no virtual base is on the way."""
        if any(isinstance(step, VirtualBaseStep) for step in self.steps):
            return None
        return sum(self.steps)

    def identity(self) -> tuple:
        """Equal for two paths to the same member of the same subobject:
        after the last virtual base, the same static way."""
        last = max((i for i, step in enumerate(self.steps) if isinstance(step, VirtualBaseStep)),
                   default=-1)
        start = self.steps[last].base if last >= 0 else None
        return start, sum(self.steps[last + 1:]), self.member.name


def lookup_member(struct: StructType, expr: ast.Member) -> MemberPath:
    """The member `expr.field` of `struct`; a PlanError naming candidates
    when there is none, or every candidate when it is ambiguous."""
    field = expr.field
    if field.isdigit() and struct.language == "rust":
        field = f"__{int(field)}"            # a tuple's `.0` is DWARF's member `__0`
    found = find_member(struct, field)
    if not found:
        raise PlanError(f"{type_name(struct)} has no member '{expr.field}'", expr.span,
                        candidates=nearest(expr.field, member_names(struct)))
    if len(found) > 1:
        listed = ", ".join(f"'{type_name(p.member.type)} {p.classes[-1]}::{p.member.name}' "
                           f"({' -> '.join(p.classes)})" for p in found)
        raise PlanError(f"request for member '{expr.field}' is ambiguous in type "
                        f"'{_class_name(struct)}'; candidates are {listed}", expr.span)
    return found[0]


def find_member(struct: StructType, name: str) -> list[MemberPath]:
    """Every distinct subobject's member `name` that C++ lookup finds."""
    own = _own_member(struct, name, 0)
    if own is not None:
        member, offset = own
        return [MemberPath(member, (offset,), (_class_name(struct),))]
    found: dict[tuple, MemberPath] = {}
    for inherited in struct.bases:
        base = strip(inherited.type)
        if not isinstance(base, StructType):
            continue
        for path in find_member(base, name):
            path = MemberPath(path.member, (_base_step(inherited), *path.steps),
                              (_class_name(struct), *path.classes))
            found.setdefault(path.identity(), path)
    return list(found.values())


def member_names(struct: StructType) -> list[str]:
    """The names `a.NAME` can take, bases' members too, for suggestions."""
    names = [m.name for m in struct.members if m.name]
    for inherited in struct.bases:
        base = strip(inherited.type)
        if isinstance(base, StructType):
            names += [n for n in member_names(base) if n not in names]
    return names


def _own_member(struct: StructType, name: str, offset: int):
    """(member, offset) declared in `struct` itself or in its anonymous
    struct/union members."""
    for member in struct.members:
        if member.name == name:
            return member, offset + member.offset
        inner = strip(member.type)
        if member.name is None and isinstance(inner, StructType):
            found = _own_member(inner, name, offset + member.offset)
            if found:
                return found
    return None


def _base_step(inherited: BaseClass) -> Step:
    if inherited.offset is not None:
        return inherited.offset
    return VirtualBaseStep(_class_name(strip(inherited.type)), inherited.vbase_offset_at)


def _class_name(struct) -> str:
    return getattr(struct, "name", None) or type_name(struct)
