"""The modules a script can name: the default module (-t PATH, or the main
executable of -p PID) and, with -p, every other module the process maps.
Modules are opened lazily; only modules with DWARF can hold probe sites.

Modules are named by their display path (the target's view); `files` says
how to open each one (ModuleFile). A path without an entry there is a file
of the tracer's own view, opened as it is."""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from gs_cgen.dwarf import open_module
from gs_cgen.errors import DebugInfoError, PlanError
from gs_cgen.plan.model import ModuleFile


@dataclass
class ModuleSet:
    default_path: str
    other_paths: tuple[str, ...] = ()
    restrict_to_default: bool = False      # -t named the module: look nowhere else
    files: dict[str, ModuleFile] = field(default_factory=dict)   # by display path
    _opened: dict[str, object] = field(default_factory=dict)

    @classmethod
    def over(cls, default: ModuleFile, others: Iterable[ModuleFile] = (),
             restrict_to_default: bool = False) -> "ModuleSet":
        """A set over a process's module files (runtime/target.py made them)."""
        files = {default.display_path: default}
        for file in others:
            files.setdefault(file.display_path, file)
        return cls(default.display_path, tuple(files), restrict_to_default, files)

    @classmethod
    def of(cls, default, *others, restrict_to_default: bool = False) -> "ModuleSet":
        """A set over modules opened already (tests, `info`)."""
        modules = cls(default.path, tuple(m.path for m in others), restrict_to_default)
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
        """Other loaded modules that can be read (vdso and vanished files skipped)."""
        for path in self.other_paths:
            if path == self.default_path:
                continue
            try:
                yield self.open(path)
            except DebugInfoError:
                continue

    def by_suffix(self, suffix: str):
        """`libfoo.so:0x…`: the module whose path is or ends with `suffix`."""
        paths = [self.default_path, *self.other_paths]
        matches = sorted({p for p in paths if p == suffix or p.endswith("/" + suffix)
                          or os.path.basename(p).startswith(suffix)})
        if len(matches) == 1:
            return self.open(matches[0])
        if not matches:
            raise DebugInfoError(f"no loaded module matches '{suffix}'",
                                 candidates=tuple(os.path.basename(p) for p in paths[:8]))
        raise DebugInfoError(f"module suffix '{suffix}' is ambiguous: " + ", ".join(matches))

    def function_modules(self, name: str) -> list:
        """Modules holding function `name`: the default module alone when it
        has it; otherwise every other module with DWARF that has it."""
        default = self.default
        if self.restrict_to_default:
            return [default]
        if default.has_debug_info and default.has_function_symbol(name):
            holders = [default] + [m for m in self.others()
                                   if m.has_debug_info and m.has_function_symbol(name)]
        else:
            holders = [m for m in self.others() if m.has_debug_info and m.has_function_symbol(name)]
        return holders

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
                raise first_error
            return found

    def find_global(self, name: str, own):
        """(module, GlobalVariable): the probe's own module first, then the
        other modules; a name in several other modules is an error."""
        glob = own.find_global(name) if own.has_debug_info else None
        if glob is not None:
            return own, glob
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
        return hits[0] if hits else None

    def global_names(self, own) -> list[str]:
        return own.global_names() if own.has_debug_info else []
