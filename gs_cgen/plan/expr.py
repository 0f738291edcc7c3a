"""Script expressions → places and scalars (plan/ir.py) at one probe PC.

Name lookup follows CONTRACT.md: script `let` aliases, then locals and
parameters visible at the PC, then globals of the probed module. Type rules
follow C (plan/arith.py); pointer arithmetic scales by the pointee size.
"""
from __future__ import annotations

from gs_cgen.dwarf.model import VariableLocation
from gs_cgen.dwarf.types import (ArrayType, ComplexType, CType, FloatType, FunctionType,
                                 PointerType, StructType, VectorType, VoidType, strip, type_name,
                                 type_size)
from gs_cgen.errors import DebugInfoError, PlanError, UnsupportedError, nearest
from gs_cgen.plan import arith
from gs_cgen.printers.rust import std_collection, std_sequence
from gs_cgen.plan import ir
from gs_cgen.plan.cppaccess import cpp_pointee, cpp_element, cpp_length
from gs_cgen.printers import cpp
from gs_cgen.printers.layout import Kind
from gs_cgen.plan.builtins import known_bytes_cap, plan_builtin
from gs_cgen.plan.casts import cast_place, cast_type
from gs_cgen.plan.locations import (SYNTHETIC_POINTER, LocationPlanner, composite_value,
                                    sub_place)
from gs_cgen.plan.members import MemberPath, VirtualBaseStep, lookup_member
from gs_cgen.plan.model import THREAD_POINTER_NOT_READ, ThreadPointer, module_cookie
from gs_cgen.plan.scope import NOT_IN_SCOPE, SiteScope
from gs_cgen.script import ast

_HEADER_SPECIALS = {"pid": "pid", "tid": "tid", "host_pid": "host_pid",
                    "timestamp": "timestamp_ns"}
# The probed thread's registers at the probe: the kernel sets ip to the
# probed instruction's run-time address before uprobe programs run.
_REGISTER_SPECIALS = {"pc": "ip", "sp": "sp"}
_ARITH = {ast.BinaryOp.ADD, ast.BinaryOp.SUB, ast.BinaryOp.MUL, ast.BinaryOp.DIV,
          ast.BinaryOp.MOD, ast.BinaryOp.BIT_AND, ast.BinaryOp.BIT_OR, ast.BinaryOp.BIT_XOR}
_COMPARE = {ast.BinaryOp.EQ, ast.BinaryOp.NE, ast.BinaryOp.LT, ast.BinaryOp.LE,
            ast.BinaryOp.GT, ast.BinaryOp.GE}


