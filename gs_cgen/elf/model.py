"""ELF facts the other stages use: program headers (PT_LOAD, PT_TLS) and
GNU indirect functions. Pure data."""
from __future__ import annotations

from gs_cgen.lazydataclass import dataclass


@dataclass(frozen=True)
class IfuncSymbol:
    """A GNU indirect function (STT_GNU_IFUNC). Its symbol's address is a
    resolver that ld.so calls once; the code that runs is what it returns."""

    name: str                                  # as looked up: `memcpy@@GLIBC_2.14`
    resolver: int
    got_slots: tuple[int, ...]                 # R_X86_64_IRELATIVE slots ld.so fills with the choice
    implementations: tuple[tuple[int, str], ...]   # (address, name) the resolver can return


@dataclass(frozen=True)
class LoadSegment:
    """A PT_LOAD program header."""

    vaddr: int
    memsz: int
    offset: int
    filesz: int
    executable: bool
    writable: bool


@dataclass(frozen=True)
class TlsSegment:
    """The PT_TLS program header: the module's TLS initialization image
    (`filesz` bytes of .tdata at `vaddr`) and block size and alignment."""

    vaddr: int
    filesz: int
    memsz: int
    align: int
