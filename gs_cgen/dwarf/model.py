"""What dwarf/ tells the planner: probe sites, visible variables and where
each lives at one PC. Pure data; no pyelftools objects leak out."""
from __future__ import annotations

from enum import Enum

from gs_cgen.dwarf.types import CType, type_size
from gs_cgen.lazydataclass import dataclass
# ELF facts are part of what dwarf/ tells the planner.
from gs_cgen.elf.model import IfuncSymbol, LoadSegment, TlsSegment  # noqa: F401


# DWARF x86_64 register numbers (System V psABI, figure 3.36).
DWARF_REGISTER_NAMES = (
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
)


# ------------------------------------------------------ variable locations

@dataclass(frozen=True)
class InRegister:
    """The value is `register + offset` (DW_OP_regN, or bregN + stack_value)."""

    dwarf_register: int
    offset: int = 0


@dataclass(frozen=True)
class AtRegisterOffset:
    """The value is in memory at `register + offset` (DW_OP_bregN, or
    DW_OP_fbreg with the frame base already resolved through CFI)."""

    dwarf_register: int
    offset: int


@dataclass(frozen=True)
class AtAddress:
    """The value is in memory at a link-time virtual address of the module
    (DW_OP_addr); run time adds the module's load offset."""

    address: int


@dataclass(frozen=True)
class StaticAddress:
    """The value is a link-time address of the module (DW_OP_addr +
    DW_OP_stack_value: a pointer to a static object); run time adds the
    module's load offset."""

    address: int


@dataclass(frozen=True)
class ThreadLocal:
    """The object is in memory at `offset` in the module's thread-local
    storage block, for the thread that runs the probe (DW_OP_const8u N
    DW_OP_form_tls_address, or DW_OP_GNU_push_tls_address in DWARF 4:
    dwarf/location/tls.py). Where that block is, is known only in a process."""

    offset: int


@dataclass(frozen=True)
class ImplicitValue:
    """The value is a known constant (DW_OP_constu/consts + stack_value,
    DW_OP_implicit_value)."""

    value: int


@dataclass(frozen=True)
class OptimizedOut:
    """No location covers the PC, or DW_AT_location is absent/empty."""

    reason: str


@dataclass(frozen=True)
class EntryValue:
    """DW_OP_entry_value(DW_OP_regN) + stack_value: the value register N had
    when the function was entered. Internal to dwarf/: variables_at turns it
    into InRegister when the function never writes N, else OptimizedOut."""

    dwarf_register: int


@dataclass(frozen=True)
class InSimdRegister:
    """The value is in SIMD register N (DW_OP_reg17..32, xmm0..15) at the
    PC. No probe can read one (struct pt_regs has none). Internal to dwarf/:
    dwarf/location/resolve.py makes it the register's entry value, from the callers'
    call sites, where the function cannot have written N yet."""

    dwarf_register: int


@dataclass(frozen=True)
class UnsupportedLocation:
    """A location expression this version cannot evaluate in BPF (pieces,
    memory reads, typed values, SIMD registers, ...); `reason` names the
    operation and the expression (dwarf/location/expression.py)."""

    reason: str


@dataclass(frozen=True)
class ValueExpression:
    """A 64-bit value computed at run time (a DWARF expression compiled to
    a tree, dwarf/location/expression.py). Nodes:
    ("const", n), ("reg", dwarf_reg, offset), ("static", link_address),
    ("deref", address, size) (size bytes, zero-extended),
    ("convert", x, size, signed) (truncate to size bytes, then extend),
    ("entry", dwarf_reg) (the register at function entry; resolved by
    dwarf/module.py before planning), ("param", cu_relative_die) (a
    removed parameter's value at entry, DW_OP_GNU_parameter_ref; resolved
    likewise), (op, left, right) for
    + - * & | ^ << >> >>a /s %u == != <s <=s >s >=s, and ("~", x),
    ("neg", x), ("abs", x)."""

    tree: tuple


@dataclass(frozen=True)
class ComputedValue:
    """The value is `expression` (a DWARF expression ending in
    DW_OP_stack_value that the probe computes)."""

    expression: ValueExpression


@dataclass(frozen=True)
class ComputedAddress:
    """The object is in memory at `expression` (computed by the probe)."""

    expression: ValueExpression


@dataclass(frozen=True)
class ImplicitBytes:
    """The object's bytes are known (DW_OP_implicit_value or
    DW_AT_const_value wider than 8 bytes)."""

    data: bytes


