"""Is an address a place a uprobe may go? It must be in executable code and
start an instruction: decoded with capstone from the enclosing function's
first byte, since x86 instructions have no fixed length."""
from __future__ import annotations

import capstone

from gs_cgen.errors import DebugInfoError

_MAX_FUNCTION_BYTES = 1 << 20


def check_instruction_boundary(elf, vaddr: int) -> str:
    """The enclosing function's name; DebugInfoError when `vaddr` is not in
    code or falls inside an instruction."""
    seg = elf.segment_of(vaddr)
    if seg is None or not seg.executable:
        raise DebugInfoError(f"address 0x{vaddr:x} is not in a code segment of '{elf.path}'",
                             hints=("trace addresses are module virtual addresses "
                                    "(as in `objdump -d` or `gs-cgen info`), not file offsets",))
    symbol = elf.symbols.function_at(vaddr)
    if symbol is None:
        raise DebugInfoError(f"address 0x{vaddr:x} is not inside a known function of "
                             f"'{elf.path}', so its instruction boundary cannot be checked")
    size = min(max(symbol.size, vaddr - symbol.address + 16), _MAX_FUNCTION_BYTES)
    code = elf.read(symbol.address, size)
    decoder = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
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
