"""ModuleSet: where functions, lines and globals are looked up."""
from __future__ import annotations

import pytest

from gs_cgen.dwarf.model import FunctionSite, GlobalVariable, IfuncSymbol
from gs_cgen.errors import DebugInfoError, PlanError
from gs_cgen.plan.model import IfuncChoice, IfuncLookup, ModuleFile
from gs_cgen.plan.modules import ModuleSet
from gs_cgen.plan.sites import resolve_sites
from gs_cgen.script.parser import parse
from tests.fakes import INT, FakeModule


def module(path: str, functions=(), globals_=()) -> FakeModule:
    fake = FakeModule(path=path, build_id=path)
    for name in functions:
        fake.functions[name] = [FunctionSite(name, 0x1100, 0x1200, 0x1110, "x.c", 3)]
    for name in globals_:
        fake.globals[name] = GlobalVariable(name, INT, 0x4010, "data")
    return fake


def sites(text: str, modules: ModuleSet):
    (block,) = parse(text).traces
    return resolve_sites(block, modules, 0)


def test_function_in_a_library_only_resolves_there():
    app, lib = module("/app", ["main"]), module("/lib/libx.so", ["work"])
    ((owner, site),) = sites("trace work { }", ModuleSet.of(app, lib))
    assert owner is lib and site.module_path == "/lib/libx.so"


def test_same_function_in_executable_and_library_is_ambiguous():
    app, lib = module("/app", ["compute"]), module("/lib/libx.so", ["compute"])
    with pytest.raises(DebugInfoError) as info:
        sites("trace compute { }", ModuleSet.of(app, lib))
    assert "defined in several modules: /app, /lib/libx.so" in info.value.message
    assert info.value.hints == ("name the module with -t, e.g. -t /lib/libx.so -p PID",)


def test_named_module_wins_over_ambiguity():
    app, lib = module("/app", ["compute"]), module("/lib/libx.so", ["compute"])
    ((owner, _),) = sites("trace compute { }",
                          ModuleSet.of(lib, app, restrict_to_default=True))
    assert owner is lib


def test_globals_own_module_first_then_others():
    app = module("/app", ["main"], ["shared", "only_app"])
    lib = module("/lib/libx.so", ["work"], ["shared"])
    modules = ModuleSet.of(app, lib)
    assert modules.find_global("shared", lib)[0] is lib
    assert modules.find_global("only_app", lib)[0] is app
    assert modules.find_global("missing", lib) is None


def test_global_in_several_other_modules_is_an_error():
    app = module("/app", ["main"])
    one, two = module("/lib/a.so", [], ["dup"]), module("/lib/b.so", [], ["dup"])
    with pytest.raises(PlanError, match="global 'dup' is defined in several modules: "
                                        "/lib/a.so, /lib/b.so"):
        ModuleSet.of(app, one, two).find_global("dup", app)


def test_a_global_of_several_modules_points_at_the_name_in_the_script():
    app = module("/app", ["main"])
    one, two = module("/lib/a.so", [], ["dup"]), module("/lib/b.so", [], ["dup"])
    app.functions["main"] = [FunctionSite("main", 0x1100, 0x1200, 0x1110, "x.c", 3)]
    from gs_cgen.plan.build import PlanOptions, build_plan  # noqa: PLC0415
    from gs_cgen.plan.model import PidNamespace  # noqa: PLC0415
    with pytest.raises(PlanError) as info:
        build_plan(parse("trace main { print dup; }"), ModuleSet.of(app, one, two),
                   PlanOptions("t.gs", PidNamespace(False)))
    assert (info.value.span.line, info.value.span.column) == (1, 20)


def test_module_suffix_for_address_patterns():
    app, lib = module("/app", ["main"]), module("/usr/lib/libx.so.1", ["work"])
    modules = ModuleSet.of(app, lib)
    assert modules.by_suffix("libx.so") is lib
    with pytest.raises(DebugInfoError, match="no loaded module matches 'liby.so'"):
        modules.by_suffix("liby.so")
    twice = ModuleSet.of(app, lib, module("/lib/libx.so.1", []), module("/app", []))
    with pytest.raises(DebugInfoError) as info:
        twice.by_suffix("liby.so")
    assert info.value.candidates == ("app", "libx.so.1")     # each name once