@dataclass(frozen=True)
class ImplicitPointer:
    """DW_OP_implicit_pointer: a pointer to an object that has no address
    (the variable at DIE `target_die`), `byte_offset` bytes into it.
    Internal to dwarf/: module.py resolves it into SyntheticPointer."""

    target_die: int
    byte_offset: int


@dataclass(frozen=True)
class SyntheticPointer:
    """A pointer whose pointee lives at `target` (a register, a constant,
    memory) but which has no value of its own: gdb's `<synthetic pointer>`.
    Dereferencing it reads the pointee; `byte_offset` bytes into it."""

    target: "VariableLocation"
    byte_offset: int


@dataclass(frozen=True)
class Piece:
    """`bit_size` bits of a composite, taken `bit_offset` bits into
    `location`'s value (DW_OP_piece / DW_OP_bit_piece); an OptimizedOut
    location is a part that is not available."""

    bit_size: int
    location: "VariableLocation"
    bit_offset: int = 0


@dataclass(frozen=True)
class Composite:
    """An object assembled from pieces, lowest address first."""

    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class CallSiteValue:
    """A parameter's entry value taken from the caller's call site
    (DW_TAG_call_site_parameter / DW_AT_call_value): the probe reads its
    return address at `return_address` and picks the case whose
    `return_pc` (module address) matches; no match is optimized out."""

    return_address: AtRegisterOffset
    cases: tuple[tuple[int, ValueExpression], ...]


VariableLocation = (InRegister | AtRegisterOffset | AtAddress | StaticAddress | ImplicitValue
                    | ThreadLocal | CallSiteValue | ComputedValue | ComputedAddress | ImplicitBytes
                    | SyntheticPointer | Composite | OptimizedOut | UnsupportedLocation)


def describe_location(location: VariableLocation, module: str = "the module") -> str:
    """Human text for `info` and `--dry-run`; `module` names the module
    whose TLS block a thread-local variable is in."""
    match location:
        case InRegister(reg, 0):
            return f"register {register_name(reg)}"
        case InRegister(reg, off):
            return f"value {register_name(reg)}{off:+d}"
        case AtRegisterOffset(reg, off):
            return f"memory [{register_name(reg)}{off:+d}]"
        case AtAddress(addr):
            return f"static 0x{addr:x}"
        case StaticAddress(addr):
            return f"address 0x{addr:x}"
        case ImplicitValue(value):
            return f"constant {value}"
        case ThreadLocal(offset):
            return f"thread-local, offset 0x{offset:x} in {module}'s TLS block"
        case CallSiteValue(cases=cases):
            pcs = ", ".join(f"0x{pc:x}" for pc, _ in cases)
            return f"entry value from the caller's call site (returns to {pcs})"
        case ComputedValue(expression):
            return f"value {expression_text(expression.tree)}"
        case ComputedAddress(expression):
            return f"memory [{expression_text(expression.tree)}]"
        case ImplicitBytes(data):
            return f"constant bytes {data.hex(' ')}"
        case SyntheticPointer(target, offset):
            into = f" + {offset}" if offset else ""
            return f"synthetic pointer to ({describe_location(target)}){into}"
        case Composite(pieces):
            return "pieces: " + ", ".join(_describe_piece(p) for p in pieces)
        case OptimizedOut(reason):
            return f"optimized out ({reason})"
        case UnsupportedLocation(reason):
            return f"unsupported: {reason}"
    raise TypeError(location)


def _describe_piece(piece: Piece) -> str:
    size = f"{piece.bit_size // 8} bytes" if piece.bit_size % 8 == 0 else f"{piece.bit_size} bits"
    where = "optimized out" if isinstance(piece.location, OptimizedOut) \
        else describe_location(piece.location)
    at = f" at bit {piece.bit_offset}" if piece.bit_offset else ""
    return f"{size} {where}{at}"


_INFIX = {"+", "-", "*", "&", "|", "^", "<<", ">>", ">>a", "/s", "%u",
          "==", "!=", "<s", "<=s", ">s", ">=s"}