class ExprPlanner:
    """Plans expressions for one probe site; `scopes` holds `let` aliases,
    `site_scope` the DWARF variables of this site and of the block's others."""

    def __init__(self, module, modules, site_scope: SiteScope, where: str, input_pid: int | None,
                 compare_cap: int, source_text: str, probe_address: int = 0,
                 no_variables: str | None = None,
                 thread_pointer: ThreadPointer = THREAD_POINTER_NOT_READ) -> None:
        self.module, self.modules, self.where = module, modules, where
        self.thread_pointer = thread_pointer
        self.site_scope = site_scope
        self.probe_address = probe_address
        self.no_variables = no_variables     # why the site has no DWARF variables
        self.source_text = source_text
        self.input_pid, self.compare_cap = input_pid, compare_cap
        self.scopes: list[dict[str, ir.Place]] = [{}]

    # ------------------------------------------------------------- places
    def place(self, expr: ast.Expr) -> ir.Place:
        return self.referent(self._place(expr), expr)

    def referent(self, place: ir.Place, expr: ast.Expr) -> ir.Place:
        """A C++ reference (`int &x`, `int (&a)[10]`) stands for the object
        it refers to, as in C++ and gdb: `x + 1`, `a[3]`, `r.field`."""
        ctype = strip(getattr(place, "ctype", None))
        if not (isinstance(ctype, PointerType) and ctype.reference):
            return place
        if isinstance(place, ir.UnavailablePlace):
            return _unavailable(place, ctype.target)
        if isinstance(place, ir.SyntheticPointerPlace):
            return place.target
        pointer, _ = self.value(place, expr)
        return ir.MemoryPlace(ir.NonNull(pointer), ctype.target)

    def _place(self, expr: ast.Expr) -> ir.Place:
        match expr:
            case ast.IntLiteral(value=v, decimal=decimal):
                return ir.ValuePlace(ir.Const(v), arith.literal_type(v, decimal))
            case ast.BoolLiteral(value=v):
                return ir.ValuePlace(ir.Const(int(v)), arith.BOOL)
            case ast.StringLiteral(value=v):
                return ir.StringPlace(v)
            case ast.SpecialVar():
                return self._special(expr)
            case ast.Name(ident=ident):
                return self._name(ident, expr)
            case ast.Member():
                return self._member(expr)
            case ast.Index():
                return self._index(expr)
            case ast.Unary():
                return self._unary(expr)
            case ast.Binary():
                return self._binary(expr)
            case ast.Cast():
                return self._cast(expr)
            case ast.Call(function="raw"):
                raise PlanError("raw(x) can only be printed: `print raw(x);`", expr.span)
            case ast.Call(function="len", args=(argument,)):
                return ir.ValuePlace(self.std_length(argument), arith.ULONG)
            case ast.Call():
                return ir.ValuePlace(plan_builtin(self, expr), arith.BOOL)
        raise UnsupportedError(f"not supported yet: {type(expr).__name__}", expr.span)

    def _special(self, expr: ast.SpecialVar) -> ir.Place:
        if expr.ident == "input_pid":
            if self.input_pid is None:
                raise PlanError("$input_pid is only available with -p PID", expr.span)
            return ir.ValuePlace(ir.Const(self.input_pid), arith.INT)
        if expr.ident in _REGISTER_SPECIALS:
            return ir.ValuePlace(ir.RegisterValue(_REGISTER_SPECIALS[expr.ident]), arith.ULONG)
        field = _HEADER_SPECIALS.get(expr.ident)
        if field is None and expr.ident in ("args", "locals"):
            # A list, not a value: `print $args;` only (plan/variables.py).
            raise PlanError(f"'${expr.ident}' is a list of variables: it can only be printed "
                            f"on its own", expr.span, hints=(f"print ${expr.ident};",))
        if field is None:
            valid = ", ".join(f"${k}" for k in (*_HEADER_SPECIALS, "input_pid",
                                                  *_REGISTER_SPECIALS))
            raise PlanError(f"unknown special variable '${expr.ident}' (valid: {valid})",
                            expr.span)
        ctype = arith.ULONG if field == "timestamp_ns" else arith.INT
        return ir.ValuePlace(ir.HeaderField(field), ctype)

    def _name(self, ident: str, expr: ast.Name) -> ir.Place:
        for scope in reversed(self.scopes):
            if ident in scope:
                return scope[ident]
        var = self.site_scope.visible.get(ident)
        if var is not None:
            return self.location_place(var.location, var.type)
        try:
            found = self.modules.find_global(ident, self.module)
        except (DebugInfoError, PlanError) as exc:   # several objects, several modules
            exc.span = exc.span or expr.span
            raise
        if found is not None:
            owner, glob = found
            return self.location_place(glob.location, glob.type, owner)
        var = self.site_scope.elsewhere.get(ident)
        if var is not None:
            # In scope at another site of this block: absent here, not an error.
            return ir.UnavailablePlace(var.type, NOT_IN_SCOPE, True)
        enumerator = self.module.find_enumerator(ident, self.probe_address) \
            if self.module.has_debug_info else None
        if enumerator is not None:
            enum, value = enumerator
            return ir.ValuePlace(ir.Const(value), enum)
        pool = [n for s in self.scopes for n in s] + self.site_scope.names() + \
            self.modules.global_names(self.module)
        if self.no_variables:
            raise PlanError(f"no variable '{ident}' at {self.where}: {self.no_variables}",
                            expr.span, hints=("special variables such as $pid and $tid, and "
                                              "globals, can be read there",))
        raise PlanError(f"no variable '{ident}' at {self.where}", expr.span,
                        candidates=nearest(ident, pool))

    def static_address(self, address: int, owner=None) -> ir.Scalar:
        owner = owner or self.module
        cookie = module_cookie(owner.path, owner.build_id)
        return ir.ModuleAddress(cookie, owner.section_of(address), address)

    def location_place(self, location: VariableLocation, ctype: CType, owner=None) -> ir.Place:
        """The place of a DWARF variable of module `owner` (default: the
        probe's), by plan/locations.py."""
        owner = owner or self.module
        planner = LocationPlanner(lambda address: self.static_address(address, owner),
                                  self.probe_address,
                                  lambda offset, t: self._thread_local_place(offset, t, owner))
        return planner.place(location, ctype)

    def variable_array_bytes(self, array: ArrayType, expr: ast.Expr) -> ir.Scalar:
        """The size in bytes of the C99 variable-length array `array` at the
        probe, computed there from its DWARF bound (ModuleDebugInfo.array_bound);
        an ir.Fail with the reason when it cannot be."""
        element = strip(array.element)
        if array.bound_die is None or getattr(element, "variable_length", False) \
                or not type_size(element):
            return ir.Fail("GS_STATUS_UNAVAILABLE", "unsupported: a variable-length array whose "
                           "elements have no fixed size; print its elements ([0], [1], ...)")
        try:
            bound = self.module.array_bound(array.bound_die, self.probe_address)
        except DebugInfoError as exc:
            return ir.Fail("GS_STATUS_UNAVAILABLE", exc.message)
        if bound is None:
            return ir.Fail("GS_STATUS_UNAVAILABLE", "unsupported: a variable-length array "
                           "bound in this DWARF form")
        place = self.location_place(bound.location, arith.ULONG)
        if bound.computed and isinstance(place, ir.MemoryPlace):
            value = place.address                 # the expression's result is the bound
        else:
            value, _ = self.value(place, expr)
        if isinstance(value, ir.Fail):
            return ir.Fail(value.status, f"its length is unknown here: {value.reason}")
        count = value if bound.is_count else \
            ir.BinaryOp("+", value, ir.Const(1 - bound.lower), False)
        return ir.BinaryOp("*", count, ir.Const(type_size(element)), False)

    def _thread_local_place(self, offset: int, ctype: CType, owner) -> ir.Place:
        """A __thread object: `offset` into `owner`'s TLS block of the
        thread that hit the probe (DESIGN.md "Static TLS")."""
        if self.thread_pointer.fsbase_offset is None:
            return ir.UnavailablePlace(ctype, "thread-local storage unreadable: "
                                       + self.thread_pointer.unknown_reason, False)
        block = ir.ThreadLocalBase(module_cookie(owner.path, owner.build_id))
        return ir.MemoryPlace(ir.BinaryOp("+", block, ir.Const(offset), False), ctype)

    # ----------------------------------------------------- member / index
    def _member(self, expr: ast.Member) -> ir.Place:
        base = self.place(expr.base)
        ctype = declared = self._ctype_of(base, expr.base)
        if (held := self._smart_pointee(base, ctype, expr.field, expr.base)) is not None:
            base, ctype = held, held.ctype      # p->name of a unique_ptr / shared_ptr
        pointer = arith.is_pointer(ctype)       # a.b auto-dereferences pointers
        if pointer:
            ctype = strip(ctype).target
        struct = strip(ctype)
        if not isinstance(struct, StructType):
            raise PlanError(f"'{self._text(expr.base)}' has type '{type_name(declared)}', "
                            f"which has no member '{expr.field}'", expr.span)
        if isinstance(base, ir.UnavailablePlace):
            return _unavailable(base, lookup_member(struct, expr).member.type)
        if pointer and isinstance(base, ir.SyntheticPointerPlace):
            base = base.target
        elif pointer:
            value, _ = self.value(base, expr.base)
            base = ir.MemoryPlace(ir.NonNull(value), ctype)
        if isinstance(base, (ir.CompositePlace, ir.KnownBytesPlace, ir.UnavailablePlace)):
            return _part_member(base, struct, expr)
        if isinstance(base, ir.ValuePlace) and struct.size <= 8:
            return _register_member(base.value, struct, expr)
        if not isinstance(base, ir.MemoryPlace):
            raise UnsupportedError("not supported yet: members of a struct held in registers",
                                   expr.span)
        return _member_place(base.address, struct, expr)

    def _index(self, expr: ast.Index) -> ir.Place:
        base = self.place(expr.base)
        ctype = strip(self._ctype_of(base, expr.base))
        index, index_type = self.value(self.place(expr.index), expr.index)
        if not arith.is_integer(index_type):
            raise PlanError("an index must be an integer", expr.index.span)
        if isinstance(base, ir.UnavailablePlace) and isinstance(ctype, (ArrayType, VectorType,
                                                                         PointerType)):
            return _unavailable(base, ctype.target if isinstance(ctype, PointerType)
                                else ctype.element)
        if isinstance(base, ir.SyntheticPointerPlace):
            base, ctype = base.target, ArrayType(ctype.target, None)
        if isinstance(ctype, (ArrayType, VectorType)) and not isinstance(base, ir.MemoryPlace):
            return self._part_element(base, ctype.element, index, expr)
        if isinstance(ctype, (ArrayType, VectorType)) and isinstance(base, ir.MemoryPlace):
            start, element = base.address, ctype.element
        elif isinstance(ctype, PointerType):
            pointer, _ = self.value(base, expr.base)
            start, element = ir.NonNull(pointer), ctype.target
        elif isinstance(base, ir.MemoryPlace) and std_sequence(ctype) is not None:
            return self._std_element(base, std_sequence(ctype), index, expr)
        elif isinstance(base, ir.MemoryPlace) and _is_cpp(ctype) and \
                (found := cpp_element(ctype, index, self._word_of(base, expr),
                                      base.address)) is not None:
            return found
        else:
            raise PlanError(f"'{self._text(expr.base)}' of type '{type_name(ctype)}' cannot be "
                            "indexed", expr.span)
        offset = ir.BinaryOp("*", index, ir.Const(type_size(element) or 1), True)
        return ir.MemoryPlace(ir.BinaryOp("+", start, offset, False), element)

    def _std_element(self, base: ir.MemoryPlace, shape, index: ir.Scalar,
                     expr: ast.Index) -> ir.Place:
        """Element `index` of a Rust Vec / slice / String (its data
        pointer and length read in the probe); an index past the length
        reads nothing (the address is then 0: a null dereference)."""
        word = lambda at: self.value(ir.MemoryPlace(  # noqa: E731
            ir.BinaryOp("+", base.address, ir.Const(at), False), arith.ULONG), expr)[0]
        size = type_size(shape.element) or 1
        inside = ir.BinaryOp("<", index, word(shape.length_offset), False)
        address = ir.BinaryOp("+", word(shape.pointer_offset),
                              ir.BinaryOp("*", index, ir.Const(size), True), False)
        return ir.MemoryPlace(ir.NonNull(ir.BinaryOp("*", address, inside, False)), shape.element)

    def std_length(self, expr: ast.Expr) -> ir.Scalar:
        """`len(x)`: a Rust string's bytes, a collection's elements (read
        in the probe), a C array's declared count."""
        place = self.place(expr)
        ctype = strip(self._ctype_of(place, expr))
        if isinstance(ctype, ArrayType) and ctype.count is not None:
            return ir.Const(ctype.count)
        if _is_cpp(ctype) and isinstance(place, ir.MemoryPlace):
            length = cpp_length(ctype, self._word_of(place, expr))
            if length is not None:
                return length
            if cpp.layout(ctype).kind is Kind.CHAIN:
                raise PlanError(f"len() of '{self._text(expr)}' of type '{type_name(ctype)}': "
                                "a std::forward_list keeps no length", expr.span)
        shape = std_collection(ctype)
        if shape is None or not isinstance(place, ir.MemoryPlace):
            raise PlanError(f"len() of '{self._text(expr)}' of type '{type_name(ctype)}': "
                            "not a string, collection or array gs-cgen knows", expr.span)
        return self.value(ir.MemoryPlace(ir.BinaryOp("+", place.address, ir.Const(shape), False),
                                         arith.ULONG), expr)[0]

    def _smart_pointee(self, base: ir.Place, ctype, field: str | None,
                       expr: ast.Expr) -> ir.MemoryPlace | None:
        """The object a std::unique_ptr / shared_ptr at `base` owns, when
        `field` (None: `*p`) is not one of the smart pointer's own members."""
        struct = strip(ctype)
        if not (isinstance(base, ir.MemoryPlace) and _is_cpp(struct) and isinstance(struct, StructType)):
            return None
        if field is not None and any(m.name == field for m in struct.members):
            return None
        found = cpp_pointee(struct, self._word_of(base, expr))
        return None if found is None else ir.MemoryPlace(ir.NonNull(found[0]), found[1])

    def _word_of(self, place: ir.MemoryPlace, expr: ast.Expr):
        """Reads of unsigned integers at offsets of the object at `place`."""
        def word(at: int, size: int) -> ir.Scalar:
            ctype = arith.ULONG if size == 8 else arith.UINT
            return self.value(ir.MemoryPlace(ir.BinaryOp("+", place.address, ir.Const(at), False),
                                             ctype), expr)[0]
        return word

    # ------------------------------------------------------------- unary
    def _unary(self, expr: ast.Unary) -> ir.Place:
        if expr.op is ast.UnaryOp.ADDR_OF:
            base = self.place(expr.operand)
            if isinstance(base, ir.UnavailablePlace) and base.ctype is not None:
                return _unavailable(base, arith.pointer_to(base.ctype))
            if not isinstance(base, ir.MemoryPlace):
                raise PlanError(f"cannot take the address of '{self._text(expr.operand)}' "
                                "(it is not in memory)", expr.span)
            return ir.ValuePlace(base.address, arith.pointer_to(base.ctype))
        if expr.op is ast.UnaryOp.DEREF:
            return self._deref(expr)
        if expr.op is ast.UnaryOp.NOT:
            return ir.ValuePlace(arith.fold(ir.UnaryOp("!", self.truth(expr.operand))), arith.BOOL)
        value, ctype = self.integer(expr.operand)
        result = arith.promote(ctype)
        op = "-" if expr.op is ast.UnaryOp.NEG else "~"
        value = arith.narrow(value, result)
        return ir.ValuePlace(arith.narrow(arith.fold(ir.UnaryOp(op, value)), result), result)

    def _deref(self, expr: ast.Unary) -> ir.Place:
        base = self.place(expr.operand)
        ctype = strip(self._ctype_of(base, expr.operand))
        if isinstance(base, ir.UnavailablePlace) and isinstance(ctype, ArrayType):
            return _unavailable(base, ctype.element)
        if isinstance(ctype, ArrayType) and isinstance(base, ir.MemoryPlace):
            return ir.MemoryPlace(base.address, ctype.element)
        if not isinstance(ctype, PointerType):
            if (held := self._smart_pointee(base, ctype, None, expr.operand)) is not None:
                return held
            raise PlanError(f"cannot dereference '{self._text(expr.operand)}' of type "
                            f"'{type_name(ctype)}'", expr.span)
        if isinstance(strip(ctype.target), (VoidType, FunctionType)):
            raise PlanError(f"cannot dereference '{self._text(expr.operand)}' of type "
                            f"'{type_name(ctype)}' (cast it first)", expr.span)
        if isinstance(base, ir.UnavailablePlace):
            return _unavailable(base, ctype.target)
        if isinstance(base, ir.SyntheticPointerPlace):
            return base.target
        pointer, _ = self.value(base, expr.operand)
        return ir.MemoryPlace(ir.NonNull(pointer), ctype.target)

    def _part_element(self, base: ir.Place, element: CType, index: ir.Scalar,
                      expr: ast.Index) -> ir.Place:
        """An element of an array that is not in memory (pieces, a
        constant, the pointee of a synthetic pointer): the index must be
        known when the probe is planned."""
        if not isinstance(index, ir.Const):
            raise PlanError(f"'{self._text(expr.base)}' is not in memory at this PC: its "
                            "elements can only be indexed with a constant", expr.index.span)
        return sub_place(base, index.value * (type_size(element) or 1), element)

    # ------------------------------------------------------------ binary
    def _binary(self, expr: ast.Binary) -> ir.Place:
        if expr.op in (ast.BinaryOp.AND, ast.BinaryOp.OR):
            logical = ir.Logical(expr.op.value, self.truth(expr.left), self.truth(expr.right))
            return ir.ValuePlace(arith.fold(logical), arith.BOOL)
        left, right = self.place(expr.left), self.place(expr.right)
        if expr.op in _COMPARE:
            return ir.ValuePlace(self._compare(expr, left, right), arith.BOOL)
        if expr.op in (ast.BinaryOp.ADD, ast.BinaryOp.SUB) and (
                _is_pointerish(left) or _is_pointerish(right)):
            return self._pointer_arith(expr, left, right)
        lv, lt = self.integer_of(left, expr.left)
        rv, rt = self.integer_of(right, expr.right)
        # C converts the operands, not only the result: `/`, `%` and `>>` of
        # a 32-bit unsigned and a sign-extended negative int differ otherwise.
        # A shift's operands are promoted each on its own (C11 6.5.7).
        if expr.op in (ast.BinaryOp.SHL, ast.BinaryOp.SHR):
            result = arith.promote(lt)
            lv, rv = arith.narrow(lv, result), arith.narrow(rv, arith.promote(rt))
        else:
            result = arith.common_type(lt, rt)
            lv, rv = arith.narrow(lv, result), arith.narrow(rv, result)
        return ir.ValuePlace(arith.operate(expr.op.value, lv, rv, result), result)

    def _compare(self, expr: ast.Binary, left: ir.Place, right: ir.Place) -> ir.Scalar:
        strings = self._string_compare(expr, left, right)
        if strings is not None:
            return strings
        lv, lt = self.value(left, expr.left)
        rv, rt = self.value(right, expr.right)
        if arith.is_pointer(lt) or arith.is_pointer(rt):
            if expr.op not in (ast.BinaryOp.EQ, ast.BinaryOp.NE):
                raise PlanError("pointers can only be compared with == and !=", expr.span)
            return ir.BinaryOp(expr.op.value, lv, rv, False)
        self._require_integer(lt, expr.left)
        self._require_integer(rt, expr.right)
        common = arith.common_type(lt, rt)
        return arith.fold(ir.BinaryOp(expr.op.value, arith.narrow(lv, common),
                                      arith.narrow(rv, common), common.signed))

    def _string_compare(self, expr, left, right) -> ir.Scalar | None:
        if not isinstance(left, ir.StringPlace) and not isinstance(right, ir.StringPlace):
            return None
        if expr.op not in (ast.BinaryOp.EQ, ast.BinaryOp.NE):
            raise PlanError("strings can only be compared with == and !=", expr.span)
        if isinstance(left, ir.StringPlace) and isinstance(right, ir.StringPlace):
            equal = ir.Const(int(left.value == right.value))
        else:
            literal, other, other_expr = ((left, right, expr.right)
                                          if isinstance(left, ir.StringPlace)
                                          else (right, left, expr.left))
            if len(literal.value) > known_bytes_cap():
                raise PlanError(f"a string compared with == may have at most "
                                f"{known_bytes_cap()} bytes; this one has {len(literal.value)}",
                                expr.span)
            address = self.string_address(other, other_expr)
            equal = ir.BytesEqual(address, literal.value, "cstring")
        return equal if expr.op is ast.BinaryOp.EQ else ir.UnaryOp("!", equal)

    def _pointer_arith(self, expr: ast.Binary, left: ir.Place, right: ir.Place) -> ir.Place:
        if _is_pointerish(left) and _is_pointerish(right):
            raise PlanError("pointer - pointer and pointer + pointer are not supported",
                            expr.span)
        if _is_pointerish(right):
            if expr.op is ast.BinaryOp.SUB:
                raise PlanError("cannot subtract a pointer from an integer", expr.span)
            left, right, expr_l, expr_r = right, left, expr.right, expr.left
        else:
            expr_l, expr_r = expr.left, expr.right
        pointer, ptype = self.value(left, expr_l)
        offset, _ = self.integer_of(right, expr_r)
        if isinstance(strip(ptype), FunctionType) or arith.is_pointer(ptype) and \
                isinstance(strip(strip(ptype).target), FunctionType):
            raise PlanError("arithmetic on function pointers is not supported", expr.span)
        scaled = ir.BinaryOp("*", offset, ir.Const(arith.pointee_size(ptype)), True)
        return ir.ValuePlace(ir.BinaryOp(expr.op.value, pointer, scaled, False), ptype)

    # -------------------------------------------------------------- cast
    def _cast(self, expr: ast.Cast) -> ir.Place:
        return cast_place(self, expr, cast_type(self, expr))

    # ------------------------------------------------------------ helpers
    def _text(self, expr: ast.Expr) -> str:
        return expr.span.slice(self.source_text)

    def _ctype_of(self, place: ir.Place, expr: ast.Expr) -> CType:
        if isinstance(place, ir.StringPlace):
            raise PlanError("a string literal has no members or elements", expr.span)
        if place.ctype is None:
            raise PlanError(f"'{self._text(expr)}' has no type information", expr.span)
        return place.ctype

    def _require_integer(self, ctype: CType, expr: ast.Expr) -> None:
        self._refuse_wide(ctype, expr)
        if not arith.is_integer(ctype):
            raise PlanError(f"'{self._text(expr)}' of type '{type_name(ctype)}' is not an "
                            "integer", expr.span)

    def _refuse_wide(self, ctype: CType, expr: ast.Expr) -> None:
        """Values the probe can print but not compute with: it has 64-bit
        integer registers only."""
        base = strip(ctype)
        if not isinstance(base, (FloatType, ComplexType, VectorType)) and \
                not arith.is_wide_integer(base):
            return      # the common case: no message to build (slicing the script costs)
        what = f"'{self._text(expr)}' is a {type_name(ctype)}"
        if isinstance(base, FloatType):
            raise PlanError(f"{what}: floating-point arithmetic is not supported (eBPF has no "
                            "floating point); print the value itself", expr.span)
        if arith.is_wide_integer(base):
            raise PlanError(f"{what}: {8 * base.size}-bit integers cannot take part in "
                            "arithmetic or comparisons (the probe computes in 64 bits); "
                            "print the value itself", expr.span)
        if isinstance(base, ComplexType):
            raise PlanError(f"{what}: complex arithmetic is not supported; print the value "
                            "itself", expr.span)
        if isinstance(base, VectorType):
            raise PlanError(f"{what}: vector arithmetic is not supported; print the vector or "
                            f"one element ({self._text(expr)}[0])", expr.span)

    # ---------------------------------------------------- scalar values
    def value(self, place: ir.Place, expr: ast.Expr) -> tuple[ir.Scalar, CType]:
        """The 64-bit value of a scalar place; arrays decay to pointers."""
        match place:
            case ir.ValuePlace(value=v, ctype=t) | ir.BitFieldPlace(value=v, ctype=t):
                return v, arith.operand_type(v, t)
            case ir.UnavailablePlace(ctype=t, reason=reason, optimized_out=gone):
                status = "GS_STATUS_OPTIMIZED_OUT" if gone else "GS_STATUS_UNAVAILABLE"
                return ir.Fail(status, reason, self._text(expr)), t or arith.LONG
            case ir.StringPlace():
                raise PlanError("a string literal can only be compared or passed to a builtin",
                                expr.span)
            case ir.SyntheticPointerPlace(ctype=t):
                return ir.Fail("GS_STATUS_UNAVAILABLE", SYNTHETIC_POINTER), t
            case ir.CompositePlace(ctype=t) if type_size(t) <= 8 and arith.is_scalar(t):
                assembled = composite_value(place)
                if assembled is None:
                    return ir.Fail("GS_STATUS_OPTIMIZED_OUT", "partly optimized out",
                                   self._text(expr)), t
                return arith.narrow(assembled, t), t
        if isinstance(place, (ir.CompositePlace, ir.KnownBytesPlace)):
            raise PlanError(f"'{self._text(expr)}' of type '{type_name(place.ctype)}' is not a "
                            "number or pointer", expr.span)
        ctype, base = place.ctype, strip(place.ctype)
        if isinstance(base, ArrayType):
            return place.address, arith.pointer_to(base.element)
        self._refuse_wide(ctype, expr)
        if not arith.is_scalar(ctype):
            raise PlanError(f"'{self._text(expr)}' of type '{type_name(ctype)}' is not a number "
                            "or pointer", expr.span)
        return ir.Load(place.address, type_size(base), arith.signedness(base)), ctype

    def integer(self, expr: ast.Expr) -> tuple[ir.Scalar, CType]:
        return self.integer_of(self.place(expr), expr)

    def integer_of(self, place: ir.Place, expr: ast.Expr) -> tuple[ir.Scalar, CType]:
        value, ctype = self.value(place, expr)
        self._require_integer(ctype, expr)
        return value, ctype

    def truth(self, expr: ast.Expr) -> ir.Scalar:
        """A condition: non-zero integers and non-null pointers are true."""
        value, ctype = self.value(self.place(expr), expr)
        if not arith.is_scalar(ctype):
            raise PlanError(f"'{self._text(expr)}' cannot be used as a condition", expr.span)
        return arith.fold(ir.BinaryOp("!=", value, ir.Const(0), False))

    def string_address(self, place: ir.Place, expr: ast.Expr) -> ir.Scalar:
        """Where the bytes of a char*/char[]/pointer/array operand start."""
        ctype = strip(self._ctype_of(place, expr))
        if isinstance(place, ir.UnavailablePlace) and isinstance(ctype, (ArrayType, PointerType)):
            return self.value(place, expr)[0]
        if isinstance(ctype, ArrayType) and isinstance(place, ir.MemoryPlace):
            return place.address
        if isinstance(ctype, PointerType):
            pointer, _ = self.value(place, expr)
            return ir.NonNull(pointer)
        raise PlanError(f"'{self._text(expr)}' of type '{type_name(ctype)}' is not a pointer or "
                        "array", expr.span)


