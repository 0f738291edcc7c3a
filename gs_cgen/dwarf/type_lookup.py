"""Types and enumerators by name, for casts, `sizeof` and conditions on
enum constants: C's lookup order (ordinary identifiers before tags), the
compile unit of the probe first as gdb looks in the current unit first,
then Rust types by their paths.

A part of the module facade (dwarf/module.py): `module` is the
ModuleDebugInfo it answers for."""
from __future__ import annotations

from gs_cgen.cppnames import matches, parse_cpp_name
from gs_cgen.dwarf.index import TYPE_TAGS, die_name
from gs_cgen.dwarf.inline import is_rust_cu
from gs_cgen.dwarf.types import CType, PointerType

_TAG_KEYWORDS = {
    "struct": ("DW_TAG_structure_type", "DW_TAG_class_type"),
    "union": ("DW_TAG_union_type",),
    "enum": ("DW_TAG_enumeration_type",),
    "class": ("DW_TAG_class_type", "DW_TAG_structure_type"),
}
# A name without a keyword: ordinary identifiers first, then tags.
_BARE_NAME_TAGS = (("DW_TAG_typedef",), ("DW_TAG_base_type",),
                   ("DW_TAG_structure_type", "DW_TAG_class_type"), ("DW_TAG_union_type",),
                   ("DW_TAG_enumeration_type",))
# Canonical C base spellings (script/typename.py) -> the DW_AT_name GCC
# gives the base type, then clang's.
_BASE_SPELLINGS = {
    "short": ("short int", "short"), "unsigned short": ("short unsigned int", "unsigned short"),
    "int": ("int",), "unsigned int": ("unsigned int",),
    "long": ("long int", "long"), "unsigned long": ("long unsigned int", "unsigned long"),
    "long long": ("long long int", "long long"),
    "unsigned long long": ("long long unsigned int", "unsigned long long"),
    "_Bool": ("_Bool", "bool"),
    "__int128": ("__int128",), "unsigned __int128": ("__int128 unsigned", "unsigned __int128"),
    "_Complex float": ("complex float",), "_Complex double": ("complex double",),
    "_Complex long double": ("complex long double",),
    "char": ("char",), "signed char": ("signed char",), "unsigned char": ("unsigned char",),
    "float": ("float",), "double": ("double",), "long double": ("long double",),
}


class TypeLookup:
    def __init__(self, module) -> None:
        self._module = module

    def find_type(self, name: str) -> CType | None:
        """ModuleDebugInfo.find_type."""
        base = " ".join(name.rstrip(" *").split())
        keyword, _, rest = base.partition(" ")
        if keyword in _TAG_KEYWORDS and rest:
            ctype = self.find_named_type(keyword, rest, False)
        else:
            ctype = self.find_named_type(None, base, base in _BASE_SPELLINGS)
        for _ in range(name.count("*") if ctype is not None else 0):
            ctype = PointerType(lambda target=ctype: target)
        return ctype

    def find_named_type(self, keyword: str | None, name: str, is_base: bool,
                        near_pc: int | None = None) -> CType | None:
        """ModuleDebugInfo.find_named_type."""
        module = self._module
        if is_base:
            names, tag_groups = _BASE_SPELLINGS.get(name, (name,)), (("DW_TAG_base_type",),)
        elif keyword is not None:
            names, tag_groups = (name,), (_TAG_KEYWORDS[keyword],)
        else:
            names, tag_groups = (name,), _BARE_NAME_TAGS
        entries = [e for n in names for e in module._dwarf.type_entries(n)]
        for tags in tag_groups:
            chosen = self._choose_type_entry([e for e in entries if e[0] in tags], near_pc)
            if chosen is not None:
                return module._types.build(module._dwarf.die_at(chosen))
        return self._rust_type(name, near_pc) if module._elf.symbols.rust_names else None

    def _rust_type(self, name: str, near_pc: int | None) -> CType | None:
        """A Rust type, nested in its module's namespace, by its path or
        trailing components (`Pair`, `orders::Order`), one in the compile
        unit holding `near_pc` first."""
        pattern = parse_cpp_name(name)
        if pattern is None:
            return None
        dwarf, found = self._module._dwarf, []
        for die in dwarf.dies_named(pattern.leaf, TYPE_TAGS, limit=64):
            if not is_rust_cu(die.cu) or "DW_AT_declaration" in die.attributes:
                continue
            ctype = self._module._types.build(die)
            scope = getattr(ctype, "scope", "")
            path = parse_cpp_name(f"{scope}::{pattern.leaf}" if scope else pattern.leaf)
            if path is not None and matches(pattern, path):
                found.append((die.cu.cu_offset, ctype))
        cu = dwarf.cu_for_address(near_pc) if near_pc is not None and found else None
        local = [t for offset, t in found if cu is not None and offset == cu.cu_offset]
        return (local or [t for _, t in found] or [None])[0]

    def _choose_type_entry(self, entries, near_pc: int | None) -> int | None:
        definitions = [off for _, off, declaration in entries if not declaration]
        dwarf = self._module._dwarf
        if near_pc is not None and definitions:
            cu = dwarf.cu_for_address(near_pc)
            if cu is not None:
                start, end = dwarf.cu_range(cu.cu_offset)
                local = [off for off in definitions if start <= off < end]
                if local:
                    return local[0]
        if definitions:
            return definitions[0]
        return entries[0][1] if entries else None

    def find_enumerator(self, name: str, near_pc: int | None = None):
        """ModuleDebugInfo.find_enumerator."""
        dwarf = self._module._dwarf
        dies = dwarf.dies_named(name, ("DW_TAG_enumerator",), ("DW_AT_const_value",))
        if not dies:
            return None
        cu = dwarf.cu_for_address(near_pc) if near_pc is not None else None
        local = [d for d in dies if cu is not None and d.cu.cu_offset == cu.cu_offset]
        enumeration = _enumeration_holding((local or dies)[0])
        if enumeration is None:
            return None
        enum = self._module._types.build(enumeration)
        value = dict(enum.enumerators).get(name)
        return None if value is None else (enum, value)

    def struct_member_offsets(self, name: str, members: tuple[str, ...]) -> dict[str, int] | None:
        """ModuleDebugInfo.struct_member_offsets."""
        dwarf = self._module._dwarf
        for tag, offset, declaration in dwarf.type_entries(name):
            if tag == "DW_TAG_structure_type" and not declaration:
                found = _member_offsets(dwarf.die_at(offset), members)
                if found is not None:
                    return found
        return None


def _enumeration_holding(enumerator):
    """The DW_TAG_enumeration_type an enumerator DIE found by a raw search
    belongs to: its enumerators are its first children, so it is the last
    enumeration type before the enumerator in its CU (a DIE parsed on its
    own has no parent link in pyelftools)."""
    holder = None
    try:
        for die in enumerator.cu.iter_DIEs():
            if die.offset == enumerator.offset:
                return holder
            if die.tag == "DW_TAG_enumeration_type":
                holder = die
    except (ValueError, KeyError, IndexError):
        return None
    return None


def _member_offsets(struct_die, members: tuple[str, ...]) -> dict[str, int] | None:
    found = {}
    for child in struct_die.iter_children():
        location = child.attributes.get("DW_AT_data_member_location")
        name = die_name(child)
        if child.tag == "DW_TAG_member" and name in members and location is not None and \
                isinstance(location.value, int):
            found[name] = location.value
    return found if len(found) == len(members) else None
