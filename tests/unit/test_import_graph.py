"""The import graph of gs_cgen has no cycles (issue #27).

Every module is parsed with ast (nothing is imported) and each
`import gs_cgen...` / `from gs_cgen... import` / relative import is
resolved to the module it loads. Two graphs:

- module level: imports that run when the module is imported (module
  body, class bodies, `try`/`if` at module level; not functions, not
  `if TYPE_CHECKING:`). A cycle here is one an import order can trip on
  (a partially initialised module), so it fails the test;
- every import, function bodies included: reported, not failed (an
  import inside a function runs when both modules are loaded).

An edge from a module to one of its own ancestor packages is left out:
when `gs_cgen.dwarf.x` runs, `gs_cgen.dwarf` has already been (or is
being) imported, so that import never runs the package's `__init__`.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gs_cgen"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_nodes(tree: ast.Module, module_level_only: bool):
    """The Import/ImportFrom nodes of a module, optionally only those that
    run at import time."""
    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not module_level_only:
                    yield from visit(child, True)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                if not module_level_only:
                    yield from visit(child, in_function)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            else:
                yield from visit(child, in_function)
    yield from visit(tree, False)


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def targets(node, name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The gs_cgen modules one import statement loads."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == "gs_cgen":
                found.add(alias.name)
        return found
    if node.level:
        base = _package_of(name, path)
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        source = f"{base}.{node.module}" if node.module else base
    else:
        source = node.module or ""
    if source.split(".")[0] != "gs_cgen":
        return found
    found.add(source)
    for alias in node.names:           # `from pkg import submodule`
        if f"{source}.{alias.name}" in modules:
            found.add(f"{source}.{alias.name}")
    return found


def import_graph(module_level_only: bool) -> dict[str, set[str]]:
    modules = all_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        ancestors = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
        edges = set()
        for node in import_nodes(ast.parse(path.read_text()), module_level_only):
            for target in targets(node, name, path, modules):
                # importing a.b.c also imports the packages a and a.b
                chain = target.split(".")
                for i in range(2, len(chain) + 1):
                    edges.add(".".join(chain[:i]))
        graph[name] = {t for t in edges if t in modules and t != name and t not in ancestors}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan),
    each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)


def test_the_graph_sees_the_package():
    graph = import_graph(module_level_only=True)
    assert len(graph) > 100
    # a few edges every version of the package has
    assert "gs_cgen.errors" in graph["gs_cgen.cli"]
    assert "gs_cgen.script.check" in graph["gs_cgen.script"]


def test_resolution_of_relative_and_submodule_imports(tmp_path):
    modules = {"gs_cgen.a": Path("a/__init__.py"), "gs_cgen.a.b": Path("a/b.py"),
               "gs_cgen.a.c": Path("a/c.py"), "gs_cgen.d": Path("d.py")}
    tree = ast.parse("from . import c\nfrom ..d import x\nfrom gs_cgen.a import b\n"
                     "import gs_cgen.d\nimport os\n"
                     "def f():\n    from gs_cgen import d\n"
                     "if TYPE_CHECKING:\n    from gs_cgen.a import c\n")
    path = PACKAGE / "a" / "b.py"
    level = [targets(n, "gs_cgen.a.b", path, modules)
             for n in import_nodes(tree, module_level_only=True)]
    assert level == [{"gs_cgen.a", "gs_cgen.a.c"}, {"gs_cgen.d"}, {"gs_cgen.a", "gs_cgen.a.b"},
                     {"gs_cgen.d"}, set()]
    everything = list(import_nodes(tree, module_level_only=False))
    assert len(everything) == 7


def test_cycle_finder():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["e", "f"]]


def test_no_module_level_import_cycles():
    found = cycles(import_graph(module_level_only=True))
    assert found == [], "module-level import cycles:\n" + "\n".join(
        "  " + " <-> ".join(c) for c in found)


def test_no_import_cycles_counting_imports_inside_functions():
    found = cycles(import_graph(module_level_only=False))
    assert found == [], "import cycles counting imports inside functions:\n" + "\n".join(
        "  " + " <-> ".join(c) for c in found)
