"""A FakeDebugInfo in the spirit of drgn's mock_program: planning and
emitting tests run without ELF files."""
from __future__ import annotations

from dataclasses import dataclass, field

from gs_cgen.dwarf.model import (CodeLocation, FrameScope, FunctionSite, GlobalVariable, LineSite,
                                 LoadSegment, TlsSegment, VisibleVariable)
from gs_cgen.elf.uprobe_insn import uprobe_handling, writes_only_stack
from gs_cgen.errors import DebugInfoError, nearest

INT = None  # filled below to avoid import cycles in type hints

from gs_cgen.dwarf.types import (ArrayType, BoolType, EnumType, IntType,  # noqa: E402
                                 PointerType, StructMember, StructType)

INT = IntType("int", 4, True)
UINT = IntType("unsigned int", 4, False)
LONG = IntType("long", 8, True)
CHAR = IntType("char", 1, True, is_char=True)
BOOL = BoolType("_Bool", 1)
COLOR = EnumType("color", 4, False, (("RED", 0), ("GREEN", 5), ("BLUE", 6)))
CHAR_PTR = PointerType(lambda: CHAR)
REQUEST = StructType("struct", "request", 24, lambda: (
    StructMember("id", INT, 0),
    StructMember("flags", UINT, 4, bit_size=3, bit_offset=0),
    StructMember("path", ArrayType(CHAR, 16), 8)))
REQUEST_PTR = PointerType(lambda: REQUEST)


