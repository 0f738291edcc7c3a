"""The modules a script can name: the default module (-t PATH, or the main
executable of -p PID or of `-- COMMAND`) and every other module the process
maps, or, for a command held before its first instruction, will map (its
library closure). Modules are opened lazily; only modules with DWARF can
hold probe sites.

Modules are named by their display path (the target's view); `files` says
how to open each one (ModuleFile). A path without an entry there is a file
of the tracer's own view, opened as it is."""
from __future__ import annotations

import dataclasses

import os
from collections.abc import Iterable
from dataclasses import field
from typing import Callable, NoReturn

from gs_cgen.dwarf import open_module
from gs_cgen.dwarf.types import describe_definition, same_definition
from gs_cgen.errors import DebugInfoError, PlanError, nearest
from gs_cgen.lazydataclass import dataclass
from gs_cgen.plan.model import GotSlot, IfuncChoice, IfuncLookup, ModuleFile

# Reads an IFUNC's choice out of a process (runtime/ifunc.py); None when
# no process it can see has run that resolver.
IfuncReader = Callable[[IfuncLookup], "IfuncChoice | None"]
# Modules named in a "searched" hint at most.
_SEARCHED_SHOWN = 12


def _names(path: str, suffix: str) -> bool:
    return path == suffix or path.endswith("/" + suffix) or \
        os.path.basename(path).startswith(suffix)


