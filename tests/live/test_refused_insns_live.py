"""Instructions the kernel refuses a uprobe on (elf/uprobe_insn.py
uprobe_refusal), checked against the running kernel, and what a trace does
about them: a function or line probe moves to the next instruction the
kernel takes; an address probe is an error that names it. Before, a
refused probe on a file no process mapped yet (launch mode, glibc's
__strcmp_avx2 and its `vpxor`) registered, never fired, and exited 0."""
from __future__ import annotations

import re
import subprocess

import pytest

from gs_cgen.elf.uprobe_insn import uprobe_refusal
from tests.live.conftest import compile_fixture, gs_cgen

KINDS = ("k_vpxor", "k_vmovdqu", "k_vmovups", "k_vpcmpeqb", "k_evex_vmovups", "k_notrack_jmp",
         "k_lock_add", "k_in", "k_mov", "ds_nop_entry")


@pytest.fixture(scope="module")
def binary(build_dir):
    return compile_fixture(build_dir, "refused_insns.c")


def _first_instruction(binary, name: str) -> tuple[int, bytes]:
    out = subprocess.run(["objdump", "-d", f"--disassemble={name}", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    match = re.search(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)", out, re.M)
    return int(match.group(1), 16), bytes.fromhex(match.group(2).replace(" ", ""))


def test_the_refusal_table_is_the_running_kernels(binary, start_target):
    """Each kind is probed in a process that maps the file, where the
    kernel analyses the instruction at once: it refuses exactly those
    uprobe_refusal names."""
    from bcc import BPF
    target = start_target(binary)
    bpf = BPF(text=b"int empty(void *ctx) { return 0; }")
    kernel, ours = {}, {}
    try:
        for name in KINDS:
            _, code = _first_instruction(binary, name)
            ours[name] = uprobe_refusal(code) is not None
            try:
                bpf.attach_uprobe(name=bytes(binary), sym=name.encode(), fn_name=b"empty",
                                  pid=target.pid)
                kernel[name] = False
                bpf.detach_uprobe(name=bytes(binary), sym=name.encode(), pid=target.pid)
            except Exception:           # BCC: "Failed to attach BPF program ... to uprobe"
                kernel[name] = True
    finally:
        bpf.cleanup()
    assert ours == kernel
    assert kernel["k_vpxor"] and not kernel["k_vmovups"] and kernel["ds_nop_entry"]


def test_a_function_probe_moves_past_a_refused_first_instruction(binary):
    start, _ = _first_instruction(binary, "ds_nop_entry")
    dry = gs_cgen("trace", "-t", str(binary), "--dry-run", "-s",
                  'trace ds_nop_entry { print "{} {:p}", $pc - $pc, $pc; }')
    assert dry.returncode == 0, dry.stderr
    assert (f"placed at 0x{start + 2:x}, after `nop` at 0x{start:x}, which the kernel cannot "
            "probe (its 0x3e prefix)") in dry.stdout, dry.stdout
    result = gs_cgen("trace", "--output", "plain", "--max-events", "3", "-s",
                     "trace ds_nop_entry { print $pc - $pc; }", "--", str(binary))
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line != "ready"] == \
        ["$pc - $pc = 0"] * 3


def test_an_address_probe_on_a_refused_instruction_names_the_next(binary):
    start, _ = _first_instruction(binary, "k_vpxor")
    result = gs_cgen("trace", "-t", str(binary), "--dry-run", "-s", f"trace 0x{start:x} {{ }}")
    assert result.returncode == 1
    assert (f"error: the kernel cannot place a uprobe at 0x{start:x} (k_vpxor): a VEX "
            "instruction with opcode byte 0xef") in result.stderr, result.stderr
    assert f"did you mean: 0x{start + 4:x}?" in result.stderr
