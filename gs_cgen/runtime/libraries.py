"""The shared libraries a program will load, found the way glibc's dynamic
loader finds them (ld.so(8); glibc elf/dl-load.c `_dl_map_object`), so that
probes can be placed in them before the program has run (`-- COMMAND`), as
gdb's pending breakpoints and bpftrace's library probes are.

Every DT_NEEDED name, breadth first from the executable, is looked up:
  1. a name with a '/' is a path;
  2. in the DT_RPATH of the object that needs it, then of each object up
     the chain that loaded that one, ending with the executable -- unless
     the needing object has a DT_RUNPATH (an object's own DT_RPATH counts
     only when it has no DT_RUNPATH);
  3. in LD_LIBRARY_PATH;
  4. in the DT_RUNPATH of the needing object;
  5. in /etc/ld.so.cache, then the default directories (both skipped for
     an object linked with -z nodefaultlib).
A name (requested name or soname) or file (device and inode) loaded once is
not loaded again. In each directory the glibc-hwcaps subdirectories this CPU
supports come first, and a file of the wrong ELF class or machine is passed
over, as ld.so does (a file that is no ELF at all is passed over too, where
ld.so would stop the program). Not modelled: the legacy hwcaps
subdirectories (tls/, x86_64/; dropped in glibc 2.37), secure-execution
mode, and dlopen().
"""
from __future__ import annotations

import os
import re
import stat
from collections import deque
from dataclasses import field

from gs_cgen.elf.dynamic import DynamicInfo, read_dynamic
from gs_cgen.errors import DebugInfoError
from gs_cgen.lazydataclass import dataclass
from gs_cgen.runtime.ldcache import CacheFormatError, LdCache, read_cache

DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib")
CACHE_LABEL = "ld.so.cache"
# Dynamic string tokens as Debian's glibc expands them on x86-64 (LD_DEBUG=libs).
_TOKENS = {"ORIGIN": None, "LIB": "lib/x86_64-linux-gnu", "PLATFORM": "x86_64"}
_TOKEN = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")
# glibc sysdeps/x86/get-isa-level.h, in /proc/cpuinfo spelling; each level
# also needs every level below it. Best first, as ld.so searches them.
_ISA_LEVELS = (
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}),
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"}),
)


@dataclass(frozen=True)
class LoaderEnvironment:
    """What the search depends on besides the ELF files themselves."""

    library_path: tuple[str, ...] = ()    # LD_LIBRARY_PATH
    preload: tuple[str, ...] = ()         # LD_PRELOAD, then /etc/ld.so.preload
    cwd: str = "/"
    cache: LdCache | None = None
    hwcaps: tuple[str, ...] = ()          # supported glibc-hwcaps subdirectories, best first


@dataclass(frozen=True)
class MissingLibrary:
    name: str
    needed_by: str                        # a path, or "LD_PRELOAD"
    searched: tuple[str, ...]             # directories, and "ld.so.cache"

    def describe(self) -> str:
        where = ", ".join(self.searched) or "nowhere"
        return f"{self.name}, needed by {self.needed_by}, was not found (searched: {where})"


@dataclass(frozen=True)
class LibraryClosure:
    libraries: tuple[str, ...]            # in load order (as ldd lists them)
    missing: tuple[MissingLibrary, ...] = ()


def loader_environment(environ: dict[str, str], cwd: str,
                       cache_path: str = "/etc/ld.so.cache",
                       preload_file: str = "/etc/ld.so.preload") -> LoaderEnvironment:
    """The loader's view of a process about to start with `environ` in `cwd`."""
    preload = re.split(r"[ :]", environ.get("LD_PRELOAD", "")) + _read_words(preload_file)
    return LoaderEnvironment(
        library_path=tuple(re.split(r"[:;]", environ["LD_LIBRARY_PATH"]))
        if environ.get("LD_LIBRARY_PATH") else (),
        preload=tuple(name for name in preload if name), cwd=cwd,
        cache=_cache_or_none(cache_path), hwcaps=supported_hwcaps(_cpu_flags()))