def test_a_module_named_through_a_link_by_the_links_name():
    """-t /tmp/libx_alias.so -> /usr/lib/libx.so.1: `libx_alias.so:0x…`
    is that module (GhostScope's test_t_p_mode_module_address_accepts_
    target_symlink_name: 'no loaded module matches')."""
    lib = module("/usr/lib/libx.so.1", ["work"])
    modules = ModuleSet.over(ModuleFile("/usr/lib/libx.so.1", "/usr/lib/libx.so.1"),
                             [ModuleFile("/app", "/app")], restrict_to_default=True,
                             default_named="/tmp/libx_alias.so")
    modules._opened["/usr/lib/libx.so.1"] = lib
    for name in ("libx_alias.so", "/tmp/libx_alias.so", "libx.so"):
        assert modules.by_suffix(name) is lib
    with pytest.raises(DebugInfoError, match="no loaded module matches 'liby.so'"):
        modules.by_suffix("liby.so")


# ------------------------------------------------------------- GNU IFUNCs

def ifunc_library() -> FakeModule:
    """libc in miniature: `strlen` is an IFUNC (resolver 0x1100, one
    IRELATIVE slot) whose implementations are an assembly function and a C one."""
    lib = module("/lib/libc.so.6")
    lib.functions["__strlen_avx2"] = [FunctionSite("__strlen_avx2", 0x1500, 0x1580, 0x1500,
                                                   "strlen-avx2.S", 65, "__strlen_avx2 is asm")]
    lib.functions["__strlen_sse2"] = [FunctionSite("__strlen_sse2", 0x1600, 0x1680, 0x1600,
                                                   "strlen.c", 10)]
    lib.ifuncs["strlen"] = IfuncSymbol("strlen", 0x1100, (0x3e00,),
                                       ((0x1600, "__strlen_sse2"), (0x1500, "__strlen_avx2")))
    return lib


class RecordingReader:
    def __init__(self, address: int) -> None:
        self.address, self.lookups = address, []

    def __call__(self, lookup: IfuncLookup) -> IfuncChoice:
        self.lookups.append(lookup)
        return IfuncChoice(self.address, "this process")


def test_ifunc_is_probed_at_the_implementation_the_process_chose():
    app, lib = module("/app", ["main"]), ifunc_library()
    app.imports["strlen"] = (0x3fd0,)
    reader = RecordingReader(0x1500)
    ((owner, site),) = sites("trace strlen { }", ModuleSet.of(app, lib, ifunc_reader=reader))
    assert owner is lib and (site.address, site.function) == (0x1500, "__strlen_avx2")
    assert site.function_text == ("__strlen_avx2 (IFUNC, chosen by this process; "
                                  "assembly, no DWARF variables)")
    assert site.no_variables == "__strlen_avx2 is asm"
    (lookup,) = reader.lookups
    assert [(s.module_path, s.vaddr, s.exact) for s in lookup.slots] == [
        ("/lib/libc.so.6", 0x3e00, True), ("/app", 0x3fd0, False)]
    assert lookup.implementations == (0x1600, 0x1500)


def test_ifunc_without_a_process_to_read_is_an_error_listing_implementations():
    app, lib = module("/app", ["main"]), ifunc_library()
    with pytest.raises(DebugInfoError) as err:
        sites("trace strlen { }", ModuleSet.of(app, lib))
    assert "is a GNU indirect function (IFUNC)" in err.value.message
    assert err.value.candidates == ("__strlen_sse2", "__strlen_avx2")
    assert err.value.span is not None                  # points at the pattern


def test_exported_definition_wins_over_another_librarys_local_one():
    app = module("/app", ["main"])
    loader, libc = module("/lib/ld.so", ["strlen"]), module("/lib/libc.so.6", ["strlen"])
    loader.local_functions.add("strlen")
    ((owner, _),) = sites("trace strlen { }", ModuleSet.of(app, loader, libc))
    assert owner is libc
    other = module("/lib/libother.so", ["strlen"])         # exported twice: ambiguous
    with pytest.raises(DebugInfoError, match="defined in several modules"):
        sites("trace strlen { }", ModuleSet.of(app, loader, libc, other))


