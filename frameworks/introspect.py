"""Reading a framework object's shape without running it: what `haltproof init` writes a starter
declaration from and what `haltproof lint` judges (docs/how-to/init.md, docs/how-to/lint.md).

A framework plugs in with one module (`register_shape`), which gives:

- `claims(obj)`: whether `obj` is that framework's object (without importing a framework the
  object does not come from);
- `require()`: the framework's installed version, or a RuntimeError naming the problem
  (frameworks/declaration.py's require_version);
- `shape(obj, ref)`: the object's `Shape`: its nodes (graph nodes, agents), the edges a run may
  take, who decides each (a fixed edge, the app's code, a model), the routes the code can take to
  a target the app does not have, and the limits over its runs as far as the code shows them;
- `starter(obj, ref)`: the text of a starter declaration file (docs/how-to/frameworks.md's format).

The rules over a shape (cycles without an exit, unreachable nodes, ...) are framework-neutral and
live here (`findings`). Everything is read by introspection (the framework's own objects,
`inspect` and `ast` over the app's source): nothing here runs a model or explores a state.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, Protocol, cast

import yaml

from haltproof.machine.errors import Located, SpecError
from haltproof.machine.spec import shown_path

from .declaration import import_object

Decided = Literal["always", "code", "model"]


class TargetError(Exception):
    """TARGET names nothing haltproof can read (it does not import, or is no supported object): exit 2."""


@dataclass(frozen=True)
class Site:
    """Where something is written in the app's source."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Edge:
    """A step a run may take from one node (or agent) to another, and who decides it."""

    source: str
    target: str
    decided: Decided        # always (a fixed edge), code (a routing function, a Command), model (its answer)
    site: Site | None
    how: str                # the introspection that showed it


@dataclass(frozen=True)
class Limit:
    """A framework limit over a run as the app sets it where the code shows it (a call site, the object)."""

    name: str               # recursion_limit, max_turns, request_limit
    value: int | None       # None: unbounded
    default: bool           # left at the framework's default there
    site: Site | None
    how: str


@dataclass(frozen=True)
class Route:
    """A target a router or a node can send the run to that the app does not have."""

    source: str
    value: str
    known: tuple[str, ...]  # what it may name
    site: Site | None
    how: str


@dataclass
class Shape:
    """A framework object's structure, as introspection shows it."""

    framework: str
    ref: str                            # module:attr, as given
    unit: str                           # what a node is: "node", "agent"
    start: str
    end: str                            # the node that stands for "the run ended"
    nodes: dict[str, Site | None]
    edges: list[Edge] = field(default_factory=list)
    open: dict[str, str] = field(default_factory=dict)      # node -> why its destinations are not all known
    limits: list[Limit] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    limit_error: str = "limit_error"    # the out-of-the-box property for the limit error (docs/how-to/frameworks.md)


@dataclass(frozen=True)
class Finding:
    """One lint finding: what, where, how haltproof saw it, and the check that would prove or refute it."""

    rule: str
    subject: str            # the node, edge or cycle it is about
    message: str
    site: Site | None
    how: str
    prove: str

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "subject": self.subject, "message": self.message,
                "file": self.site.file if self.site else None, "line": self.site.line if self.site else None,
                "introspection": self.how, "prove": self.prove}


RULES: dict[str, str] = {
    "cycle-without-exit": "a cycle no run can leave: every run that enters it ends only by the framework's limit",
    "cycle-exits-by-model-only": "a cycle whose only exit is a model's decision, with no limit on it",
    "unreachable": "a node or agent no run reaches from the start",
    "end-unreachable": "a node or agent from which no run can end",
    "unknown-route": "a routing function or node that can send the run to a target the app does not have",
    "limit-default": "a framework limit left at its default where the app runs the object",
    "limit-unbounded": "a framework limit turned off where the app runs the object",
}


class ShapeModule(Protocol):
    """What a framework's introspection module gives (see the module docstring)."""

    FRAMEWORK: str

    def claims(self, obj: Any) -> bool: ...

    def require(self) -> str: ...

    def shape(self, obj: Any, ref: str) -> Shape: ...

    def starter(self, obj: Any, ref: str) -> str: ...


_SHAPES: dict[str, str] = {}


def register_shape(framework: str, module: str) -> None:
    """Register the module reading `framework`'s objects (imported only when an object is read)."""
    _SHAPES[framework] = module