def expression_text(tree: tuple, inner: bool = False) -> str:
    """A ValueExpression tree for people: `[rsp+8] + 4`, `(rdi << 32) | rsi`."""
    kind = tree[0]
    if kind == "const":
        return str(tree[1]) if -4096 < tree[1] < 4096 else f"0x{tree[1] & ((1 << 64) - 1):x}"
    if kind == "reg":
        name = register_name(tree[1])
        return f"{name}{tree[2]:+d}" if tree[2] else name
    if kind == "static":
        return f"0x{tree[1]:x}"
    if kind == "deref":
        return f"[{expression_text(tree[1])}]" + ("" if tree[2] == 8 else f":{tree[2]}")
    if kind == "convert":
        return f"({'i' if tree[3] else 'u'}{8 * tree[2]}) {expression_text(tree[1], True)}"
    if kind == "entry":
        return f"{register_name(tree[1])}@entry"
    if kind == "param":
        return f"parameter@entry(DIE 0x{tree[1]:x})"
    if kind in ("~", "neg", "abs"):
        return f"{'-' if kind == 'neg' else kind}({expression_text(tree[1])})"
    if kind in _INFIX:
        text = f"{expression_text(tree[1], True)} {kind} {expression_text(tree[2], True)}"
        return f"({text})" if inner else text
    return str(tree)


class LocationForm(Enum):
    """How DWARF wrote a variable's location (DWARF 5 section 2.6)."""

    REGISTER = "register"                  # DW_OP_regN; DW_OP_bregN + DW_OP_stack_value
    REGISTER_OFFSET = "register offset"    # DW_OP_bregN
    FRAME_OFFSET = "frame offset"          # DW_OP_fbreg
    STATIC = "static"                      # DW_OP_addr
    CONSTANT = "constant"                  # DW_AT_const_value, constant + DW_OP_stack_value
    EXPRESSION = "expression"              # any other expression
    NONE = "none"                          # no DW_AT_location, or an empty expression


@dataclass(frozen=True)
class LocationOrigin:
    """Where a VisibleVariable's location came from in DWARF, for people:
    the planner only needs the resolved VariableLocation."""

    form: LocationForm
    frame_offset: int | None = None               # the DW_OP_fbreg operand
    frame_base: str | None = None                 # what it is relative to: "CFA", "rbp", ...
    from_list: bool = False                       # DW_AT_location is a location list
    list_range: tuple[int, int] | None = None     # the [low, high) entry covering the PC


def describe_variable(variable: "VisibleVariable", module: str = "the module") -> str:
    """`describe_location` plus how DWARF said it: `frame offset -36 (CFA)
    → [rbp-20]`, `location list [0x1140,0x1150) → register rdi`."""
    location, origin = variable.location, variable.origin
    if isinstance(location, OptimizedOut) and location.reason == "optimized out":
        text = "optimized out"
    else:
        text = describe_location(location, module)
    if isinstance(location, Composite):
        described = sum(piece.bit_size for piece in location.pieces) // 8
        if described < type_size(variable.type):
            text += f", {type_size(variable.type) - described} bytes optimized out"
    if origin is None:
        return text
    if (origin.form is LocationForm.FRAME_OFFSET and origin.frame_offset is not None
            and isinstance(location, AtRegisterOffset)):
        base = f" ({origin.frame_base})" if origin.frame_base else ""
        text = (f"frame offset {origin.frame_offset:+d}{base} → "
                f"[{register_name(location.dwarf_register)}{location.offset:+d}]")
    if origin.from_list and origin.list_range is not None:
        low, high = origin.list_range
        text = f"location list [0x{low:x},0x{high:x}) → {text}"
    elif origin.from_list and isinstance(location, OptimizedOut):
        text = "optimized out (no location-list entry covers this PC)"
    elif origin.from_list:
        text = f"location list (default entry) → {text}"
    return text


# The rest of the psABI numbering (figure 3.36) that shows up in DWARF.
_OTHER_REGISTERS = {49: "rflags", 50: "es", 51: "cs", 52: "ss", 53: "ds", 54: "fs", 55: "gs",
                    58: "fs.base", 59: "gs.base"}


def register_name(dwarf_register: int) -> str:
    if 0 <= dwarf_register < len(DWARF_REGISTER_NAMES):
        return DWARF_REGISTER_NAMES[dwarf_register]
    if 17 <= dwarf_register <= 32:
        return f"xmm{dwarf_register - 17}"
    if 33 <= dwarf_register <= 40:
        return f"st{dwarf_register - 33}"
    if 41 <= dwarf_register <= 48:
        return f"mm{dwarf_register - 41}"
    return _OTHER_REGISTERS.get(dwarf_register, f"dwarf-reg{dwarf_register}")


# ------------------------------------------------------------ sites and vars

class VariableKind(Enum):
    PARAMETER = "parameter"
    LOCAL = "local"
    GLOBAL = "global"