@dataclass
class ModuleSet:
    default_path: str
    other_paths: tuple[str, ...] = ()
    restrict_to_default: bool = False      # -t named the module: look nowhere else
    ifunc_reader: IfuncReader | None = None
    files: dict[str, ModuleFile] = field(default_factory=dict)   # by display path
    # Names the user gave a module by (-t through a symlink) -> its path
    links: dict[str, str] = field(default_factory=dict)
    _opened: dict[str, object] = field(default_factory=dict)

    @classmethod
    def over(cls, default: ModuleFile, others: Iterable[ModuleFile] = (),
             extra_paths: Iterable[str] = (), restrict_to_default: bool = False,
             ifunc_reader: IfuncReader | None = None,
             default_named: str | None = None) -> "ModuleSet":
        """A set over a process's module files (runtime/target.py made
        them), after `extra_paths`: files of our own view that it will load
        (a held command's library closure). `default_named`: the path the
        user named the default module by (-t), a link to it maybe."""
        files = {default.display_path: default}
        for file in others:
            files.setdefault(file.display_path, file)
        paths = tuple(dict.fromkeys([*extra_paths, *files]))
        links = {default_named: default.display_path} \
            if default_named and default_named != default.display_path else {}
        return cls(default.display_path, paths, restrict_to_default, ifunc_reader, files, links)

    @classmethod
    def of(cls, default, *others, restrict_to_default: bool = False,
           ifunc_reader: IfuncReader | None = None) -> "ModuleSet":
        """A set over modules opened already (tests, `info`)."""
        modules = cls(default.path, tuple(m.path for m in others), restrict_to_default,
                      ifunc_reader)
        for module in (default, *others):
            modules._opened[module.path] = module
        return modules

    @property
    def default(self):
        return self.open(self.default_path)

    def open(self, path: str):
        if path not in self._opened:
            file = self.files.get(path)
            self._opened[path] = open_module(path) if file is None else \
                open_module(file.open_path, file.display_path, file.root)
        return self._opened[path]

    def file(self, path: str) -> ModuleFile:
        """How module `path` is opened, and its identity in maps lines (a
        path of the tracer's own view: its device and inode now)."""
        if path in self.files:
            return self.files[path]
        try:
            st = os.stat(path)
        except OSError:
            return ModuleFile(path, path)
        return ModuleFile(path, path, st.st_dev, st.st_ino)

    def opened(self) -> list:
        return list(self._opened.values())

    def others(self):
        """Other loaded modules that can be read (vdso and vanished files
        skipped), each once: two paths may name one file (/lib64/ld.so from
        PT_INTERP and its real path in /proc/PID/maps)."""
        seen = {self.default.path}       # as opened: a host path is its real path
        for path in self.other_paths:
            try:
                module = self.open(path)
            except DebugInfoError:
                continue
            if module.path not in seen:
                seen.add(module.path)
                yield module

    def by_suffix(self, suffix: str):
        """`libfoo.so:0x…`: the module whose path is or ends with `suffix`;
        a module the user named through a link (-t LINK) by the link's name
        too: it is the file the link names."""
        paths = [self.default_path, *self.other_paths]
        names = [(p, p) for p in paths] + list(self.links.items())
        matches = sorted({path for name, path in names if _names(name, suffix)})
        if len(matches) == 1:
            return self.open(matches[0])
        if not matches:
            raise DebugInfoError(f"no loaded module matches '{suffix}'",
                                 candidates=tuple(dict.fromkeys(os.path.basename(p)
                                                                for p in paths))[:8])
        raise DebugInfoError(f"module suffix '{suffix}' is ambiguous: " + ", ".join(matches))

    def function_modules(self, name: str) -> list:
        """Modules holding function `name`: the default module alone when it
        has it; otherwise every other module with DWARF that has it."""
        default = self.default
        if self.restrict_to_default:
            return [default]
        if default.has_debug_info and default.has_function_symbol(name):
            return [default] + [m for m in self.others()
                                if m.has_debug_info and m.has_function_symbol(name)]
        holders = [m for m in self.others() if m.has_debug_info and m.has_function_symbol(name)]
        return _exporters_only(holders, name)

    def choose_ifunc(self, module, ifunc) -> IfuncChoice:
        """Which implementation of the GNU IFUNC `ifunc` (defined in
        `module`) runs: read from the GOT of a process that resolved it.
        Its own IRELATIVE slots first, then the executable's import slots."""
        # Open paths: the reader stats them to find the file in a process's maps.
        slots = [GotSlot(module.open_path, tuple(module.segments), vaddr, True)
                 for vaddr in ifunc.got_slots]
        default = self.default
        if default is not module:
            slots += [GotSlot(default.open_path, tuple(default.segments), vaddr, False)
                      for vaddr in default.import_slots(ifunc.name)]
        lookup = IfuncLookup(ifunc.name, module.open_path, tuple(module.segments), tuple(slots),
                             tuple(address for address, _ in ifunc.implementations))
        choice = self.ifunc_reader(lookup) if self.ifunc_reader and slots else None
        if choice is not None:
            return choice
        raise DebugInfoError(
            f"'{ifunc.name}' in '{module.path}' is a GNU indirect function (IFUNC), and no "
            "process that gs-cgen can read has resolved it, so which implementation runs "
            "is unknown", candidates=tuple(name for _, name in ifunc.implementations),
            hints=("trace one of the implementations by name, or give -p PID of a process "
                   "that maps this file",))

    def raise_function_not_found(self, name: str) -> NoReturn:
        """No module's DWARF has function `name`. A module with the symbol
        but no DWARF says so; otherwise the error offers the nearest names
        across every module searched and lists them."""
        modules = [self.default, *self.others()]
        for module in modules:
            if not module.has_debug_info and module.has_function_symbol(name):
                module.require_debug_info()
        if self.default.debuginfod_failed:
            # Stripped of .symtab too, it may hold `name` unseen: say why it has no DWARF.
            self.default.require_debug_info()
        pool = {n for m in modules if m.has_debug_info for n in m.function_names()}
        where = f"'{self.default.path}'"
        if len(modules) > 1:
            where += " or the libraries it loads"
        raise DebugInfoError(f"no function '{name}' in {where}",
                             candidates=nearest(name, pool), hints=(self.searched(),))

    def searched(self) -> str:
        """Which modules a lookup went through, for an error's hint."""
        modules = [self.default] if self.restrict_to_default else [self.default, *self.others()]
        with_dwarf = [m.path for m in modules if m.has_debug_info]
        without = [os.path.basename(m.path) for m in modules if not m.has_debug_info]
        text = "searched " + _some(with_dwarf)
        return text + (f"; without DWARF, not searched: {_some(without)}" if without else "")

    def line_modules(self, file: str, line: int) -> list:
        """The default module when it has `file`, else the others that do."""
        try:
            self.default.find_lines(file, line)
            return [self.default]
        except DebugInfoError as first_error:
            if self.restrict_to_default:
                raise
            found = []
            for module in self.others():
                if not module.has_debug_info:
                    continue
                try:
                    module.find_lines(file, line)
                    found.append(module)
                except DebugInfoError:
                    continue
            if not found:
                first_error.hints = (*first_error.hints, self.searched())
                raise first_error
            return found

    def find_global(self, name: str, own):
        """(module, GlobalVariable): the probe's own module first, then the
        other modules; a name in several other modules is an error. A
        library global the executable has a copy of is read in the copy."""
        glob = own.find_global(name) if own.has_debug_info else None
        if glob is not None:
            return self._copied(own, glob)
        hits = []
        for module in [self.default, *self.others()]:
            if module is own or not module.has_debug_info:
                continue
            found = module.find_global(name)
            if found is not None:
                hits.append((module, found))
        if len(hits) > 1:
            raise PlanError(f"global '{name}' is defined in several modules: " +
                            ", ".join(m.path for m, _ in hits),
                            hints=("read it from a probe in the module you mean",))
        return self._copied(*hits[0]) if hits else None

    def find_type(self, keyword: str | None, name: str, is_base: bool, own, near_pc: int,
                  span=None):
        """The type a cast names (dwarf find_named_type): the probe's own
        module first (its compile unit at `near_pc` first), then the other
        modules; found in several of those, they must all define it alike,
        else the cast is ambiguous. None when no module has it."""
        found = own.find_named_type(keyword, name, is_base, near_pc) \
            if own.has_debug_info else None
        if found is not None:
            return found
        hits = []
        for module in [self.default, *self.others()]:
            if module is own or not module.has_debug_info:
                continue
            ctype = module.find_named_type(keyword, name, is_base)
            if ctype is not None:
                hits.append((module, ctype))
        if any(not same_definition(hits[0][1], ctype) for _, ctype in hits[1:]):
            spelled = f"{keyword} {name}" if keyword else name
            raise PlanError(f"type '{spelled}' is ambiguous: the probe's module does not define "
                            "it, and other modules define it differently: " +
                            ", ".join(f"{m.path} ({describe_definition(t)})" for m, t in hits),
                            span, hints=("cast in a probe of the module whose type you mean",))
        return hits[0][1] if hits else None

    def _copied(self, owner, glob):
        """(module, glob) where the process keeps the object: an executable
        built without -fPIE holds copies of the library globals it reads
        (R_X86_64_COPY) and every module, the library too, uses the copy;
        the library's original keeps its stale initial value."""
        if glob.thread_local or glob.got_slot is not None or not owner.exports_object(glob.name):
            return owner, glob            # a GOT slot already says where, per process
        for module in [self.default, *self.others()]:
            if module is owner:
                continue
            copy = module.copy_of(glob.name)
            if copy is not None:
                return module, dataclasses.replace(glob, address=copy, section=module.section_of(copy))
        return owner, glob

    def type_names(self, own) -> list[str]:
        """The file-scope type names of every module with DWARF, own first."""
        modules = [own, *(m for m in [self.default, *self.others()] if m is not own)]
        return [n for m in modules if m.has_debug_info for n in m.type_names()]

    def global_names(self, own) -> list[str]:
        return own.global_names() if own.has_debug_info else []


def _exporters_only(holders: list, name: str) -> list:
    """Of several libraries holding `name`, the one that exports it when
    the others have it only as a file-local symbol (ld.so's own static
    `strlen` next to libc's): the dynamic linker binds the name there."""
    if len(holders) < 2:
        return holders
    exporters = [m for m in holders if m.exports_function(name)]
    return exporters if len(exporters) == 1 else holders


def _some(items: list[str]) -> str:
    shown = ", ".join(items[:_SEARCHED_SHOWN]) or "nothing"
    more = len(items) - _SEARCHED_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")