def shaped_frameworks() -> tuple[str, ...]:
    """The frameworks whose objects `init` and `lint` read (the folder names of examples/frameworks/)."""
    return tuple(_SHAPES)


register_shape("langgraph", "haltproof.frameworks.langgraph_shape")
register_shape("openai_agents", "haltproof.frameworks.openai_agents_shape")
register_shape("pydantic_ai", "haltproof.frameworks.pydantic_ai_shape")
register_shape("adk", "haltproof.frameworks.adk_shape")

SUPPORTED = "a compiled LangGraph graph (or a function building one from its chat models), an OpenAI Agents Agent, " \
            "a Pydantic AI Agent or a Google ADK agent"


def target_module(ref: str) -> ModuleType | None:
    """The module TARGET names (`module` of `module:attr`), imported by `load`: where the app's code
    that builds and runs the object is read from."""
    return sys.modules.get(ref.partition(":")[0])


def load(ref: str) -> Any:
    """The object TARGET (`module:attr`) names, imported from the working directory as
    declarations import theirs; TargetError when it does not import."""
    try:
        return import_object(ref, os.getcwd(), Located(ref, None))
    except SpecError as exc:
        problem = exc.problems[0]
        raise TargetError(f"{ref}: {problem.message}") from None


def reader(obj: Any, ref: str) -> ShapeModule:
    """The module of the framework `obj` belongs to, its version checked; TargetError otherwise."""
    for name in _SHAPES.values():
        module = cast(ShapeModule, importlib.import_module(name))
        if module.claims(obj):
            try:
                module.require()
            except RuntimeError as exc:
                raise TargetError(f"{ref}: {exc}") from None
            return module
    raise TargetError(f"{ref} is a {type(obj).__name__}, not {SUPPORTED}")


# ---------------------------------------------------------------- source introspection (inspect, ast)

def site_of(obj: Any) -> Site | None:
    """Where a function (or class) is defined, as the user sees the path."""
    try:
        fn = inspect.unwrap(obj)
        file = inspect.getsourcefile(fn)
        line = inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return None
    return Site(shown_path(file), max(line, 1)) if file else None


def function_ast(fn: Any) -> tuple[ast.AST, Site] | None:
    """A function's syntax tree, its line numbers those of its file; None when its source is unavailable."""
    site = site_of(fn)
    if site is None:
        return None
    try:
        lines, first = inspect.getsourcelines(inspect.unwrap(fn))
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (TypeError, OSError, SyntaxError):
        return None
    ast.increment_lineno(tree, max(first, 1) - 1)
    return tree, site


def module_ast(module: ModuleType) -> tuple[ast.Module, str] | None:
    """A module's syntax tree and its file as shown; None without source."""
    try:
        file = inspect.getsourcefile(module)
        source = inspect.getsource(module)
    except (TypeError, OSError):
        return None
    if not file:
        return None
    try:
        return ast.parse(source), shown_path(file)
    except SyntaxError:
        return None


def resolve_name(fn: Any, name: str) -> tuple[bool, Any]:
    """The value a name in `fn`'s body refers to (its closure, then its module's globals)."""
    code = getattr(fn, "__code__", None)
    if code is not None and fn.__closure__:
        cells = dict(zip(code.co_freevars, fn.__closure__))
        if name in cells:
            try:
                return True, cells[name].cell_contents
            except ValueError:
                return False, None
    space = getattr(fn, "__globals__", {})
    if name in space:
        return True, space[name]
    return False, None


def referenced(fn: Any) -> Iterator[Any]:
    """The values `fn` can reach by name: its closure cells and the globals its code names."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    for cell in fn.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:
            continue
    space = getattr(fn, "__globals__", {})
    for name in _names(code):
        if name in space:
            yield space[name]


def _names(code: Any) -> set[str]:
    """The global names a code object and the code nested in it use."""
    out = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            out |= _names(const)
    return out


def strings(node: ast.AST | None, fn: Any) -> tuple[list[str], bool]:
    """The target names an expression can give: string literals, names bound to strings, lists,
    tuples and conditional expressions of those, `Send("x", ...)` calls. The bool says whether
    every part was such (False: the code computes a target it does not show)."""
    if node is None:
        return [], False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value], True
    if isinstance(node, ast.Name):
        found, value = resolve_name(fn, node.id)
        return ([value], True) if found and isinstance(value, str) else ([], False)
    if isinstance(node, ast.Attribute):
        return [], False
    if isinstance(node, (ast.List, ast.Tuple)):
        out: list[str] = []
        whole = True
        for item in node.elts:
            got, ok = strings(item, fn)
            out += got
            whole = whole and ok
        return out, whole
    if isinstance(node, ast.IfExp):
        a, ok_a = strings(node.body, fn)
        b, ok_b = strings(node.orelse, fn)
        return a + b, ok_a and ok_b
    if isinstance(node, ast.Call) and called(node) == "Send" and node.args:
        return strings(node.args[0], fn)
    return [], False


def called(call: ast.Call) -> str | None:
    """The name a call calls: `f(...)` -> f, `x.f(...)` -> f."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def own_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions nested in it (their returns are theirs)."""
    body = tree.body[0].body if isinstance(tree, ast.Module) and tree.body and \
        isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else [tree]
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(child)


