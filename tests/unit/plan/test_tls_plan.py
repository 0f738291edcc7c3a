"""Planning thread-local variables on fake modules: a __thread object is
memory at the module's TLS block (ir.ThreadLocalBase) + its offset, read
for the thread that hit the probe; without the kernel's thread-pointer
offset it is an unavailable value with the reason, never a failed script."""
from __future__ import annotations

from dataclasses import replace

from gs_cgen.dwarf.model import (GlobalVariable, ThreadLocal, TlsSegment,
                                 VariableKind, VisibleVariable)
from gs_cgen.plan import ir
from gs_cgen.plan.build import PlanOptions, build_plan
from gs_cgen.plan.model import (MemoryCapture, NoCapture, PidNamespace, ThreadPointer,
                                module_cookie)
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.script.parser import parse
from tests.fakes import INT, LONG, FakeModule
from tests.unit.emit.test_golden import server_module

WITH_TP = PlanOptions("t.gs", PidNamespace(False), thread_pointer=ThreadPointer(3128))


def tls_at(module, offset: int) -> ir.Scalar:
    block = ir.ThreadLocalBase(module_cookie(module.path, module.build_id))
    return ir.BinaryOp("+", block, ir.Const(offset), False)


def plan(text: str, modules: ModuleSet, options: PlanOptions = WITH_TP):
    return build_plan(parse(text), modules, options)


def test_a_thread_local_global_is_memory_in_the_modules_tls_block():
    module = server_module()
    result = plan("trace handle { print t_requests; print g_count; }", ModuleSet.of(module))
    (probe,) = result.probes
    assert probe.slots[0].capture == MemoryCapture(tls_at(module, 0x10), INT, 4)
    assert result.task_fsbase_offset == 3128
    (ref,) = result.modules
    assert ref.tls == module.tls_segment and ref.dynamic_vaddr == module.dynamic_vaddr


def test_a_function_scope_static_thread_local():
    module = server_module()
    module.variables[0x1145] = [VisibleVariable("ticks", LONG, ThreadLocal(0x28),
                                                VariableKind.LOCAL)]
    (probe,) = plan("trace handle { print ticks; }", ModuleSet.of(module)).probes
    assert probe.slots[0].capture == MemoryCapture(tls_at(module, 0x28), LONG, 8)


def test_a_thread_local_of_another_module_uses_that_modules_block():
    app = server_module()
    lib = FakeModule(path="/usr/lib/libdemo.so", build_id="aa" * 20,
                     tls_segment=TlsSegment(0x3e00, 0, 0x20, 8), dynamic_vaddr=0x3d00)
    lib.globals["lib_tls_id"] = GlobalVariable("lib_tls_id", INT, 0x4, "tls",
                                               thread_local=True)
    result = plan("trace handle { print lib_tls_id; }", ModuleSet.of(app, lib))
    assert result.probes[0].slots[0].capture == MemoryCapture(tls_at(lib, 0x4), INT, 4)
    refs = {ref.path: ref for ref in result.modules}
    assert refs[lib.path].tls == lib.tls_segment
    assert refs[app.path].tls is None           # holds the probe, reads no TLS of its own


def test_without_the_thread_pointer_offset_the_value_says_why():
    options = replace(WITH_TP, thread_pointer=ThreadPointer(None, "cannot read /sys/kernel/btf"
                                                                  "/vmlinux (Permission denied)"))
    result = plan("trace handle { print t_requests; print g_count; }",
                  ModuleSet.of(server_module()), options)
    capture = result.probes[0].slots[0].capture
    assert capture == NoCapture(INT, "thread-local storage unreadable: cannot read "
                                     "/sys/kernel/btf/vmlinux (Permission denied)", False)
    assert result.task_fsbase_offset is None     # no TLS in the program at all


def test_a_program_without_tls_has_no_thread_pointer():
    result = plan("trace handle { print g_count; }", ModuleSet.of(server_module()))
    assert result.task_fsbase_offset is None
    assert all(ref.tls is None for ref in result.modules)


def test_members_and_elements_of_thread_locals():
    module = server_module()
    (probe,) = plan("trace handle { print t_last.id; print &t_requests; }",
                    ModuleSet.of(module)).probes
    pointer = ir.Load(tls_at(module, 0x18), 8, False)
    member = probe.slots[0].capture
    assert isinstance(member, MemoryCapture) and member.ctype == INT
    assert pointer in set(ir.walk([member.address]))
    assert probe.slots[1].capture.value == tls_at(module, 0x10)

