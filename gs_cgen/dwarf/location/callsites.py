"""Entry values from call sites (DWARF 5 section 3.4.2): when a callee has
overwritten the register a parameter arrived in, the caller's
DW_TAG_call_site_parameter often says how it computed the argument
(DW_AT_call_value), in terms of registers the callee never touches. gdb
prints such values as `a=a@entry=3`. The callers may be in any CU of the
module (gdb finds the call site by the return address, wherever it is).
"""
from __future__ import annotations

import struct

from gs_cgen.dwarf.location.expression import (CONSTANT_OPS, breg_operands, decode_ops, is_simd, numbered,
                                      register_operand)
from gs_cgen.dwarf.index import DwarfIndex, die_name
from gs_cgen.dwarf.model import ValueExpression, register_name

_PARAMETER_REFS = ("DW_AT_call_parameter", "DW_AT_abstract_origin")
_CALL_SITE_TAGS = ("DW_TAG_call_site", "DW_TAG_GNU_call_site")
_PARAMETER_TAGS = ("DW_TAG_call_site_parameter", "DW_TAG_GNU_call_site_parameter")
_ORIGIN_ATTRS = ("DW_AT_call_origin", "DW_AT_abstract_origin")
_VALUE_ATTRS = ("DW_AT_call_value", "DW_AT_GNU_call_site_value")
_RETURN_PC_ATTRS = ("DW_AT_call_return_pc", "DW_AT_low_pc")
_BINARY = {"DW_OP_plus": "+", "DW_OP_minus": "-", "DW_OP_mul": "*", "DW_OP_and": "&",
           "DW_OP_or": "|", "DW_OP_xor": "^", "DW_OP_shl": "<<", "DW_OP_shr": ">>",
           "DW_OP_shra": ">>a"}
_UNARY = {"DW_OP_not": "~", "DW_OP_neg": "neg"}
# Registers a callee must preserve (System V x86-64): rbx, rbp, r12-r15.
CALLEE_SAVED = frozenset({3, 6, 12, 13, 14, 15})


def call_site_values(call_sites, register: int, written, saved=None, frame_base=None) -> \
        list[tuple[int, ValueExpression]]:
    """(return_pc, value) for every call site DIE among `call_sites` that
    says how it computed the argument passed in `register`. `written`
    holds the callee's written register names, whose caller values are
    gone; `frame_base(return_pc)` is the caller's frame base at that call
    as a tree at the callee's PC (DW_OP_fbreg in a call value), or None."""
    found = []
    for die in call_sites:
        return_pc = next((die.attributes[a].value for a in _RETURN_PC_ATTRS
                          if a in die.attributes), None)
        value = _argument(die, register, die.cu.structs, written, saved,
                          _frame_base_of(frame_base, return_pc))
        if return_pc is not None and value is not None:
            found.append((return_pc, value))
    return found


def calls_to(index: DwarfIndex, callee) -> list:
    """The DW_TAG_call_site DIEs, in every CU of the module, of the calls
    to the function DIE `callee`: those in its own CU name it (or its
    abstract instance, or its declaration) by a CU-relative reference;
    those in other CUs name a declaration of it, which only an external
    function can have. Found by raw searches (index.references_to,
    index.dies_named), never a walk of a CU, and kept in the index cache
    by build-id: an index of call sites by callee, built callee by callee."""
    name = f"calls-v2-{callee.offset}"     # v2: with _in_its_cus_code
    offsets = index.cached(name, _offsets_from_plain)
    if offsets is None:
        offsets = sorted({die.offset for die in _find_calls(index, callee)})
        index.store(name, offsets)
    return [index.die_at(offset) for offset in offsets]


def _find_calls(index: DwarfIndex, callee):
    targets = _same_function(index, callee)
    if any("DW_AT_external" in die.attributes for die in targets):
        names = {die_name(die) for die in targets} - {None}
        for function in names:
            targets += [die for die in index.dies_named(function, ("DW_TAG_subprogram",),
                                                        ("DW_AT_declaration",))
                        if die.cu.cu_offset != callee.cu.cu_offset]
    for target in targets:
        for die in index.references_to(target, _ORIGIN_ATTRS, _CALL_SITE_TAGS):
            if any(_points_to(die, a, target) for a in _ORIGIN_ATTRS) and \
                    _in_its_cus_code(index, die):
                yield die