def returned_targets(fn: Any) -> tuple[list[tuple[str, int]], bool, Site | None]:
    """What a routing function's return statements give: (target, line) each, whether every
    return shows its targets, and the function's site."""
    parsed = function_ast(fn)
    if parsed is None:
        return [], False, site_of(fn)
    tree, site = parsed
    out: list[tuple[str, int]] = []
    whole = True
    returns = [n for n in own_nodes(tree) if isinstance(n, ast.Return)]
    for node in returns:
        got, ok = strings(node.value, fn)
        out += [(value, node.lineno) for value in got]
        whole = whole and ok
    return sorted(out, key=lambda t: t[1]), whole and bool(returns), site


def keyword_calls(fn: Any, callee: str, keyword: str) -> tuple[list[tuple[str, int]], bool, bool]:
    """The targets `callee(..., keyword=...)` calls in `fn`'s body name (Command(goto=...)): (target,
    line) each, whether there is such a call at all, and whether each shows its targets."""
    parsed = function_ast(fn)
    if parsed is None:
        return [], False, False
    tree, _ = parsed
    out: list[tuple[str, int]] = []
    seen = False
    whole = True
    for node in own_nodes(tree):
        if isinstance(node, ast.Call) and called(node) == callee:
            seen = True
            value = next((k.value for k in node.keywords if k.arg == keyword), None)
            if value is None:
                continue        # a Command without goto stays where the graph's edges take it
            got, ok = strings(value, fn)
            out += [(v, node.lineno) for v in got]
            whole = whole and ok
    return sorted(out, key=lambda t: t[1]), seen, whole


def calls_in_module(module: ModuleType, methods: set[str]) -> list[tuple[ast.Call, str]]:
    """Every call of a method named in `methods` in the module's source, with the module's file."""
    parsed = module_ast(module)
    if parsed is None:
        return []
    tree, file = parsed
    return [(node, file) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods]


def name_lines(module: ModuleType | None) -> tuple[dict[str, int], str | None]:
    """The line of each `Agent(name="...")` call (any call given a literal `name=`) in the module's
    source, by name, and the module's file as shown: where an agent is made."""
    parsed = module_ast(module) if module else None
    if parsed is None:
        return {}, None
    tree, file = parsed
    lines: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = next((k.value for k in node.keywords if k.arg == "name"), None)
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                lines.setdefault(name.value, node.lineno)
    return lines, file


UNBOUNDED_NAMES = {"inf", "maxsize"}


def literal_limit(node: ast.AST | None) -> tuple[bool, int | None]:
    """A limit's value as written: (known, value); value None for an unbounded one (None,
    float('inf'), math.inf, sys.maxsize); known False for a computed value."""
    if node is None:
        return False, None
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, int)):
        return True, None if node.value is None or isinstance(node.value, bool) else node.value
    if isinstance(node, ast.Attribute) and node.attr in UNBOUNDED_NAMES:
        return True, None
    if isinstance(node, ast.Call) and called(node) == "float" and node.args and \
            isinstance(node.args[0], ast.Constant) and str(node.args[0].value).lower() in ("inf", "infinity"):
        return True, None
    return False, None


def keyword(call: ast.Call, name: str, position: int | None = None) -> tuple[bool, ast.AST | None]:
    """Whether a call passes argument `name` (by keyword, or at `position`), and its expression."""
    for k in call.keywords:
        if k.arg == name:
            return True, k.value
        if k.arg is None:       # **kwargs: it may pass anything
            return True, None
    if position is not None and len(call.args) > position:
        return True, call.args[position]
    return False, None


def receiver(call: ast.Call) -> str | None:
    """The name a method is called on: `graph.invoke(...)` -> graph."""
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return call.func.value.id
    return None