def _register_member(value: ir.Scalar, struct: StructType, expr: ast.Member) -> ir.Place:
    """A member of a small struct passed in a register (SysV passes structs
    up to 8 bytes in one): its bytes are bits of the register."""
    path = lookup_member(struct, expr)
    member, offset = path.member, path.static_offset
    if offset is None:
        return _virtual_base_elsewhere(path)
    if not arith.is_integer(member.type) and not arith.is_pointer(member.type):
        raise UnsupportedError("not supported yet: non-integer members of a struct held in "
                               "a register", expr.span)
    bit_offset = 8 * offset + (member.bit_offset or 0)
    bit_size = member.bit_size or 8 * type_size(member.type)
    field = ir.BitField(value, bit_offset, bit_size, arith.signedness(member.type))
    return ir.ValuePlace(field, member.type)


def _part_member(base: ir.Place, struct: StructType, expr: ast.Member) -> ir.Place:
    """A member of a struct that is not in memory (pieces, constant bytes)."""
    path = lookup_member(struct, expr)
    member, offset = path.member, path.static_offset
    if offset is None:
        return _virtual_base_elsewhere(path)
    if member.bit_size is None:
        return sub_place(base, offset, member.type)
    storage = next(size for size in (1, 2, 4, 8)
                   if 8 * size >= member.bit_offset + member.bit_size)
    word = sub_place(base, offset, arith.IntType("bitfield storage", storage, False))
    if isinstance(word, ir.MemoryPlace):
        word = ir.ValuePlace(ir.Load(word.address, storage, False), word.ctype)
    if not isinstance(word, ir.ValuePlace):
        return ir.UnavailablePlace(member.type, getattr(word, "reason", "optimized out"),
                                   getattr(word, "optimized_out", True))
    return ir.BitFieldPlace(ir.BitField(word.value, member.bit_offset, member.bit_size,
                                        arith.signedness(member.type)), member.type)