def _in_its_cus_code(index: DwarfIndex, die) -> bool:
    """The call returns into a function of the call site's own CU. A raw
    search's hit can decode as a DIE inside another one's bytes (pyrsistent
    -O3: a "call site" returning to 0xa00000000001908 whose children do not
    parse): a real call site is in its CU's code."""
    return_pc = next((die.attributes[a].value for a in _RETURN_PC_ATTRS if a in die.attributes),
                     None)
    return isinstance(return_pc, int) and return_pc > 0 and \
        index.in_code_of(return_pc - 1, die.cu.cu_offset)


def _same_function(index: DwarfIndex, die) -> list:
    """`die` and the DIEs its DW_AT_abstract_origin / DW_AT_specification
    chain passes through: a call site may name any of them."""
    chain = [die]
    for _ in range(4):
        ref = next((a for a in ("DW_AT_abstract_origin", "DW_AT_specification")
                    if a in chain[-1].attributes), None)
        if ref is None:
            break
        chain.append(chain[-1].get_DIE_from_attribute(ref))
    return chain


def _refers_to(die, attribute: str, offset: int) -> bool:
    attr = die.attributes.get(attribute)
    return attr is not None and attr.form == "DW_FORM_ref4" and \
        attr.value + die.cu.cu_offset == offset


def _points_to(die, attribute: str, target) -> bool:
    attr = die.attributes.get(attribute)
    return attr is not None and attr.form == "DW_FORM_ref4" and \
        attr.value + die.cu.cu_offset == target.offset


def _offsets_from_plain(plain) -> list[int]:
    if not all(isinstance(offset, int) for offset in plain):
        raise TypeError("call-site offsets")
    return list(plain)


def call_site_parameter_values(call_sites, parameter: int, written, saved=None,
                               frame_base=None) -> \
        list[tuple[int, ValueExpression]]:
    """(return_pc, value) for every call site that says what it passed for
    the parameter DIE at `parameter` (DW_OP_GNU_parameter_ref: a parameter
    GCC removed from a clone; the call site names it by DW_AT_call_parameter
    or DW_AT_abstract_origin instead of a register)."""
    found = []
    for die in call_sites:
        return_pc = next((die.attributes[a].value for a in _RETURN_PC_ATTRS
                          if a in die.attributes), None)
        for param in die.iter_children():
            if param.tag in _PARAMETER_TAGS and any(
                    _refers_to(param, a, parameter) for a in _PARAMETER_REFS):
                value = _value_of(param, written, saved, _frame_base_of(frame_base, return_pc))
                if return_pc is not None and value is not None:
                    found.append((return_pc, value))
    return found


def _frame_base_of(frame_base, return_pc):
    """The caller's frame base at the call returning to `return_pc`, as a
    callable for translate_value (computed only for a DW_OP_fbreg)."""
    if frame_base is None or not isinstance(return_pc, int):
        return None
    return lambda: frame_base(return_pc)


def caller_frame_base(rule, callee_cfa, written, saved) -> tuple | None:
    """The caller's frame base as a tree at the callee's PC, from what it
    is at the caller's call instruction, `rule` = (register, offset): the
    caller's CFA rule (DW_AT_frame_base DW_OP_call_frame_cfa, gcc) or its
    frame base register (DW_OP_reg7 rsp or DW_OP_reg6 rbp, clang). There
    rsp is what it is when the call returns: the callee's CFA,
    `callee_cfa` = (register, offset) at the callee's PC. Another register
    is the caller's only if callee-saved (_caller_register). None when
    either is unknown."""
    if not isinstance(rule, tuple) or not isinstance(callee_cfa, tuple):
        return None
    register, offset = rule
    if register_name(register) == "rsp":
        return ("reg", callee_cfa[0], callee_cfa[1] + offset)
    caller = _caller_register(register, written, saved)
    if caller is None:
        return None
    if caller[0] == "reg":
        return ("reg", caller[1], caller[2] + offset)
    return ("+", caller, ("const", offset)) if offset else caller