# ---------------------------------------------------------------- the rules over a shape

def _graph(shape: Shape) -> Any:
    import networkx as nx
    g = nx.DiGraph()
    g.add_nodes_from([*shape.nodes, shape.start, shape.end])
    for e in shape.edges:
        g.add_edge(e.source, e.target)
    return g


def stem(ref: str) -> str:
    """The file name init writes by default for `module:attr`: the attr's last part."""
    return re.sub(r"\W+", "_", ref.rpartition(":")[2].rpartition(".")[2]) or "declaration"


def init_then_check(ref: str) -> str:
    """The commands that write a declaration for `ref` and check it."""
    return f"haltproof init {ref} -o {stem(ref)}.yaml && haltproof check {stem(ref)}.yaml"


def findings(shape: Shape) -> list[Finding]:
    """Every finding of the framework-neutral rules over `shape`, in a stable order."""
    out = [*_cycles(shape), *_unreachable(shape), *_routes(shape), *_limits(shape)]
    return sorted(out, key=lambda f: (list(RULES).index(f.rule), f.subject))


def _cycle_text(nodes: list[str], g: Any) -> str:
    """A cycle through an SCC's nodes, written a -> b -> a."""
    import networkx as nx
    sub = g.subgraph(nodes)
    try:
        cycle = [u for u, _ in nx.find_cycle(sub, source=sorted(nodes)[0])]
    except nx.NetworkXNoCycle:
        cycle = sorted(nodes)
    return " -> ".join([*cycle, cycle[0]])


def _cycles(shape: Shape) -> Iterator[Finding]:
    import networkx as nx
    g = _graph(shape)
    bounded = [lim for lim in shape.limits if lim.value is not None]
    unbounded = [lim for lim in shape.limits if lim.value is None]
    reach = nx.descendants(g, shape.start)
    for scc in nx.strongly_connected_components(g):
        nodes = sorted(scc)
        if shape.end in scc or not (len(nodes) > 1 or g.has_edge(nodes[0], nodes[0])) or not scc <= reach:
            continue        # no cycle, or one no run reaches (its nodes are reported unreachable)
        if any(n in shape.open for n in nodes):
            continue        # where a node may go is not all known: nothing to claim
        exits = [e for e in shape.edges if e.source in scc and e.target not in scc]
        cycle = _cycle_text(nodes, g)
        inner = [e for e in shape.edges if e.source in scc and e.target in scc]
        first = min((e for e in inner if e.site), key=lambda e: (e.site.line if e.site else 0), default=None)
        site = first.site if first else shape.nodes.get(nodes[0])
        how = "; ".join(sorted({e.how for e in inner}))
        if not exits:
            yield Finding("cycle-without-exit", f"cycle {cycle}",
                          f"no edge leaves the cycle {cycle}: a run that enters it never ends on its own, only "
                          f"by the framework's limit error", site, how,
                          f"{init_then_check(shape.ref)} (run_ends; {shape.limit_error} is reachable at every limit)")
        elif all(e.decided == "model" for e in exits) and unbounded and not bounded:
            edge = exits[0]
            lim = unbounded[0]
            yield Finding("cycle-exits-by-model-only", f"edge {edge.source} -> {edge.target}",
                          f"the only way out of the cycle {cycle} is a model's decision ({edge.source} -> "
                          f"{edge.target}) and {lim.name} is unbounded{f' at {lim.site}' if lim.site else ''}: "
                          "a model that never decides to stop runs forever", edge.site or site,
                          f"{edge.how}; {lim.how}",
                          f"{init_then_check(shape.ref)} (run_ends is violated with {lim.name} unbounded: "
                          "the declaration sweeps it, so set the value your app uses)")