@dataclass
class FakeModule:
    path: str = "/opt/app/bin/server"
    target_root: str = ""
    build_id: str | None = "00112233445566778899aabbccddeeff00112233"
    functions: dict[str, list[FunctionSite]] = field(default_factory=dict)
    inlined: dict[str, list[FunctionSite]] = field(default_factory=dict)   # no symbol names them
    lines: dict[tuple[str, int], list[LineSite]] = field(default_factory=dict)
    variables: dict[int, list[VisibleVariable]] = field(default_factory=dict)
    globals: dict[str, GlobalVariable] = field(default_factory=dict)
    enums: list = field(default_factory=list)           # EnumTypes whose constants resolve
    copies: dict[str, int] = field(default_factory=dict)       # R_X86_64_COPY slots
    segments: tuple[LoadSegment, ...] = (
        LoadSegment(0x0, 0x1000, 0x0, 0x1000, False, False),
        LoadSegment(0x1000, 0x2000, 0x1000, 0x2000, True, False),
        LoadSegment(0x3df0, 0x300, 0x2df0, 0x280, False, True),
    )
    is_pie: bool = True
    tls_segment: TlsSegment | None = TlsSegment(0x3df0, 0x10, 0x40, 0x10)   # PT_TLS
    dynamic_vaddr: int | None = 0x3e00
    has_debug_info: bool = True
    debuginfod_failed: bool = False     # no DWARF: debuginfod had none or did not answer
    local_functions: set[str] = field(default_factory=set)     # static: not exported
    ifuncs: dict[str, object] = field(default_factory=dict)    # name -> IfuncSymbol
    imports: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # Machine code at some addresses (placement); elsewhere an instruction
    # the kernel single-steps (mov %rsp,%rbp).
    code: dict[int, bytes] = field(default_factory=dict)
    # Return probes: DWARF return types by function DIE (frame_die None:
    # `return_type`), inlined-only DIEs, and the CFA rule at every PC.
    return_types: dict = field(default_factory=dict)
    return_type: object = None
    inlined_dies: set[int] = field(default_factory=set)
    cfa_rule: tuple[str, int] = ("rbp", 16)

    @property
    def open_path(self) -> str:
        return self.path

    def uprobe_handling(self, vaddr: int):
        return uprobe_handling(self.code.get(vaddr, bytes.fromhex("4889e5")))

    def writes_only_stack(self, low: int, high: int) -> bool:
        code = b"".join(self.code.get(a, b"") for a in sorted(self.code) if low <= a < high)
        return bool(code) and writes_only_stack(code, low)

    def function_return(self, frame_die: int | None):
        return frame_die in self.inlined_dies, self.return_types.get(frame_die, self.return_type)

    def call_frame_rule(self, pc: int):
        return self.cfa_rule

    def require_debug_info(self) -> None:
        if not self.has_debug_info:
            raise DebugInfoError(f"{self.path} has no DWARF debug info")

    def vaddr_to_file_offset(self, vaddr: int) -> int:
        for seg in self.segments:
            if seg.vaddr <= vaddr < seg.vaddr + seg.memsz:
                return vaddr - seg.vaddr + seg.offset
        raise DebugInfoError(f"0x{vaddr:x} is not in a loadable segment")

    def section_of(self, vaddr: int) -> str:
        return "data" if vaddr >= 0x3df0 else "text"

    def find_functions(self, name: str) -> list[FunctionSite]:
        if name not in self.functions:
            raise DebugInfoError(f"no function '{name}' in {self.path}",
                                 candidates=nearest(name, self.functions))
        return self.functions[name]

    def find_lines(self, file: str, line: int) -> list[LineSite]:
        for (f, l), sites in self.lines.items():
            if f.endswith(file) and l == line:
                return sites
        raise DebugInfoError(f"no code at {file}:{line}")

    def variables_at(self, pc: int, frame_die: int | None = None) -> list[VisibleVariable]:
        return self.variables.get(pc, [])

    def frame_at(self, pc: int, frame_die: int | None = None) -> FrameScope:
        return FrameScope(None, False, tuple(self.variables.get(pc, [])))

    def has_function_symbol(self, name: str) -> bool:
        return name in self.functions or name in self.ifuncs

    def exports_function(self, name: str) -> bool:
        return name in self.functions and name not in self.local_functions

    def exports_object(self, name: str) -> bool:
        return name in self.globals

    def copy_of(self, name: str) -> int | None:
        return self.copies.get(name)

    def ifunc_named(self, name: str):
        return self.ifuncs.get(name)

    def import_slots(self, name: str) -> tuple[int, ...]:
        return self.imports.get(name, ())

    def function_site_at(self, address: int, wanted: str) -> FunctionSite:
        for sites in self.functions.values():
            for site in sites:
                if site.low_pc == address:
                    return site
        raise DebugInfoError(f"no function at 0x{address:x}")

    def check_code_address(self, vaddr: int) -> str:
        for sites in self.functions.values():
            for site in sites:
                if site.low_pc <= vaddr < site.high_pc:
                    return site.name
        raise DebugInfoError(f"address 0x{vaddr:x} is not in a code segment")

    def describe_address(self, vaddr: int) -> CodeLocation:
        return CodeLocation(self.check_code_address(vaddr), None, None)

    def inlined_sites(self, name: str) -> list[FunctionSite]:
        return self.inlined.get(name, [])

    def uprobe_refusal(self, vaddr: int) -> str | None:
        return None          # fake code: every instruction takes a uprobe

    def probe_line(self, vaddr: int) -> tuple[str | None, int | None]:
        return self.line_at(vaddr)

    def line_at(self, vaddr: int) -> tuple[str | None, int | None]:
        rows = [(s.file, s.line) for sites in self.lines.values() for s in sites
                if s.address == vaddr]
        return rows[0] if rows else (None, None)

    def plt_stub_name(self, vaddr: int) -> str | None:
        return None         # fake modules have no PLT

    def find_global(self, name: str) -> GlobalVariable | None:
        return self.globals.get(name)

    def global_names(self) -> list[str]:
        return list(self.globals)

    def find_enumerator(self, name: str, near_pc: int | None = None):
        for ctype in self.enums:
            if name in dict(ctype.enumerators):
                return ctype, dict(ctype.enumerators)[name]
        return None

    def function_names(self) -> list[str]:
        return list(self.functions)
