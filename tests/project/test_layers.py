"""The package's layers go one way (issue 12), checked on the installed package's import graph.

Every module of the installed `haltproof` package is parsed (never imported: a module's
import-time effects are not the point) and each import, at module level or inside a
function, becomes an edge. The graph must be acyclic, every edge must go to the same or a
lower layer, and no module may import another module's private (`_name`) names. The
checker is a pure function of the graph, so the tests below also feed it small synthetic
graphs and check that each kind of problem is reported with its edge named.

The architecture page's drawing (docs/explanation/architecture.md) is checked against the tree
here too: every module it names exists, and every package folder and every module is named.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent.parent

# Lowest first. A module may import from its own layer or a lower one only.
LAYERS = {
    "haltproof.machine": 1,
    "haltproof.properties": 2,
    "haltproof.explorer": 3,
    "haltproof.reports": 4,
    "haltproof.cli": 5,
    "haltproof.frameworks": 5,      # framework integrations: machine/explorer below, only cli/api above
    "haltproof.guard": 0,           # the runtime guard: standard library only, importable from any layer
    "haltproof": 6,                 # __init__, api, __main__, pytest_plugin
}
# Written like user code: may import only haltproof.machine, the runtime guard (standard library
# only: harness/budget/guarded.py follows the runner through it) and its own modules; nothing imports it.
HARNESS = "haltproof.harness"
SPECS = "haltproof.specs"           # bundled YAML: nothing imports it
SUBPACKAGES = ("machine", "properties", "explorer", "reports", "cli", "frameworks", "harness", "specs")


@dataclass(frozen=True)
class Import:
    """One import statement's edge: `source` imports `target` (a module), at `line`."""

    source: str
    target: str
    line: int
    names: tuple[str, ...] = ()     # the names a `from target import ...` takes that are not submodules
    type_checking: bool = False     # inside `if TYPE_CHECKING:`: no runtime edge, so exempt from cycles

    def __str__(self) -> str:
        took = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.source} -> {self.target}{took} at line {self.line}"


# ---------------------------------------------------------------------------------------- the checker

def layer_of(module: str) -> int | str | None:
    """The layer number of a haltproof module, "harness"/"specs" for those, None outside haltproof."""
    if module == HARNESS or module.startswith(HARNESS + "."):
        return "harness"
    if module == SPECS or module.startswith(SPECS + "."):
        return "specs"
    for prefix, layer in LAYERS.items():
        if prefix != "haltproof" and (module == prefix or module.startswith(prefix + ".")):
            return layer
    if module == "haltproof" or module.startswith("haltproof."):
        return LAYERS["haltproof"]
    return None


def edge_problem(imp: Import) -> str | None:
    """Why an edge breaks the layering (None when it does not)."""
    src, dst = layer_of(imp.source), layer_of(imp.target)
    if dst is None:
        return None
    if dst == "specs":
        return f"imports the bundled specs: {imp}"
    if dst == "harness" and src != "harness":
        return f"imports the harness: {imp}"
    if src == "harness":
        if dst not in ("harness", 0, 1):
            return f"the harness may import only haltproof.machine and haltproof.guard: {imp}"
        return None
    if src == "specs":
        return f"the bundled specs import code: {imp}"
    assert isinstance(src, int) and isinstance(dst, int)
    if dst > src:
        return f"imports upward (layer {src} -> layer {dst}): {imp}"
    return None


def find_cycles(edges: list[Import]) -> list[list[Import]]:
    """One cycle per strongly connected component of the runtime import graph (TYPE_CHECKING
    imports do not run, so they cannot make a cycle), each as the edges around it."""
    graph: dict[str, dict[str, Import]] = {}
    for imp in edges:
        if not imp.type_checking and imp.source != imp.target:
            graph.setdefault(imp.source, {}).setdefault(imp.target, imp)
    cycles = []
    for component in _components(graph):
        cycles.append(_cycle_in(graph, component))
    return cycles