def _unreachable(shape: Shape) -> Iterator[Finding]:
    import networkx as nx
    g = _graph(shape)
    reach = nx.descendants(g, shape.start) | {shape.start}
    if not any(n in shape.open for n in reach):
        for name in sorted(set(shape.nodes) - reach):
            yield Finding("unreachable", f"{shape.unit} {name}",
                          f"no run reaches the {shape.unit} {name}: no edge from {shape.start} leads to it",
                          shape.nodes[name], "the edges of " + shape.ref,
                          f"{init_then_check(shape.ref)}, with the property "
                          f"`{name}_runs: {{reachable: {_runs_var(shape, name)}}}`")
    ends = nx.ancestors(g, shape.end) | {shape.end}
    stuck_cycles = set()
    for scc in nx.strongly_connected_components(g):
        if shape.end not in scc and not any(e.source in scc and e.target not in scc for e in shape.edges):
            stuck_cycles |= scc
    for name in sorted((reach & set(shape.nodes)) - ends - stuck_cycles):
        if any(n in shape.open for n in nx.descendants(g, name) | {name}):
            continue
        yield Finding("end-unreachable", f"{shape.unit} {name}",
                      f"no run can end after the {shape.unit} {name}: every way on from it leads into a cycle "
                      "that no edge leaves", shape.nodes[name], "the edges of " + shape.ref,
                      f"{init_then_check(shape.ref)} (run_ends; {shape.limit_error})")


def _runs_var(shape: Shape, name: str) -> str:
    return f"runs_{name} > 0" if shape.unit == "node" else f"agent == '{name}'"


def _routes(shape: Shape) -> Iterator[Finding]:
    import networkx as nx
    reach = nx.descendants(_graph(shape), shape.start)
    for r in shape.routes:
        if r.source not in reach:
            continue        # in a node no run reaches: reported as unreachable
        yield Finding("unknown-route", f"{shape.unit} {r.source}",
                      f"{r.source} can send the run to {r.value!r}, which is not one of its targets "
                      f"({', '.join(r.known)})", r.site, r.how,
                      f"{init_then_check(shape.ref)} (a run that takes it ends in the framework's error: "
                      "a bound_code finding with its trace)")


def _limits(shape: Shape) -> Iterator[Finding]:
    for lim in shape.limits:
        if lim.value is None:
            yield Finding("limit-unbounded", lim.name, f"{lim.name} is turned off here: nothing bounds a run's "
                          f"length but the model's own decisions", lim.site, lim.how,
                          f"{init_then_check(shape.ref)} (sweeps {lim.name}; run_ends and "
                          f"{shape.limit_error} say which value is safe)")
        elif lim.default:
            yield Finding("limit-default", lim.name, f"the run is started without {lim.name}: the framework's "
                          f"default of {lim.value} applies, a number chosen for no app in particular",
                          lim.site, lim.how,
                          f"{init_then_check(shape.ref)} ({shape.limit_error} with smallest_safe gives the "
                          f"smallest {lim.name} no run exceeds)")


# ---------------------------------------------------------------- writing a starter declaration

def flow(value: Any) -> str:
    """A value as one line of YAML (flow style), safe to read back as the same value."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6, allow_unicode=True, sort_keys=False).strip()
    return text[:-4].rstrip() if text.endswith("\n...") else text


class Doc:
    """A YAML document written line by line, with the comments that tell the user what to keep."""

    WIDTH = 100

    def __init__(self) -> None:
        self.lines: list[str] = []

    def comment(self, text: str, indent: int = 0) -> None:
        for line in textwrap.wrap(text, self.WIDTH - indent - 2) or [""]:
            self.lines.append(f"{' ' * indent}# {line}".rstrip())

    def key(self, name: str, value: Any = None, indent: int = 0, note: str | None = None,
            block: bool = False) -> None:
        head = f"{' ' * indent}{flow(name)}:"
        if not block:
            head += f" {flow(value)}"
        self.lines.append(f"{head}  # {note}" if note else head)

    def blank(self) -> None:
        self.lines.append("")

    def text(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"


def placeholder(schema: dict[str, Any], name: str = "value", defs: dict[str, Any] | None = None,
                depth: int = 0) -> Any:
    """A value of a JSON schema for a scripted answer or a tool's arguments: the first enum or
    const, a string naming the field, 0, false, empty containers; objects field by field."""
    defs = schema.get("$defs", defs or {})
    if "$ref" in schema and depth < 8:
        return placeholder(defs.get(str(schema["$ref"]).rpartition("/")[2], {}), name, defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return placeholder(options[0], name, defs, depth + 1)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if depth >= 8:
            return {}
        required = schema.get("required", list(schema.get("properties", {})))
        return {k: placeholder(v, k, defs, depth + 1) for k, v in schema.get("properties", {}).items()
                if k in required}
    return {"integer": 0, "number": 0, "boolean": False, "array": [], "null": None}.get(str(kind), name)


def label(text: str, taken: set[str]) -> str:
    """An outcome label from free text (`to_Billing agent` -> to_billing_agent), distinct from `taken`."""
    base = re.sub(r"\W+", "_", text.lower()).strip("_") or "outcome"
    if base[0].isdigit():
        base = "_" + base
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    taken.add(out)
    return out


def input_and_models(doc: Doc, where: str, who: str, agents: dict[str, Any],
                     answers: Callable[[Any], list[tuple[str, Any, str]]]) -> None:
    """The starter's `input:` (`where` says where the app passes it) and its `models:` block: per
    agent (`who` names the kind) the answers its model may give, each with what it is."""
    doc.blank()
    doc.comment(f"ASK: {where}")
    doc.key("input", "ASK: a request your app really gets")
    doc.blank()
    doc.comment(f"What each {who}'s model may answer, by agent name (the choice SLUG_says). ASK: keep the answers "
                "its model can really give.")
    doc.key("models", block=True)
    for name, agent in agents.items():
        doc.key(name, indent=2, block=True)
        for key, answer, what in answers(agent):
            doc.key(key, answer, 4, note=what)


def header(doc: Doc, ref: str, framework: str, asks: list[str]) -> None:
    """The starter's opening comment: what wrote it, and what it cannot know and asks the user."""
    doc.comment(f"A starter declaration for {ref}, written by `haltproof init` (docs/how-to/init.md): `haltproof "
                f"check` on this file explores your {framework} app as the framework runs it.")
    doc.comment("What init cannot know from the code, and asks you (search for ASK):")
    for n, ask in enumerate(asks, 1):
        doc.comment(f"{n}. {ask}")


