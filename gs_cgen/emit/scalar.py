"""Scalar IR (plan/ir.py) → C. Each function emits the statements a node
needs (reads, checks) into the writer and returns a C expression of type
__u64. A failure sets gs_st/gs_fa and jumps to `fail`, so no failed read
ever flows on as a number."""
from __future__ import annotations

from gs_cgen.emit import c
from gs_cgen.emit.writer import CWriter
from gs_cgen.plan import ir

_SIGNED_CAST = {1: "__s8", 2: "__s16", 4: "__s32", 8: "__s64"}
_UNSIGNED_CAST = {1: "__u8", 2: "__u16", 4: "__u32", 8: "__u64"}
_ORDERED = {"<", "<=", ">", ">="}


# Parentheses an expression may nest before it is bound to a local: clang
# refuses more than 256 levels (a chain of 64 `let`s nests ~4 per step),
# and a local costs nothing once clang has the expression in SSA form.
_NESTING_BOUND = 64


def emit_scalar(w: CWriter, node: ir.Scalar, fail: str) -> str:
    value = _emit_scalar(w, node, fail)
    if value.count("(") <= _NESTING_BOUND:
        return value
    temp = w.fresh("e")
    w.line(f"__u64 {temp} = {value};")
    return temp


def _emit_scalar(w: CWriter, node: ir.Scalar, fail: str) -> str:
    match node:
        case ir.Const(value):
            return c.u64_literal(value)
        case ir.RegisterValue(register):
            return c.register_variable(register)
        case ir.HeaderField(field):
            return f"((__u64)hdr->{field})"
        case ir.ModuleAddress():
            return _module_address(w, node, fail)
        case ir.ThreadLocalBase(cookie):
            return _thread_local_base(w, cookie, fail)
        case ir.Load():
            return _load(w, node, fail)
        case ir.NonNull(pointer):
            return _non_null(w, emit_scalar(w, pointer, fail), fail)
        case ir.Below(value, limit, status):
            return _below(w, emit_scalar(w, value, fail), limit, status, fail)
        case ir.BinaryOp():
            return _binary(w, node, fail)
        case ir.UnaryOp(op, operand):
            inner = emit_scalar(w, operand, fail)
            return f"((__u64)!({inner}))" if op == "!" else f"((__u64)({op}({inner})))"
        case ir.Convert(operand, size, signed):
            return _convert(emit_scalar(w, operand, fail), size, signed)
        case ir.Logical():
            return _logical(w, node, fail)
        case ir.BitField():
            return _bitfield(w, node, fail)
        case ir.BytesEqual():
            return _bytes_equal(w, node, fail)
        case ir.MemoryEqual():
            return _memory_equal(w, node, fail)
        case ir.CallSiteSelect():
            return _call_site_select(w, node, fail)
        case ir.EntryRecordValue():
            return _entry_record_value(w, node, fail)
        case ir.Fail(status, reason):
            w.line(c.comment(reason))
            _jump(w, status, "0", fail)
            return "0"
    raise TypeError(node)


def _call_site_select(w: CWriter, node: ir.CallSiteSelect, fail: str) -> str:
    """Which call site are we in? Compare the return address, made
    module-relative with the bias regs->ip - probe address."""
    return_address = emit_scalar(w, node.return_address, fail)
    ip = emit_scalar(w, ir.ir_register_ip(), fail)
    site = w.fresh("site")
    result = w.fresh("entry")
    w.line(f"__u64 {site} = {return_address} - ({ip} - {c.u64_literal(node.probe_address)});")
    w.line(f"__u64 {result} = 0;")
    opener = "if"
    for return_pc, value in node.cases:
        with w.block(f"{opener} ({site} == {c.u64_literal(return_pc)})"):
            w.line(f"{result} = {emit_scalar(w, value, fail)};")
        opener = "else if"
    with w.block("else"):
        _jump(w, "GS_STATUS_OPTIMIZED_OUT", "0", fail)
    return result


def _entry_record_value(w: CWriter, node: ir.EntryRecordValue, fail: str) -> str:
    """A value the call's entry record holds (gs_rec, emit/retprobe.py);
    a slot the entry probe could not fill fails as it failed there."""
    if node.status_offset is not None:
        w.line(f"if (GS_STATUS(gs_rec, {node.status_offset}) != GS_STATUS_OK) {{ "
               f"gs_st = GS_STATUS(gs_rec, {node.status_offset}); "
               f"gs_fa = GS_ADDRESS(gs_rec, {node.status_offset}); goto {fail}; }}")
    return f"(*(const __u64 *)(gs_rec + {node.data_offset}))"