def process_loader_environment(pid: int) -> LoaderEnvironment:
    """The loader environment of process `pid` (held before it ran: its
    environment is the one its ld.so will read)."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    environ = {key.decode(errors="replace"): value.decode(errors="replace")
               for key, value in pairs}
    return loader_environment(environ, os.readlink(f"/proc/{pid}/cwd"))


def supported_hwcaps(cpu_flags: set[str]) -> tuple[str, ...]:
    levels, needed = [], set()
    for name, flags in reversed(_ISA_LEVELS):
        needed |= flags
        if not needed <= cpu_flags:
            break
        levels.append(name)
    return tuple(reversed(levels))


def library_closure(executable: str, env: LoaderEnvironment) -> LibraryClosure:
    """Every library the dynamic loader will map for `executable` before
    it runs main's first instruction. DebugInfoError when the executable
    itself is not a readable ELF file; a library that cannot be found is
    reported in `missing`, never raised."""
    main = _Loaded(executable, read_dynamic(executable),
                   os.path.dirname(os.path.realpath(executable)), None)
    return _Search(env, main).run()


# ---------------------------------------------------------------- search


@dataclass(eq=False)
class _Loaded:
    path: str
    info: DynamicInfo
    origin: str                   # $ORIGIN: the directory the file was found in
    loader: "_Loaded | None"      # the object whose DT_NEEDED brought it in


@dataclass
class _Search:
    env: LoaderEnvironment
    main: _Loaded
    order: list[_Loaded] = field(default_factory=list)      # the libraries, as ldd lists them
    names: dict[str, _Loaded] = field(default_factory=dict)
    files: dict[tuple[int, int], _Loaded] = field(default_factory=dict)
    missing: list[MissingLibrary] = field(default_factory=list)

    def run(self) -> LibraryClosure:
        self._register(self.main, self.main.path)
        interpreter = self._interpreter()
        queue = deque([self.main])
        for name in self.env.preload:           # ld.so maps them before any DT_NEEDED
            self._need(name, self.main, queue, needed_by="LD_PRELOAD")
        while queue:
            requester = queue.popleft()
            for name in requester.info.needed:
                self._need(name, requester, queue)
        if interpreter is not None:
            self._place(interpreter)
        return LibraryClosure(tuple(obj.path for obj in self.order), tuple(self.missing))

    def _interpreter(self) -> _Loaded | None:
        """The kernel maps PT_INTERP itself; DT_NEEDED names it by soname."""
        path = self.main.info.interpreter
        found = self._compatible(path) if path else None
        if found is None:
            return None
        interpreter = _Loaded(path, found[0], os.path.dirname(path), self.main)
        self._register(interpreter, path, found[1])
        return interpreter

    def _need(self, name: str, requester: _Loaded, queue: deque,
              needed_by: str | None = None) -> None:
        if name in self.names:
            self._place(self.names[name])
            return
        tried: list[str] = []
        for label, path in self._candidates(name, requester):
            if label not in tried:
                tried.append(label)
            found = self._compatible(path) if path else None
            if found is None:
                continue
            info, identity = found
            if identity in self.files:           # the same file under another name
                self.names[name] = self.files[identity]
                self._place(self.files[identity])
                return
            obj = _Loaded(path, info, os.path.dirname(path), requester)
            self._register(obj, name, identity)
            self._place(obj)
            queue.append(obj)
            return
        self.missing.append(MissingLibrary(name, needed_by or requester.path, tuple(tried)))

    def _place(self, obj: _Loaded) -> None:
        """The interpreter is listed where a DT_NEEDED first names it."""
        if obj is not self.main and obj not in self.order:
            self.order.append(obj)

    def _register(self, obj: _Loaded, name: str, identity: tuple[int, int] | None = None) -> None:
        for alias in (name, obj.path, obj.info.soname):
            if alias:
                self.names.setdefault(alias, obj)
        if identity is None:
            st = os.stat(obj.path)
            identity = (st.st_dev, st.st_ino)
        self.files[identity] = obj

    def _candidates(self, name: str, requester: _Loaded):
        """(label, path) in the loader's order; label names the directory
        (path None: the cache has no entry)."""
        if "/" in name:
            path = os.path.join(self.env.cwd, _expand(name, requester))
            yield os.path.dirname(path), path
            return
        for directory in self._directories(requester):
            yield from self._in_directory(directory, name)
        if requester.info.nodeflib:
            return
        cached = self.env.cache.lookup(name, self.env.hwcaps) if self.env.cache else None
        yield CACHE_LABEL, cached
        for directory in DEFAULT_DIRS:
            yield from self._in_directory(directory, name)

    def _directories(self, requester: _Loaded) -> list[str]:
        directories = []
        if not requester.info.runpath:
            chain = requester
            while chain is not None:
                if not chain.info.runpath:
                    directories += [_expand(d, chain) for d in chain.info.rpath]
                chain = chain.loader
        directories += [_expand(d, self.main) for d in self.env.library_path]
        directories += [_expand(d, requester) for d in requester.info.runpath]
        return directories

    def _in_directory(self, directory: str, name: str):
        # An empty element is the current directory (glibc fillin_rpath).
        base = os.path.join(self.env.cwd, directory)
        for subdirectory in self.env.hwcaps:
            yield directory or ".", os.path.join(base, "glibc-hwcaps", subdirectory, name)
        yield directory or ".", os.path.join(base, name)

    def _compatible(self, path: str) -> tuple[DynamicInfo, tuple[int, int]] | None:
        """(dynamic info, file identity) when ld.so would accept the file."""
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                return None
            info = read_dynamic(path)
        except (OSError, DebugInfoError):
            return None
        main = self.main.info
        if (info.elf_class, info.machine) != (main.elf_class, main.machine):
            return None
        return info, (st.st_dev, st.st_ino)


def _expand(text: str, obj: _Loaded) -> str:
    """Dynamic string tokens; an unknown `$NAME` stays as it is, as in glibc."""
    def value(match: re.Match) -> str:
        token = match.group(1) or match.group(2)
        return obj.origin if token == "ORIGIN" else _TOKENS[token]
    return _TOKEN.sub(value, text)


def _cache_or_none(path: str) -> LdCache | None:
    try:
        return read_cache(path)
    except (OSError, CacheFormatError):
        return None


def _read_words(path: str) -> list[str]:
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