def hint_value(name: str, hint: Any) -> Any:
    """A placeholder value of a type hint: empty containers, false, 0, a Literal's first value, the
    name itself for a string (so the user sees which value to replace), "" otherwise."""
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    origin = typing.get_origin(hint) or hint
    if origin in (list, tuple, set) or str(origin).startswith("typing.Sequence"):
        return []
    if origin is dict:
        return {}
    if origin is bool:
        return False
    if origin in (int, float):
        return 0
    if origin is typing.Literal:
        return typing.get_args(hint)[0]
    return name if origin is str else ""


def run_object(doc: Doc, key: str, cls: Any, what: str) -> None:
    """`context:` or `deps:` for a run object of the app's type `cls` (docs/how-to/langgraph.md): each
    field your type requires, a placeholder of its type, and a field whose type is a class with
    methods (a client, a backend: what a run cannot call offline) as those methods scripted, one
    answer each. Nothing when `cls` declares no fields."""
    fields = _required_fields(cls)
    if not fields:
        return
    doc.blank()
    doc.comment(f"ASK: {what}, made for each run: its fields (placeholders from its type). A method of a field's "
                "type is scripted: each call answers one of its outcomes (add one per thing the real service may "
                "return, or {raises: CLASS, message: TEXT}); what it returns must be what your code expects.")
    doc.key(key, block=True)
    for name, hint in fields.items():
        methods = _public_methods(hint)
        if not methods:
            doc.key(name, hint_value(name, hint), 2)
            continue
        doc.key(name, block=True, indent=2)
        for method, returns in methods.items():
            doc.key(method, {"scripted": {"answer": hint_value(method, returns)}}, 4,
                    note=f"what {name}.{method}(...) returns")


def _required_fields(cls: Any) -> dict[str, Any]:
    """The fields a run object's type requires to be given (a dataclass's or pydantic model's
    without a default, a TypedDict's all), with their type hints; none for no class."""
    if not inspect.isclass(cls) or cls.__module__ in ("builtins", "typing"):
        return {}
    try:
        hints = typing.get_type_hints(cls)
        params = inspect.signature(cls).parameters
    except Exception:       # annotations naming what cannot be resolved here, no signature: unknown
        return {}
    if typing.is_typeddict(cls):
        return dict(hints)
    return {name: hints.get(name, Any) for name, p in params.items()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _public_methods(hint: Any) -> dict[str, Any]:
    """A field type's public methods (a client's, a backend's) with their return type hints; none
    for a builtin or typing type (data, not a service)."""
    if not inspect.isclass(hint) or hint.__module__ in ("builtins", "typing", "collections.abc"):
        return {}
    out: dict[str, Any] = {}
    for name, member in inspect.getmembers(hint, callable):
        if name.startswith("_") or inspect.isclass(member):
            continue
        try:
            out[name] = typing.get_type_hints(member).get("return", Any)
        except Exception:   # an annotation that does not resolve: a placeholder of no type
            out[name] = Any
    return out