def _jump(w: CWriter, status: str, address: str, fail: str) -> None:
    w.line(f"gs_st = {status}; gs_fa = {address}; goto {fail};")


def _module_address(w: CWriter, node: ir.ModuleAddress, fail: str) -> str:
    if node.cookie == w.own_module:
        return f"({c.u64_literal(node.address)} + gs_bias)"
    offsets = c.offsets_variable(node.cookie)
    w.line(f"if (!{offsets}) {{ gs_st = GS_STATUS_OFFSETS_UNAVAILABLE; "
           f"gs_fa = {c.u64_literal(node.address)}; goto {fail}; }}")
    return f"({c.u64_literal(node.address)} + {offsets}->{node.section})"


def _thread_local_base(w: CWriter, cookie: int, fail: str) -> str:
    """gs_tls_block (gs_prelude.h) fails with TlsUnavailable when the
    tracer has not filled the module's proc_module_tls entry."""
    temp = w.fresh("tls")
    w.line(f"__u64 {temp} = 0;")
    w.line(f"if (gs_tls_block(&{temp}, {c.tls_variable(cookie)}, &gs_st, &gs_fa))")
    w.line(f"    goto {fail};")
    return temp


def _load(w: CWriter, node: ir.Load, fail: str) -> str:
    address = emit_scalar(w, node.address, fail)
    temp = w.fresh()
    w.line(f"if (gs_load(&gs_ld, {address}, {node.size}, {int(node.signed)}, &gs_st, &gs_fa))")
    w.line(f"    goto {fail};")
    w.line(f"__u64 {temp} = gs_ld;")
    return temp


def _non_null(w: CWriter, pointer: str, fail: str) -> str:
    temp = w.fresh("p")
    w.line(f"__u64 {temp} = {pointer};")
    w.line(f"if (!{temp}) {{ gs_st = GS_STATUS_NULL_DEREF; gs_fa = 0; goto {fail}; }}")
    return temp


def _below(w: CWriter, value: str, limit: int, status: str, fail: str) -> str:
    temp = w.fresh("n")
    w.line(f"__u64 {temp} = {value};")
    w.line(f"if ({temp} >= {c.u64_literal(limit)}) {{ gs_st = {status}; gs_fa = 0; goto {fail}; }}")
    return temp


def _binary(w: CWriter, node: ir.BinaryOp, fail: str) -> str:
    left = emit_scalar(w, node.left, fail)
    right = emit_scalar(w, node.right, fail)
    op = node.op
    if op in ("/", "%"):
        divisor = w.fresh("d")
        w.line(f"__u64 {divisor} = {right};")
        w.line(f"if (!{divisor}) {{ gs_st = GS_STATUS_DIV_BY_ZERO; gs_fa = 0; goto {fail}; }}")
        helper = ("gs_sdiv" if op == "/" else "gs_smod") if node.signed else None
        return f"{helper}({left}, {divisor})" if helper else f"(({left}) {op} {divisor})"
    if op == ">>" and node.signed:
        return f"((__u64)((__s64)({left}) >> (({right}) & 63)))"
    if op in ("<<", ">>"):
        return f"((__u64)(({left}) {op} (({right}) & 63)))"
    if op in _ORDERED and node.signed:
        return f"((__u64)((__s64)({left}) {op} (__s64)({right})))"
    return f"((__u64)(({left}) {op} ({right})))"


def _convert(value: str, size: int, signed: bool) -> str:
    if size >= 8:
        return value
    cast = _SIGNED_CAST[size] if signed else _UNSIGNED_CAST[size]
    return f"((__u64)(__s64)({cast})({value}))" if signed else f"((__u64)({cast})({value}))"


def _logical(w: CWriter, node: ir.Logical, fail: str) -> str:
    result = w.fresh("l")
    w.line(f"__u64 {result} = 0;")
    left = emit_scalar(w, node.left, fail)
    opener = f"if ({left})" if node.op == "&&" else f"if (!({left}))"
    if node.op == "||":
        w.line(f"{result} = ({left}) != 0;")
    with w.block(opener):
        right = emit_scalar(w, node.right, fail)
        w.line(f"{result} = ({right}) != 0;")
    return result


def _bitfield(w: CWriter, node: ir.BitField, fail: str) -> str:
    storage = emit_scalar(w, node.storage, fail)
    if node.signed:
        up = 64 - node.bit_offset - node.bit_size
        return f"((__u64)(((__s64)(({storage}) << {up})) >> {64 - node.bit_size}))"
    mask = (1 << node.bit_size) - 1
    return f"((({storage}) >> {node.bit_offset}) & {c.u64_literal(mask)})"