def test_a_function_only_inlined_in_a_library_is_found_there():
    """No symbol table names it; the library's DWARF has its inlined
    copies (libc's checked_request2size): probed there, as gdb's break."""
    app, lib = module("/app", ["main"]), module("/lib/libc.so.6", ["malloc"])
    lib.inlined["checked_request2size"] = [
        FunctionSite("checked_request2size", 0x1300, 0x1320, 0x1300, "malloc.c", 1338),
        FunctionSite("checked_request2size", 0x1400, 0x1420, 0x1400, "malloc.c", 1338)]
    found = sites("trace checked_request2size { }", ModuleSet.of(app, lib))
    assert [(owner, site.address) for owner, site in found] == [(lib, 0x1300), (lib, 0x1400)]
    other = module("/lib/libm.so.6", ["sin"])
    other.inlined["checked_request2size"] = lib.inlined["checked_request2size"]
    with pytest.raises(DebugInfoError, match="defined in several modules: /lib/libc.so.6, "
                                             "/lib/libm.so.6"):
        sites("trace checked_request2size { }", ModuleSet.of(app, lib, other))


def test_copies_the_program_inlined_join_the_librarys_definition():
    """glibc's stdlib.h inlines atoi into a program built -O2; gdb's `break
    atoi` stops in those copies and in libc's: so do we, program first."""
    app, libc = module("/app", ["main"]), module("/lib/libc.so.6", ["atoi"])
    app.inlined["atoi"] = [
        FunctionSite("atoi", 0x1190, 0x11a0, 0x1190, "stdlib.h", 364),
        FunctionSite("atoi", 0x1090, 0x109e, 0x1090, "stdlib.h", 364)]
    found = sites("trace atoi { }", ModuleSet.of(app, libc))
    assert [(owner.path, site.address) for owner, site in found] == [
        ("/app", 0x1090), ("/app", 0x1190), ("/lib/libc.so.6", 0x1110)]
    # -t names the library: its own copies only.
    found = sites("trace atoi { }", ModuleSet.of(libc, app, restrict_to_default=True))
    assert [owner.path for owner, _ in found] == ["/lib/libc.so.6"]


def test_function_found_nowhere_names_the_modules_searched_and_nearest_names():
    app = module("/app", ["main"])
    lib = module("/lib/libx.so", ["lib_work", "lib_setup"])
    bare = module("/lib/libc.so.6", ["malloc"])
    bare.has_debug_info = False
    with pytest.raises(DebugInfoError) as info:
        sites("trace lib_wrok { }", ModuleSet.of(app, lib, bare))
    assert info.value.message == "no function 'lib_wrok' in '/app' or the libraries it loads"
    assert info.value.candidates == ("lib_work",)
    assert info.value.hints == ("searched /app, /lib/libx.so; without DWARF, not searched: "
                                "libc.so.6",)


def test_function_whose_only_module_has_no_dwarf_says_so():
    app = module("/app", ["main"])
    bare = module("/lib/libc.so.6", ["malloc"])
    bare.has_debug_info = False
    with pytest.raises(DebugInfoError, match="/lib/libc.so.6 has no DWARF debug info"):
        sites("trace malloc { }", ModuleSet.of(app, bare))


def test_function_found_nowhere_in_a_stripped_default_says_why_it_has_no_dwarf():
    """Stripped of .symtab, the executable may hold the function unseen:
    debuginfod's failure for it is the error, not "no function"."""
    app = module("/app", [])
    app.has_debug_info, app.debuginfod_failed = False, True
    lib = module("/lib/libx.so", ["lib_work"])
    with pytest.raises(DebugInfoError, match="^/app has no DWARF debug info$"):
        sites("trace app_step { }", ModuleSet.of(app, lib))
    app.debuginfod_failed = False          # no debuginfod: the modules searched, as before
    with pytest.raises(DebugInfoError, match="^no function 'app_step'"):
        sites("trace app_step { }", ModuleSet.of(app, lib))


def test_a_file_named_twice_is_one_module():
    """ld.so by its PT_INTERP name and by its real path in /proc/PID/maps."""
    app, lib = module("/app", ["main"]), module("/usr/lib/libx.so", ["work"])
    modules = ModuleSet.of(app, lib)
    modules._opened["/lib64/libx.so"] = lib            # what open_module gives for the link
    modules.other_paths = ("/lib64/libx.so", "/usr/lib/libx.so", "/app")
    assert list(modules.others()) == [lib]
    ((owner, _),) = sites("trace work { }", modules)   # not "defined in several modules"
    assert owner is lib