def _value_of(param, written, saved=None, frame_base=None) -> ValueExpression | None:
    value_attr = next((param.attributes[a] for a in _VALUE_ATTRS if a in param.attributes), None)
    if value_attr is None:
        return None
    ops = decode_ops(value_attr.value, param.cu.structs)
    return translate_value(ops, written, saved, frame_base) if isinstance(ops, list) else None


def _argument(call_site, register: int, structs, written, saved=None,
              frame_base=None) -> ValueExpression | None:
    for param in call_site.iter_children():
        if param.tag not in _PARAMETER_TAGS or "DW_AT_location" not in param.attributes:
            continue
        where = decode_ops(param.attributes["DW_AT_location"].value, structs)
        if not isinstance(where, list) or len(where) != 1 or register_operand(where[0]) != register:
            continue
        value_attr = next((param.attributes[a] for a in _VALUE_ATTRS if a in param.attributes),
                          None)
        if value_attr is None:
            return None
        ops = decode_ops(value_attr.value, structs)
        if not isinstance(ops, list):
            return None
        return _simd_argument(ops) if is_simd(register) else \
            translate_value(ops, written, saved, frame_base)
    return None


def _simd_argument(ops) -> ValueExpression | None:
    """What a caller passed in a SIMD register (a float or double), as the
    register's bits: a constant only. GCC writes a float constant as one
    DW_OP_const_type, whose bits are the value; anything computed would be
    floating-point arithmetic or an integer's bits, which no probe may take
    for the number."""
    values = [op for op in ops if op.op_name != "DW_OP_stack_value"]
    if len(values) == 1 and values[0].op_name in ("DW_OP_const_type", "DW_OP_GNU_const_type"):
        data = bytes(values[0].args[1])
        return ValueExpression(("const", int.from_bytes(data, "little"))) if len(data) <= 8 else None
    plain = translate_value(ops, frozenset())
    return plain if plain is not None and plain.tree[0] == "const" else None


def _caller_register(reg: int, written, saved: dict[int, tuple] | None) -> tuple | None:
    """The caller's value of register `reg` at the callee's PC. `saved`
    (from the callee's CFI at that PC, None when there is none) maps each
    register the callee has saved to where (a tree); a callee-saved
    register it has not saved there still holds the caller's value, as
    gdb's unwinder assumes. Without CFI: only registers the callee never
    writes."""
    if reg not in CALLEE_SAVED:
        return None
    if saved is not None:
        return saved.get(reg, ("reg", reg, 0))
    return None if register_name(reg) in written else ("reg", reg, 0)


def translate_value(ops, written, saved: dict[int, tuple] | None = None,
                    frame_base=None) -> ValueExpression | None:
    """Symbolically run a DWARF stack program over 64-bit values; None when
    it uses anything the probe cannot know at the callee's PC. A caller's
    DW_OP_fbreg needs `frame_base()`, its frame base as a tree (else
    None); DW_OP_deref reads the memory when the probe runs, as gdb reads
    it when it shows `x@entry`."""
    stack: list[tuple] = []
    try:
        for op in ops:
            name = op.op_name
            if numbered(name, "DW_OP_lit") is not None:
                stack.append(("const", numbered(name, "DW_OP_lit")))
            elif name in CONSTANT_OPS:        # not DW_OP_const_type: a typed value
                stack.append(("const", op.args[0]))
            elif breg_operands(op) is not None:
                reg, offset = breg_operands(op)
                caller = _caller_register(reg, written, saved)
                if caller is None:
                    return None
                if caller[0] == "reg":
                    stack.append(("reg", reg, offset))
                else:
                    stack.append(("+", caller, ("const", offset)) if offset else caller)
            elif name == "DW_OP_addr":        # a static object's address
                stack.append(("static", op.args[0]))
            elif name == "DW_OP_fbreg":
                base = frame_base() if frame_base is not None else None
                if base is None:
                    return None
                stack.append(("+", base, ("const", op.args[0])) if op.args[0] else base)
            elif name == "DW_OP_deref":
                stack.append(("deref", stack.pop(), 8))
            elif name == "DW_OP_deref_size" and 1 <= op.args[0] <= 8:
                stack.append(("deref", stack.pop(), op.args[0]))
            elif name == "DW_OP_plus_uconst":
                stack.append(("+", stack.pop(), ("const", op.args[0])))
            elif name in _BINARY:
                right, left = stack.pop(), stack.pop()
                stack.append((_BINARY[name], left, right))
            elif name in _UNARY:
                stack.append((_UNARY[name], stack.pop()))
            elif name == "DW_OP_stack_value":
                continue
            else:
                return None
    except IndexError:
        return None
    return ValueExpression(stack[-1]) if len(stack) == 1 else None