def _components(graph: dict[str, dict[str, Import]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(comp)
    return out


def _cycle_in(graph: dict[str, dict[str, Import]], component: set[str]) -> list[Import]:
    """A shortest cycle through the component's first module, as its edges."""
    start = min(component)
    back: dict[str, Import] = {}
    queue = [start]
    for v in queue:
        for w, imp in sorted(graph.get(v, {}).items()):
            if w == start:
                path = [imp]
                while v != start:
                    path.append(back[v])
                    v = back[v].source
                return path[::-1]
            if w in component and w not in back:
                back[w] = imp
                queue.append(w)
    raise AssertionError("a strongly connected component without a cycle")


def problems(edges: list[Import]) -> list[str]:
    """Everything wrong with an import graph: cycles, edges against the layers, private names."""
    out = [f"import cycle: {' ; '.join(map(str, cycle))}" for cycle in find_cycles(edges)]
    out += [p for p in map(edge_problem, edges) if p is not None]
    out += [f"imports a private name: {imp}" for imp in edges
            if imp.source != imp.target and any(n.startswith("_") and not n.startswith("__") for n in imp.names)]
    return out


# ---------------------------------------------------------------------------------- the real graph

def installed_modules() -> dict[str, Path]:
    """Every module of the installed haltproof package and its source file. An editable install
    maps the repository's folders in with an import hook that pkgutil does not list, so each
    subpackage is also looked up by name."""
    found: dict[str, Path] = {}
    packages = ["haltproof"] + [f"haltproof.{p}" for p in SUBPACKAGES]
    seen: set[str] = set()
    while packages:
        name = packages.pop()
        if name in seen:
            continue
        seen.add(name)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        found[name] = Path(spec.origin)
        for info in pkgutil.iter_modules(spec.submodule_search_locations or []):
            full = f"{name}.{info.name}"
            if info.ispkg:
                packages.append(full)
            else:
                sub = importlib.util.find_spec(full)
                assert sub is not None and sub.origin is not None, full
                found[full] = Path(sub.origin)
    return found


def module_imports(name: str, path: Path, modules: set[str]) -> list[Import]:
    """The haltproof-internal import edges of one module, from its AST."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out: list[Import] = []
    guarded = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules or alias.name.startswith("haltproof"):
                    out.append(Import(name, _known(alias.name, modules), node.lineno,
                                      type_checking=id(node) in guarded))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.module, node.level)
            if not (base == "haltproof" or base.startswith("haltproof.")):
                continue
            plain = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:          # `from . import x`: an edge to the submodule x
                    out.append(Import(name, sub, node.lineno, type_checking=id(node) in guarded))
                else:
                    plain.append(alias.name)
            if plain:
                out.append(Import(name, _known(base, modules), node.lineno, tuple(plain), id(node) in guarded))
    return out


def _resolve(name: str, is_package: bool, module: str | None, level: int) -> str:
    """The absolute module a (possibly relative) `from ... import` reads from."""
    if level == 0:
        return module or ""
    parts = name.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def _known(target: str, modules: set[str]) -> str:
    """`target`, or the nearest enclosing module that exists (an attribute path imported)."""
    while target not in modules and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """The ids of import nodes inside an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) body."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out


def import_graph() -> list[Import]:
    modules = installed_modules()
    return [imp for name, path in sorted(modules.items()) for imp in module_imports(name, path, set(modules))]


# --------------------------------------------------------------------------------------- the tests

def test_the_installed_package_imports_one_way() -> None:
    edges = import_graph()
    assert len({e.source for e in edges}) > 40, "the graph lost most of the package"
    assert problems(edges) == []


def test_every_subpackage_has_a_place_in_the_layers() -> None:
    """A new subpackage must be put in the table above, or its imports go unchecked."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    tops = {p.split(".")[1] for p in listed if p.count(".") >= 1}
    assert tops == set(SUBPACKAGES)
    modules = installed_modules()
    for sub in SUBPACKAGES:
        assert f"haltproof.{sub}" in modules
    assert "haltproof.explorer.engine" in modules and "haltproof.api" in modules


def _e(source: str, target: str, line: int = 1, names: tuple[str, ...] = (), tc: bool = False) -> Import:
    return Import(source, target, line, names, tc)


def test_a_cycle_is_reported_with_its_edges() -> None:
    edges = [_e("haltproof.explorer.check", "haltproof.explorer.replay", 10),
             _e("haltproof.explorer.replay", "haltproof.explorer.check", 337, ("values_text",)),
             _e("haltproof.explorer.check", "haltproof.machine.spec", 3)]
    assert problems(edges) == [
        "import cycle: haltproof.explorer.check -> haltproof.explorer.replay at line 10 ; "
        "haltproof.explorer.replay -> haltproof.explorer.check (values_text) at line 337"]


def test_a_longer_cycle_is_reported_whole_and_a_type_checking_import_makes_none() -> None:
    edges = [_e("haltproof.machine.a", "haltproof.machine.b", 1), _e("haltproof.machine.b", "haltproof.machine.c", 2),
             _e("haltproof.machine.c", "haltproof.machine.a", 3),
             _e("haltproof.machine.d", "haltproof.machine.e", 4), _e("haltproof.machine.e", "haltproof.machine.d", 5,
                                                                     ("X",), tc=True)]
    assert problems(edges) == [
        "import cycle: haltproof.machine.a -> haltproof.machine.b at line 1 ; "
        "haltproof.machine.b -> haltproof.machine.c at line 2 ; haltproof.machine.c -> haltproof.machine.a at line 3"]


def test_an_upward_import_is_reported_with_its_edge() -> None:
    edges = [_e("haltproof.properties.termination", "haltproof.explorer.engine", 18, ("Exploration",)),
             _e("haltproof.explorer.engine", "haltproof.properties.kinds", 30, ("Subject",)),
             _e("haltproof.reports.text", "haltproof.cli.main", 5),
             _e("haltproof.cli.check", "haltproof.api", 7)]
    assert problems(edges) == [
        "imports upward (layer 2 -> layer 3): haltproof.properties.termination -> haltproof.explorer.engine "
        "(Exploration) at line 18",
        "imports upward (layer 4 -> layer 5): haltproof.reports.text -> haltproof.cli.main at line 5",
        "imports upward (layer 5 -> layer 6): haltproof.cli.check -> haltproof.api at line 7"]


def test_a_type_checking_import_still_may_not_go_upward() -> None:
    edges = [_e("haltproof.properties.termination", "haltproof.explorer.vengine", 21, ("VExploration",), tc=True)]
    assert problems(edges) == ["imports upward (layer 2 -> layer 3): haltproof.properties.termination -> "
                               "haltproof.explorer.vengine (VExploration) at line 21"]


def test_the_harness_and_the_specs_stay_apart() -> None:
    edges = [_e("haltproof.harness.loop", "haltproof.machine.usercode", 1),
             _e("haltproof.harness.budget.gate", "haltproof.harness.loop", 2),
             _e("haltproof.harness.loop", "haltproof.explorer.check", 3),
             _e("haltproof.explorer.check", "haltproof.harness.gates", 4),
             _e("haltproof.harness.budget.guarded", "haltproof.guard", 6),
             _e("haltproof.cli.main", "haltproof.specs", 5)]
    assert problems(edges) == [
        "the harness may import only haltproof.machine and haltproof.guard: haltproof.harness.loop -> "
        "haltproof.explorer.check at line 3",
        "imports the harness: haltproof.explorer.check -> haltproof.harness.gates at line 4",
        "imports the bundled specs: haltproof.cli.main -> haltproof.specs at line 5"]


def test_a_private_name_from_another_module_is_reported() -> None:
    edges = [_e("haltproof.machine.pymodel", "haltproof.machine.binding", 61, ("CodeError", "_hashable")),
             _e("haltproof.machine.pymodel", "haltproof.machine.pymodel", 70, ("_self",)),
             _e("haltproof.machine.pymodel", "haltproof.machine.errors", 63, ("__all__",))]
    assert problems(edges) == ["imports a private name: haltproof.machine.pymodel -> haltproof.machine.binding "
                               "(CodeError, _hashable) at line 61"]


def test_the_ast_reader_sees_lazy_relative_and_submodule_imports(tmp_path: Path) -> None:
    source = tmp_path / "replay.py"
    source.write_text("from __future__ import annotations\n"
                      "from typing import TYPE_CHECKING\n"
                      "from . import itf\n"
                      "from ..machine.spec import Spec, _private\n"
                      "import haltproof.machine.expr as E\n"
                      "if TYPE_CHECKING:\n"
                      "    from .check import RunResult\n"
                      "def f():\n"
                      "    from .check import values_text\n")
    modules = {"haltproof.explorer.replay", "haltproof.explorer.itf", "haltproof.explorer.check",
               "haltproof.machine.spec", "haltproof.machine.expr", "haltproof.machine", "haltproof.explorer"}
    got = module_imports("haltproof.explorer.replay", source, modules)
    assert sorted(got, key=lambda i: i.line) == [
        _e("haltproof.explorer.replay", "haltproof.explorer.itf", 3),
        _e("haltproof.explorer.replay", "haltproof.machine.spec", 4, ("Spec", "_private")),
        _e("haltproof.explorer.replay", "haltproof.machine.expr", 5),
        _e("haltproof.explorer.replay", "haltproof.explorer.check", 7, ("RunResult",), tc=True),
        _e("haltproof.explorer.replay", "haltproof.explorer.check", 9, ("values_text",))]
    assert problems(got) == ["imports a private name: haltproof.explorer.replay -> haltproof.machine.spec "
                             "(Spec, _private) at line 4"]


# ------------------------------------------------------------------------------ the architecture page's drawing

ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"


def drawn_tree() -> str:
    """The architecture page's first `text` block: the drawing of the tree."""
    block = re.search(r"```text\n(.*?)```", ARCHITECTURE.read_text(), re.S)
    assert block, "docs/explanation/architecture.md draws no tree"
    return block.group(1)


def drawn_modules(tree: str) -> dict[str, list[str]]:
    """Folder (as drawn, e.g. `machine/`) -> the module files drawn under it."""
    out: dict[str, list[str]] = {}
    folder = None
    for line in tree.splitlines():
        top = re.match(r"^(\S+/)", line)
        if top:
            folder = top.group(1)
            out[folder] = []
            continue
        mod = re.match(r"^\s+(?:[│├└─ ]*)([\w/]+\.py)\b", line)
        if mod and folder is not None:
            out[folder].append(mod.group(1))
    return out


def package_folders() -> set[str]:
    """Every package folder of the repository, as the drawing names it (`machine/`, `harness/budget/`)."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = setup["package-dir"]
    out = set()
    for pkg in setup["packages"]:
        parts = pkg.split(".")
        for k in range(len(parts), 0, -1):
            if ".".join(parts[:k]) in dirs:
                out.add("/".join([dirs[".".join(parts[:k])], *parts[k:]]) + "/")
                break
    return out


def drawing_problems(tree: str) -> list[str]:
    """Package folders and modules the drawing leaves out, and modules it draws that do not exist
    (a package's `__init__.py` need not be drawn: the folder's line says what the package is)."""
    drawn = drawn_modules(tree)
    folders = package_folders()
    out = [f"the architecture page does not draw the package folder {f}" for f in sorted(folders - set(drawn))]
    out += [f"the architecture page does not draw the module {folder}{p.name}"
            for folder in sorted(folders & set(drawn)) for p in sorted((ROOT / folder).glob("*.py"))
            if p.name != "__init__.py" and p.name not in drawn[folder]]
    out += [f"the architecture page draws {folder}{f}, which does not exist" for folder, files in drawn.items()
            for f in files if not (ROOT / folder / f).is_file()]
    return out


def test_the_architecture_page_draws_the_tree_that_exists() -> None:
    assert drawing_problems(drawn_tree()) == []


def test_the_drawing_check_catches_a_missing_folder_a_missing_module_and_one_that_is_gone() -> None:
    tree = drawn_tree().replace("specs/mutants/", "# ").replace("termination.py", "terminat1on.py")
    assert drawing_problems(tree) == ["the architecture page does not draw the package folder specs/mutants/",
                                      "the architecture page does not draw the module properties/termination.py",
                                      "the architecture page draws properties/terminat1on.py, which does not exist"]
