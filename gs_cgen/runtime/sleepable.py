"""Sleepable uprobes: whether they can be used here, and loading one.

A sleepable uprobe program may call bpf_copy_from_user, which faults a page
in the way the target's own access would: a library's `.rodata` page the
process never touched then reads as gdb reads it, where bpf_probe_read_user
fails (CONTRACT.md, end). The kernel loads them since Linux 6.0, as
BPF_PROG_TYPE_KPROBE programs with BPF_F_SLEEPABLE, and runs them only
from uprobes.

Why this way of loading. BCC 0.26's Python `BPF.load_func` has no flags
argument, and the C `bcc_func_load` it calls passes 0 for them; but that
function is a thin wrapper of the exported C++ method
`ebpf::BPFModule::bcc_func_load(..., unsigned flags, int attach_type)`,
and `BPF.module` is that BPFModule. Calling the method keeps everything
BCC's own load does (BTF func and line info, the verifier-log retry on
failure, the RLIMIT_MEMLOCK bump) and changes only the flags. Loading the
instructions ourselves with bpf(BPF_PROG_LOAD) would have to redo all of
that. The method's mangled name spells its signature: a libbcc whose
method differs lacks the symbol, and that is found at start as "no
sleepable support", never as a call with the wrong arguments.

Support is detected once per process: the kernel is asked to load a
seven-instruction sleepable program that calls bpf_copy_from_user (raw
bpf(2), no compiler), and libbcc is checked for the method.
`GS_CGEN_SLEEPABLE=off` in the environment turns sleepable uprobes off
(tests force the fallback with it).
"""
from __future__ import annotations

import ctypes
import functools
import os
import struct

from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import EventTransport
from gs_cgen.runtime.bpfcall import BPF_PROG_LOAD, ProgLoadAttr, bpf

# include/uapi/linux/bpf.h
BPF_PROG_TYPE_KPROBE = 2
BPF_F_SLEEPABLE = 1 << 4
BPF_FUNC_copy_from_user = 148
SWITCH_VARIABLE = "GS_CGEN_SLEEPABLE"
_OFF = ("0", "off", "no", "false")
# ebpf::BPFModule::bcc_func_load(int, char const*, bpf_insn const*, int, char const*,
#     unsigned int, int, char*, unsigned int, char const*, unsigned int, int)
_FUNC_LOAD_WITH_FLAGS = "_ZN4ebpf9BPFModule13bcc_func_loadEiPKcPK8bpf_insniS2_jiPcjS2_ji"


@dataclass(frozen=True)
class ReadMode:
    """How the probes read target memory: sleepable (faulting pages in) or
    not, and why not."""

    sleepable: bool
    reason: str = ""

    @property
    def note(self) -> str | None:
        """The one line said on stderr when pages cannot be faulted in."""
        if self.sleepable:
            return None
        return (f"note: sleepable uprobes unavailable ({self.reason}); pages the target "
                "has not touched read as errors")


def choose_read_mode(transport: EventTransport) -> ReadMode:
    if transport is EventTransport.PERF:
        return ReadMode(False, "--event-map perf: sleepable programs cannot use perf "
                               "event arrays")
    return sleepable_support()


@functools.cache
def sleepable_support() -> ReadMode:
    """Whether sleepable uprobes can be loaded here (asked once)."""
    return detect_support(os.environ)


@functools.cache
def kernel_support() -> ReadMode:
    """sleepable_support without asking libbcc (a cached program is loaded
    without it): the switch and the kernel only."""
    return detect_support(os.environ, ask_libbcc=False)


def detect_support(environ, ask_libbcc: bool = True) -> ReadMode:
    setting = environ.get(SWITCH_VARIABLE, "")
    if setting.lower() in _OFF:
        return ReadMode(False, f"{SWITCH_VARIABLE}={setting}")
    if ask_libbcc and _func_load_with_flags() is None:
        return ReadMode(False, "libbcc has no ebpf::BPFModule::bcc_func_load taking "
                               "program flags")
    refusal = kernel_refusal()
    if refusal:
        return ReadMode(False, f"the kernel does not load them: {refusal}")
    return ReadMode(True)


def load_sleepable(module: int, name: bytes, prog_type: int, attach_type: int = -1) -> int:
    """Load function `name` of a BCC module as a sleepable program, as
    BPF.load_func would load it otherwise (`attach_type`: its expected
    attach type, -1 for none): its fd, or < 0 (errno set; the verifier log
    went to stderr)."""
    from bcc.libbcc import lib  # noqa: PLC0415
    load = _func_load_with_flags()
    return load(module, prog_type, name, lib.bpf_function_start(module, name),
                lib.bpf_function_size(module, name), lib.bpf_module_license(module),
                lib.bpf_module_kern_version(module), 0, None, 0, None, BPF_F_SLEEPABLE,
                attach_type)


@functools.cache
def _func_load_with_flags():
    try:
        from bcc.libbcc import lib  # noqa: PLC0415
        load = getattr(lib, _FUNC_LOAD_WITH_FLAGS)
    except (ImportError, AttributeError):
        return None
    load.restype = ctypes.c_int
    load.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                     ctypes.c_int, ctypes.c_char_p, ctypes.c_uint, ctypes.c_int,
                     ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_uint,
                     ctypes.c_int]
    return load


def _instruction(code: int, dst: int = 0, src: int = 0, offset: int = 0, imm: int = 0) -> bytes:
    """One struct bpf_insn: opcode, dst/src register nibbles, off, imm."""
    return struct.pack("<BBhi", code, src << 4 | dst, offset, imm)


# r1 = fp - 8; r2 = 1; r3 = 0; call bpf_copy_from_user; r0 = 0; exit.
# Only a sleepable program may call a helper that might sleep.
_PROBE_PROGRAM = b"".join([
    _instruction(0xbf, dst=1, src=10),                 # mov64 r1, r10
    _instruction(0x07, dst=1, imm=-8),                 # add64 r1, -8
    _instruction(0xb7, dst=2, imm=1),                  # mov64 r2, 1
    _instruction(0xb7, dst=3, imm=0),                  # mov64 r3, 0
    _instruction(0x85, imm=BPF_FUNC_copy_from_user),   # call
    _instruction(0xb7, dst=0, imm=0),                  # mov64 r0, 0
    _instruction(0x95),                                # exit
])


def kernel_refusal(flags: int = BPF_F_SLEEPABLE) -> str:
    """Why the kernel will not load the probe program with these program
    flags ('' if it does): with BPF_F_SLEEPABLE, whether it loads sleepable
    uprobe programs."""
    insns = ctypes.create_string_buffer(_PROBE_PROGRAM, len(_PROBE_PROGRAM))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    attr = ProgLoadAttr(prog_type=BPF_PROG_TYPE_KPROBE, insn_cnt=len(_PROBE_PROGRAM) // 8,
                         insns=ctypes.addressof(insns), license=ctypes.addressof(license_),
                         log_level=1, log_size=len(log), log_buf=ctypes.addressof(log),
                         prog_flags=flags, prog_name=b"gs_sleepable")
    fd, err = bpf(BPF_PROG_LOAD, attr)
    if fd >= 0:
        os.close(fd)
        return ""
    reason = os.strerror(err)
    said = verifier_reason(log.value.decode(errors="replace"))
    return f"{reason} ({said})" if said else reason


def verifier_reason(log: str) -> str:
    """Why the verifier refused a program: its last line before the
    statistics ("processed N insns ...") that end every log."""
    lines = [line.strip() for line in log.splitlines()
             if line.strip() and not line.startswith(("processed ", "verification time"))]
    return lines[-1] if lines else ""