def _member_place(address: ir.Scalar, struct: StructType, expr: ast.Member) -> ir.Place:
    path = lookup_member(struct, expr)
    member, offset = path.member, 0
    for step in path.steps:
        if not isinstance(step, VirtualBaseStep):
            offset += step
            continue
        if step.vbase_offset_at is None:
            return _virtual_base_elsewhere(path, "located by a DWARF expression gs-cgen does "
                                           "not evaluate")
        if offset:
            address = ir.BinaryOp("+", address, ir.Const(offset), False)
        address, offset = _virtual_base_address(address, step.vbase_offset_at), 0
    address = ir.BinaryOp("+", address, ir.Const(offset), False)
    if member.bit_size is None:
        return ir.MemoryPlace(address, member.type)
    storage = (member.bit_offset + member.bit_size + 7) // 8
    storage = next(size for size in (1, 2, 4, 8) if size >= storage)
    value = ir.BitField(ir.Load(address, storage, False), member.bit_offset,
                        member.bit_size, arith.signedness(member.type))
    return ir.BitFieldPlace(value, member.type)


def _virtual_base_address(address: ir.Scalar, vbase_offset_at: int) -> ir.Scalar:
    """object + *(vptr + vbase_offset_at), vptr = *object: where a virtual
    base is in this object's complete object, as gdb reads it (gnu-v3-abi.c
    gnuv3_baseclass_offset); a failed read fails the value."""
    vptr = ir.Load(address, 8, False)
    slot = ir.BinaryOp("-" if vbase_offset_at < 0 else "+", vptr,
                       ir.Const(abs(vbase_offset_at)), False)
    return ir.BinaryOp("+", address, ir.Load(slot, 8, True), False)


def _virtual_base_elsewhere(path: MemberPath,
                            why: str = "in a value not in memory") -> ir.UnavailablePlace:
    """A member of a virtual base whose offset the probe cannot find: in a
    value not in memory (no vtable pointer to follow), or located by a DWARF
    form gs-cgen does not evaluate."""
    base = next(step.base for step in path.steps if isinstance(step, VirtualBaseStep))
    return ir.UnavailablePlace(path.member.type, f"unsupported: virtual base {base} {why}",
                               False)


def _unavailable(place: ir.UnavailablePlace, ctype: CType) -> ir.UnavailablePlace:
    """A part of (or pointer into) an unavailable value: just as unavailable."""
    return ir.UnavailablePlace(ctype, place.reason, place.optimized_out)


def _is_pointerish(place: ir.Place) -> bool:
    ctype = getattr(place, "ctype", None)
    return ctype is not None and (arith.is_pointer(ctype) or (
        isinstance(strip(ctype), ArrayType) and isinstance(place, ir.MemoryPlace)))


def _is_cpp(ctype) -> bool:
    return getattr(strip(ctype), "language", None) == "c++"