@dataclass(frozen=True)
class ArrayBound:
    """How one dimension of a C99 variable-length array is sized at a PC
    (DW_AT_upper_bound or DW_AT_count of its DW_TAG_subrange_type, DWARF 5
    section 5.13). `computed`: the attribute is an expression whose result
    is the bound, so the bound is the address `location` describes (gcc
    -O0: DW_OP_fbreg -64; DW_OP_deref); else a variable (gcc's artificial
    one) holds it, and the bound is that variable's value."""

    location: "VariableLocation"
    lower: int
    is_count: bool                 # DW_AT_count: the number of elements, not the last index
    computed: bool


@dataclass(frozen=True)
class VisibleVariable:
    """A parameter or local in scope at a PC, innermost scope first."""

    name: str
    type: CType
    location: VariableLocation
    kind: VariableKind
    decl_file: str | None = None
    decl_line: int | None = None
    origin: LocationOrigin | None = None      # how DWARF described `location`
    # The block it is declared in, for `gs-cgen info`: "inlined clampk" (an
    # inlined instance's own scope), "block at line 40" (a lexical block);
    # None for the function's own top-level scope.
    scope: str | None = None


@dataclass(frozen=True)
class FrameScope:
    """What gdb shows in the frame it selects when it stops at a PC (see
    dwarf/scopes.py for which frame that is).

    `function`: the selected frame's function; `inlined`: it is an inlined
    instance. `variables`: its parameters and locals in scope at the PC,
    innermost block first. `inlined_into`: the functions the selected frame
    is inlined in, innermost first; `outer`: their variables at the PC, in
    that order, each frame's innermost block first (what gdb shows after
    `up`: a name the selected frame lacks is looked up there, see
    dwarf/scopes.py). `hidden`: inlined calls that begin at this PC inside
    the selected frame, which gdb does not show (innermost first)."""

    function: str | None
    inlined: bool
    variables: tuple[VisibleVariable, ...]
    inlined_into: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    outer: tuple[VisibleVariable, ...] = ()


@dataclass(frozen=True)
class GlobalVariable:
    name: str
    type: CType
    address: int              # link-time virtual address; a thread_local's offset in the TLS block
    section: str              # "text" | "rodata" | "data" | "bss" | "tls"
    decl_file: str | None = None
    decl_line: int | None = None
    thread_local: bool = False    # __thread / _Thread_local: one copy per thread
    constant: bytes | None = None  # DW_AT_const_value: the object has no storage
    # A library's preemptible global: the GOT slot (link-time address)
    # where ld.so put the object's real address in this process — the
    # library's own, or an executable's copy of it (R_X86_64_COPY).
    got_slot: int | None = None
    # An object the optimizer split into pieces at addresses of their own
    # (clang: symbols NAME.0, NAME.1; DW_OP_addrx ... DW_OP_piece)
    pieces: "Composite | None" = None

    @property
    def location(self) -> "AtAddress | ThreadLocal | ImplicitBytes | ComputedAddress | Composite":
        if self.pieces is not None:
            return self.pieces
        if self.constant is not None:
            return ImplicitBytes(self.constant)
        if self.got_slot is not None:
            return ComputedAddress(ValueExpression(("deref", ("static", self.got_slot), 8)))
        return ThreadLocal(self.address) if self.thread_local else AtAddress(self.address)


@dataclass(frozen=True)
class FunctionSite:
    """A function's entry and the post-prologue address a probe goes to."""

    name: str
    low_pc: int
    high_pc: int
    probe_address: int
    decl_file: str | None
    decl_line: int | None
    # Why DWARF describes no parameters or locals here (hand-written
    # assembly, a symbol without DWARF); None for a described function.
    no_variables: str | None = None
    # The DIE (DW_TAG_subprogram or DW_TAG_inlined_subroutine) of this copy:
    # a probe here sees its frame, as gdb's `break NAME` does.
    frame_die: int | None = None



@dataclass(frozen=True)
class LineSite:
    """One address of a source line, as gdb's `break FILE:LINE` places its
    locations (dwarf/lines.py)."""

    file: str                 # as recorded in the line table (full path)
    line: int                 # the line actually probed (may follow the requested one)
    address: int
    function: str | None      # enclosing function name, if known
    # The function whose frame gdb selects here, when the address moved to
    # the end of its prologue (the line is its first); None: the innermost.
    frame_die: int | None = None
    # False: the line has no statement row, only non-statement ones, and
    # is probed there; gdb's `break` would stop at the next statement line.
    statement: bool = True




@dataclass(frozen=True)
class CodeLocation:
    """What an instruction address is, for backtraces: the enclosing
    function and the source line (None when unknown)."""

    function: str | None
    file: str | None
    line: int | None
