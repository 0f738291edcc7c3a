"""Is an address a place a uprobe may go? It must be in executable code and
start an instruction: decoded with capstone from the enclosing function's
first byte, since x86 instructions have no fixed length."""
from __future__ import annotations

import functools

from gs_cgen.errors import DebugInfoError

_MAX_FUNCTION_BYTES = 1 << 20


@functools.cache
def _capstone():
    # Imported when code is first decoded: capstone takes ~30 ms to import,
    # and most commands (`info function`, --emit-c on most scripts) decode none.
    import capstone  # noqa: PLC0415
    return capstone


def _x86_64_decoder():
    capstone = _capstone()
    return capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


def check_instruction_boundary(elf, vaddr: int, plt_stub=None) -> str:
    """The enclosing function's name; DebugInfoError when `vaddr` is not in
    code or falls inside an instruction. `plt_stub`: the PLT stub covering
    `vaddr` (a Symbol, elf/plt.py), which no symbol table lists."""
    seg = elf.segment_of(vaddr)
    if seg is None or not seg.executable:
        raise DebugInfoError(f"address 0x{vaddr:x} is not in a code segment of '{elf.path}'",
                             hints=("trace addresses are module virtual addresses "
                                    "(as in `objdump -d` or `gs-cgen info`), not file offsets",))
    symbol = elf.symbols.function_at(vaddr) or plt_stub
    if symbol is None:
        raise DebugInfoError(f"address 0x{vaddr:x} is not inside a known function of "
                             f"'{elf.path}', so its instruction boundary cannot be checked")
    size = min(max(symbol.size, vaddr - symbol.address + 16), _MAX_FUNCTION_BYTES)
    code = elf.read(symbol.address, size)
    decoder = _x86_64_decoder()
    decoder.skipdata = True
    for start, length, _mnemonic, _operands in decoder.disasm_lite(code, symbol.address):
        if start == vaddr:
            return symbol.name
        if start < vaddr < start + length:
            raise DebugInfoError(
                f"address 0x{vaddr:x} is not an instruction boundary: it is inside the "
                f"{length}-byte instruction at 0x{start:x} ({symbol.name}+0x{start - symbol.address:x})",
                candidates=(f"0x{start:x}", f"0x{start + length:x}"))
        if start > vaddr:
            break
    raise DebugInfoError(f"address 0x{vaddr:x} could not be decoded as an instruction of "
                         f"{symbol.name}")


# System V x86-64: a call may change these (and the callee returns in rax),
# and every SIMD register.
_CALL_CLOBBERED = frozenset({"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
                             *(f"xmm{n}" for n in range(16))})
_LEGACY = {"a": "rax", "b": "rbx", "c": "rcx", "d": "rdx"}
_INDEX = {"si": "rsi", "di": "rdi", "bp": "rbp", "sp": "rsp"}


def canonical_register(name: str) -> str:
    """The 64-bit register a capstone register name is part of (eax, al -> rax);
    an SIMD register as its xmm name (ymm3, zmm3 -> xmm3)."""
    if name[:3] in ("ymm", "zmm") and name[3:].isdigit():
        return "xmm" + name[3:]
    if name.startswith("r") and name[1:3].rstrip("bwd").isdigit():
        return "r" + name[1:].rstrip("bwd")          # r8d, r10w, r11b
    stem = name.removeprefix("r").removeprefix("e")
    if stem in _INDEX or stem.rstrip("l") in _INDEX:
        return _INDEX.get(stem, _INDEX.get(stem.rstrip("l")))
    if len(stem) == 2 and stem[1] in "xlh" and stem[0] in _LEGACY:
        return _LEGACY[stem[0]]
    return name


def registers_written(elf, ranges) -> frozenset[str]:
    """64-bit registers any instruction of the function writes; calls count
    as writing every call-clobbered register."""
    capstone = _capstone()
    decoder = _x86_64_decoder()
    decoder.detail = True
    written: set[str] = set()
    for low, high in ranges:
        for insn in decoder.disasm(elf.read(low, high - low), low):
            if insn.group(capstone.CS_GRP_CALL):
                written |= _CALL_CLOBBERED
            _read, writes = insn.regs_access()
            written.update(canonical_register(insn.reg_name(r)) for r in writes)
    return frozenset(written)


def rip_relative_targets(elf, low: int, high: int) -> list[int]:
    """Addresses that instructions in [low, high) name RIP-relative (`lea
    __strlen_avx2(%rip), %rax`), in code order: the functions an IFUNC
    resolver can return."""
    capstone = _capstone()
    decoder = _x86_64_decoder()
    decoder.detail = True
    targets: list[int] = []
    for insn in decoder.disasm(elf.read(low, high - low), low):
        for operand in insn.operands:
            if operand.type == capstone.x86.X86_OP_MEM and \
                    operand.mem.base == capstone.x86.X86_REG_RIP:
                target = insn.address + insn.size + operand.mem.disp
                if target not in targets:
                    targets.append(target)
    return targets