def _bytes_equal(w: CWriter, node: ir.BytesEqual, fail: str) -> str:
    """Read into the probe's work area and XOR-accumulate: branch-free, so
    the verifier sees one path however long the literal is."""
    address = w.fresh("a")
    w.line(f"__u64 {address} = {emit_scalar(w, node.address, fail)};")
    expected = node.expected + (b"\0" if node.mode == "cstring" else b"")
    result = w.fresh("eq")
    w.line(f"__u64 {result} = 0;")
    with w.block():
        if node.length is not None:
            _compared_length(w, node, address, fail)
        elif node.mode == "cstring":
            # One byte past the NUL: a longer string then reads as a longer n.
            w.line(f"long n = gs_read_user_str(work, {len(expected) + 1}, {address});")
            w.line(f"if (n < 0) {{ gs_st = GS_STATUS_READ_ERROR; gs_fa = {address}; goto {fail}; }}")
        else:
            w.line(f"if (gs_read_user_helper(work, {len(expected)}, (const void *){address}))")
            w.line(f"    {{ gs_st = GS_STATUS_READ_ERROR; gs_fa = {address}; goto {fail}; }}")
        w.line("__u64 diff = 0;")
        for i in range(0, len(expected), 8):
            w.line(f"diff |= {_word_difference(expected, i, node.length is not None)};")
        condition = f"n == {len(expected)} && diff == 0" if node.mode == "cstring" else "diff == 0"
        w.line(f"{result} = ({condition});")
    return result


def _word_difference(expected: bytes, i: int, run_time_length: bool) -> str:
    """The XOR of the 8 work-area bytes at `i` with the expected ones, over
    the bytes that count: 8 at a time, so a 500-byte literal is 63 steps
    (byte by byte, clang spilled past the 512-byte BPF stack). The work
    area is 8-aligned and GS_WORK_SIZE long: every word read is inside it."""
    chunk = expected[i:i + 8]
    word = f"(*(__u64 *)(work + {i}) ^ {c.u64_literal(int.from_bytes(chunk.ljust(8, bytes(1)), 'little'))})"
    if not run_time_length:
        return word if len(chunk) == 8 else \
            f"({word} & {c.u64_literal((1 << 8 * len(chunk)) - 1)})"
    # `len` bytes were read: the word's first len - i of them count.
    return (f"(len >= {i + len(chunk)} ? {word} & {c.u64_literal((1 << 8 * len(chunk)) - 1)} : "
            f"len > {i} ? {word} & ((1ULL << ((len - {i}) * 8)) - 1) : 0)")


def _compared_length(w: CWriter, node: ir.BytesEqual, address: str, fail: str) -> None:
    """A run-time length, as a dump's ({:x.name$}: emit_scalar, range
    checked in the prelude): `len` bytes, 0..len(expected), are read."""
    limit = len(node.expected)
    clamp = -1 if node.clamp is None else node.clamp
    w.line(f"long n = gs_compare_length((__s64){emit_scalar(w, node.length, fail)}, {clamp}, "
           f"{limit}, &gs_st, &gs_fa);")
    w.line(f"if (n < 0) goto {fail};")
    w.line(f"__u32 len = n > {limit} ? {limit} : (__u32)n;")
    w.line(f"if (len && gs_read_user_helper(work, len, (const void *){address}))")
    w.line(f"    {{ gs_st = GS_STATUS_READ_ERROR; gs_fa = {address}; goto {fail}; }}")


def _memory_equal(w: CWriter, node: ir.MemoryEqual, fail: str) -> str:
    left = w.fresh("a")
    right = w.fresh("b")
    length = w.fresh("n")
    w.line(f"__u64 {left} = {emit_scalar(w, node.left, fail)};")
    w.line(f"__u64 {right} = {emit_scalar(w, node.right, fail)};")
    w.line(f"long {length} = gs_compare_length((__s64){emit_scalar(w, node.length, fail)}, -1, "
           f"{node.cap}, &gs_st, &gs_fa);")
    w.line(f"if ({length} < 0) goto {fail};")
    result = w.fresh("eq")
    w.line(f"long {result} = gs_memory_equal(work, {left}, {right}, {length}, &gs_st, &gs_fa);")
    w.line(f"if ({result} < 0) goto {fail};")
    return f"((__u64){result})"