# ------------------------------------------------------------ tail calls
_TAIL_CALL_ATTRS = ("DW_AT_call_tail_call", "DW_AT_GNU_tail_call")


def tail_call_return(index: DwarfIndex, return_pc: int, callee) -> int | None:
    """gdb's tail-call frame (frame-tailcall.c), one call deep: the caller
    returning to `return_pc` called function T there, but the frame below
    it runs `callee` (a FunctionEntry), which T tail-called (jmp). Then T's
    tail call site's return PC, where gdb shows T's frame; else None."""
    site = _call_site_returning_to(index, return_pc)
    if site is None or not _target_known_to_gdb(index, site):
        return None
    target = _origin_name(index, site)
    if target is None or target == callee.name:
        return None
    found = None
    for die in calls_to(index, index.die_at(callee.die_offset)):
        if not any(a in die.attributes for a in _TAIL_CALL_ATTRS):
            continue
        if not _target_known_to_gdb(index, die):
            return None                  # gdb's chain stops there: no frame
        pc = next((die.attributes[a].value for a in _RETURN_PC_ATTRS if a in die.attributes), None)
        hit = index.function_at(pc - 1) if isinstance(pc, int) and pc else None
        if hit is not None and hit[1].name == target:
            if found is not None:
                return None              # two ways: gdb shows neither
            found = pc
    return found


def _call_site_returning_to(index: DwarfIndex, return_pc: int):
    """The DW_TAG_call_site whose return PC is `return_pc`, in the CU of
    the code it returns into (a raw search for the 8-byte address)."""
    hit = index.function_at(return_pc - 1)
    if hit is None:
        return None
    start, end = index.cu_range(hit[0].cu_offset)
    for pos in index.find_bytes(struct.pack("<Q", return_pc), 16, start, end):
        die = index.die_with_attribute_at(pos, _RETURN_PC_ATTRS, _CALL_SITE_TAGS)
        if die is not None and _in_its_cus_code(index, die):
            return die
    return None


def _target_known_to_gdb(index: DwarfIndex, site) -> bool:
    """Whether gdb 13 knows the address a call site calls without a frame
    (read_call_site_scope): its DW_AT_call_origin is a declaration (found
    by name) or a definition with an address. An abstract instance (a
    function also inlined elsewhere: gcc's origin for its out-of-line
    copy) or a DW_AT_call_target expression is "not specified", and gdb
    then shows no tail-call frame (SQLite's sqlite3_bind_text -> bindText)."""
    attr = next((site.attributes[a] for a in _ORIGIN_ATTRS if a in site.attributes), None)
    if attr is None or attr.form != "DW_FORM_ref4" or \
            any(a in site.attributes for a in ("DW_AT_call_target", "DW_AT_GNU_call_site_target")):
        return False
    origin = index.die_at(attr.value + site.cu.cu_offset)
    return "DW_AT_declaration" in origin.attributes or bool(index.die_ranges(origin))


def _origin_name(index: DwarfIndex, site) -> str | None:
    """The name of the function a call site calls (DW_AT_call_origin: its
    definition, abstract instance or declaration)."""
    attr = next((site.attributes[a] for a in _ORIGIN_ATTRS if a in site.attributes), None)
    if attr is None or attr.form != "DW_FORM_ref4":
        return None
    chain = _same_function(index, index.die_at(attr.value + site.cu.cu_offset))
    return next((name for name in map(die_name, chain) if name), None)
