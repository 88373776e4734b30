"""LangGraph's shape, read from a compiled graph (or the function building one): for `haltproof
init` and `haltproof lint` (frameworks/introspect.py has the contract).

The graph is LangGraph's own: its builder's nodes, edges (`add_edge`, the waiting edges of
`add_edge([...], x)`), conditional edges (each `BranchSpec`: its routing function and the
destinations LangGraph knows, from a path map or a `Literal` return annotation) and the
destinations of nodes returning a `Command` (`Command[Literal[...]]`, `StateNodeSpec.ends`).
What LangGraph does not know is read from the source with `ast`: the targets a routing function's
return statements and a node's `Command(goto=...)` calls name, the lines of `add_node` and
`add_edge` calls, and the calls that run the graph (`invoke`, `stream`, ...) with their
`recursion_limit`. A function target is called once with scripted chat models (the
declaration's own, frameworks/langgraph.py) that answer nothing: building a graph runs no model.
"""

from __future__ import annotations

import ast
import inspect
import sys
import typing
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine import usercode

from .introspect import (Decided, Doc, Edge, Limit, Route, Shape, Site, TargetError, calls_in_module, function_ast,
                         header, hint_value, keyword, keyword_calls, label, literal_limit, module_ast, placeholder,
                         receiver, referenced, resolve_name, returned_targets, run_object, site_of, target_module)
from .langgraph import DEFAULT_LIMIT, END, GraphRun, is_graph, model_choice, require_langgraph, scripted_model

FRAMEWORK = "langgraph"
START = "__start__"
RUNS = {"invoke", "ainvoke", "stream", "astream", "batch", "abatch", "stream_events", "astream_events"}
NAMED = {"START": START, "END": END}      # LangGraph's constants, as a graph's code names them
SWEEP = 4           # how many recursion_limit values a starter declaration sweeps


def claims(obj: Any) -> bool:
    """A compiled graph, or a function whose module uses LangGraph (a function building a graph)."""
    if type(obj).__module__.startswith("langgraph."):
        return True
    if inspect.isfunction(obj):
        return any(str(getattr(v, "__module__", None) or getattr(v, "__name__", "")).startswith("langgraph")
                   for v in list(obj.__globals__.values()) if inspect.isclass(v) or inspect.ismodule(v)
                   or inspect.isfunction(v))
    return False


def require() -> str:
    return require_langgraph()


@dataclass
class Graph:
    """A target read: the compiled graph, the scripted models it was built with, what each node is."""

    ref: str
    target: Any
    graph: Any
    models: dict[str, Any]                                  # parameter -> the scripted model passed for it
    optional: list[str]                                     # parameters left at their defaults
    funcs: dict[str, Any] = field(default_factory=dict)     # node -> its function (None: a prebuilt node)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)     # ToolNode node -> tool name -> tool
    sites: dict[tuple[str, ...], int] = field(default_factory=dict)    # ("node", n) / ("edge", a, b) -> line
    file: str | None = None                                 # the file those lines are in

    @property
    def names(self) -> list[str]:
        return list(self.graph.builder.nodes)

    def site(self, *key: str) -> Site | None:
        line = self.sites.get(key)
        return Site(self.file, line) if line and self.file else None

    def node_site(self, name: str) -> Site | None:
        return self.site("node", name) or (site_of(self.funcs[name]) if self.funcs.get(name) else None)

    def models_of(self, name: str) -> list[str]:
        """The scripted models (by parameter) node `name`'s function can reach."""
        fn = self.funcs.get(name)
        if fn is None:
            return []
        seen = list(referenced(fn))
        return [p for p, m in self.models.items() if any(v is m for v in seen)]

    def calls_model(self, name: str) -> bool:
        """Whether node `name` calls a chat model: a scripted one, or one of the app's own."""
        from langchain_core.language_models import BaseLanguageModel
        fn = self.funcs.get(name)
        if fn is None:
            return False
        return any(isinstance(v, BaseLanguageModel) or isinstance(getattr(v, "bound", None), BaseLanguageModel)
                   for v in referenced(fn))


def read(obj: Any, ref: str) -> Graph:
    """The target's graph, built with scripted models when it is a function."""
    from langgraph.prebuilt import ToolNode
    models: dict[str, Any] = {}
    optional: list[str] = []
    if is_graph(obj):
        graph = obj
    elif callable(obj):
        try:
            params = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            params = []     # type: ignore[assignment]
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.default is not p.empty:
                optional.append(p.name)
            elif p.kind == p.POSITIONAL_ONLY:
                raise TargetError(f"{ref}: its parameter {p.name} is positional-only; a declaration passes "
                                  "the chat models by keyword")
            else:
                models[p.name] = scripted_model(GraphRun(), model_choice(p.name), {})
        try:
            graph = usercode.load_as(lambda: f"building the graph with {ref}", lambda: obj(**models))
        except usercode.FAILURES as exc:        # the user's function may fail in any way
            raise TargetError(f"{ref}: building the graph with {ref}({', '.join(models)}) failed: "
                              f"{type(exc).__name__}: {exc}") from None
        if not is_graph(graph):
            raise TargetError(f"{ref} gave a {type(graph).__name__}, not a compiled LangGraph graph "
                              "(StateGraph(...).compile())")
    else:
        raise TargetError(f"{ref} is a {type(obj).__name__}, not a compiled LangGraph graph or a function "
                          "building one")
    g = Graph(ref, obj, graph, models, optional)
    for name, spec in graph.builder.nodes.items():
        runnable = spec.runnable
        if isinstance(runnable, ToolNode):
            g.tools[name] = dict(runnable.tools_by_name)
            g.funcs[name] = None
        else:
            g.funcs[name] = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
    _read_sites(g, obj)
    return g


def _read_sites(g: Graph, obj: Any) -> None:
    """The lines of the `add_node`, `add_edge` and `add_conditional_edges` calls that built the graph,
    from the source of the function building it, else of its module."""
    parsed = function_ast(obj) if inspect.isfunction(obj) else None
    tree: ast.AST | None = None
    if parsed is not None:
        tree, site = parsed
        g.file = site.file
    else:
        module = target_module(g.ref)
        found = module_ast(module) if module else None
        if found:
            tree, g.file = found
    if tree is None:
        return
    span = _builder_span(tree, obj, target_module(g.ref))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if span is not None and not (isinstance(node.func.value, ast.Name) and node.func.value.id == span[0]
                                     and span[1] < node.lineno < span[2]):
            continue
        args = [a.value if isinstance(a, ast.Constant) else NAMED.get(getattr(a, "id", ""), getattr(a, "id", None))
                for a in node.args]
        method = node.func.attr
        if method == "add_node" and args and isinstance(args[0], str):
            g.sites.setdefault(("node", args[0]), node.lineno)
        elif method == "add_edge" and len(args) == 2:
            g.sites.setdefault(("edge", str(args[0]), str(args[1])), node.lineno)
        elif method == "add_conditional_edges" and args and isinstance(args[0], str):
            g.sites.setdefault(("branch", args[0]), node.lineno)


def _builder_span(tree: ast.AST, obj: Any, module: Any) -> tuple[str, int, int] | None:
    """For a module that builds several graphs: the builder variable the target was compiled from
    (`graph = builder.compile()`) and the lines between its last assignment and that compile call,
    where its `add_*` calls are; None when the source does not show it."""
    if inspect.isfunction(obj):
        return None
    names = {k for k, v in vars(module).items() if v is obj} if module else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets) \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr == "compile" and isinstance(node.value.func.value, ast.Name):
            builder, end = node.value.func.value.id, node.lineno
            starts = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno < end
                      and any(isinstance(t, ast.Name) and t.id == builder for t in n.targets)]
            return builder, max(starts, default=0), end
    return None


# ---------------------------------------------------------------- lint

def shape(obj: Any, ref: str) -> Shape:
    """The graph's nodes and edges, who decides each, unknown routes, and the recursion_limit the code shows."""
    g = read(obj, ref)
    s = Shape(FRAMEWORK, ref, "node", START, END, {n: g.node_site(n) for n in g.names})
    known = [*g.names, END]
    b = g.graph.builder
    for a, z in sorted(b.edges):
        s.edges.append(Edge(a, z, "always", g.site("edge", a, z), "the graph's edges (add_edge)"))
    for starts, z in sorted(b.waiting_edges):
        for a in starts:
            s.edges.append(Edge(a, z, "always", g.site("node", z), f"add_edge({list(starts)}, {z!r}): {z} waits for all"))
    for source, branches in sorted(b.branches.items()):
        for name, spec in branches.items():
            _branch(g, s, source, name, spec, known)
    for name in g.names:
        _commands(g, s, name, b.nodes[name], known)
    for name in g.names:
        if name not in s.open and not any(e.source == name for e in s.edges):
            s.edges.append(Edge(name, END, "always", g.node_site(name),
                                "no outgoing edge: LangGraph ends the run after this node"))
    s.limits = _limits(g)
    return s


def _branch(g: Graph, s: Shape, source: str, name: str, spec: Any, known: list[str]) -> None:
    """A conditional edge: its destinations (LangGraph's, else the router's literal returns) and
    the returns that name no destination."""
    from langgraph.prebuilt import tools_condition
    fn = getattr(spec.path, "func", None) or getattr(spec.path, "afunc", None)
    decided: Decided = "model" if fn is tools_condition or g.calls_model(source) else "code"
    ends = dict(spec.ends) if spec.ends else None
    where = g.site("branch", source) or site_of(fn)
    how = f"the routing function {name}: " + ("its path map or Literal return annotation" if ends
                                               else "its return statements (ast)")
    returns, whole, fsite = returned_targets(fn) if fn is not None else ([], False, None)
    allowed = list(ends) if ends else known
    for value, line in returns:
        if value not in allowed:
            s.routes.append(Route(source, value, tuple(allowed), Site(fsite.file, line) if fsite else where,
                                  f"the return statements of {name} (ast) against "
                                  + ("its path map" if ends else "the graph's nodes")))
    hints = _literal_returns(fn)
    if ends and hints:
        for value in hints:
            if value not in ends:
                s.routes.append(Route(source, value, tuple(ends), fsite or where,
                                      f"the Literal return annotation of {name} against its path map"))
    if ends:
        for dest in dict.fromkeys(ends.values()):
            s.edges.append(Edge(source, dest, decided, where, how))
    elif whole:
        for dest in dict.fromkeys(v for v, _ in returns if v in known):
            s.edges.append(Edge(source, dest, decided, where, how))
    else:
        s.open[source] = f"the routing function {name} computes its target"


def _literal_returns(fn: Any) -> list[str]:
    """The values of a function's `Literal[...]` return annotation."""
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:       # an annotation that does not resolve says nothing
        return []
    return [str(v) for v in typing.get_args(hint)] if typing.get_origin(hint) is typing.Literal else []


def _commands(g: Graph, s: Shape, name: str, spec: Any, known: list[str]) -> None:
    """A node returning `Command`s: the destinations of its annotation, else of its `goto=` literals."""
    fn = g.funcs.get(name)
    if fn is None:
        return
    decided: Decided = "model" if g.calls_model(name) else "code"
    gotos, seen, whole = keyword_calls(fn, "Command", "goto")
    site = site_of(fn)
    for value, line in gotos:
        if value not in known:
            s.routes.append(Route(name, value, tuple(known), Site(site.file, line) if site else None,
                                  f"the Command(goto=...) calls of {name} (ast) against the graph's nodes"))
    if spec.ends:
        for dest in spec.ends:
            s.edges.append(Edge(name, dest, decided, site, f"the Command[Literal[...]] return annotation of {name}"))
    elif seen and whole:
        for dest in dict.fromkeys(v for v, _ in gotos if v in known):
            s.edges.append(Edge(name, dest, decided, site, f"the Command(goto=...) calls of {name} (ast)"))
    elif seen:
        s.open[name] = f"{name} returns a Command whose goto the code computes"
    elif function_ast(fn) is None:
        s.open[name] = f"the source of {name} is not available"


def _limits(g: Graph) -> list[Limit]:
    """recursion_limit as the app sets it: on the compiled graph (`with_config`), and at each call
    that runs the graph in the target's module (none found: nothing to say)."""
    out: list[Limit] = []
    config = getattr(g.graph, "config", None) or {}
    if "recursion_limit" in config:
        value = config["recursion_limit"]
        bounded = isinstance(value, int) and value < sys.maxsize
        out.append(Limit("recursion_limit", value if bounded else None, False, None,
                         "the compiled graph's config (with_config)"))
        return out
    module = target_module(g.ref)
    if module is None:
        return out
    names = _graph_names(module, g.target)
    for call, file in calls_in_module(module, RUNS):
        if receiver(call) not in names:
            continue
        site = Site(file, call.lineno)
        given, config_expr = keyword(call, "config", 1)
        how = f"the call {receiver(call)}.{getattr(call.func, 'attr', '')}(...) (ast)"
        if not given:
            out.append(Limit("recursion_limit", DEFAULT_LIMIT, True, site, how))
            continue
        if not isinstance(config_expr, ast.Dict):
            continue        # a config computed elsewhere: nothing to say
        keys = [k.value if isinstance(k, ast.Constant) else None for k in config_expr.keys]
        if None in keys and "recursion_limit" not in keys:
            continue        # {**other}: it may set it
        if "recursion_limit" not in keys:
            out.append(Limit("recursion_limit", DEFAULT_LIMIT, True, site, how))
            continue
        known, value = literal_limit(config_expr.values[keys.index("recursion_limit")])
        if known:
            out.append(Limit("recursion_limit", value, False, site, how))
    return out


def _graph_names(module: Any, target: Any) -> set[str]:
    """The names the module runs the target's graph by: globals bound to it, and variables assigned
    from a call of the target function (`app = build_graph(...)`)."""
    names = {k for k, v in vars(module).items() if v is target}
    parsed = module_ast(module)
    if parsed is None or not inspect.isfunction(target):
        return names
    for node in ast.walk(parsed[0]):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Name) and node.value.func.id in names:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


# ---------------------------------------------------------------- init

ASKS = [
    "input: what your graph is started with; the values are placeholders read from its state's schema.",
    "what each chat model (or scripted node) may answer: init lists every answer the graph's shape allows "
    "(a final answer, a call of each tool a ToolNode it routes to runs, each value of a structured output's "
    "Literal field, each destination of a Command); keep the ones your model can really give, and make the "
    "placeholders (a tool call's args, texts) ones your nodes and tools accept.",
    "recursion_limit: the value your app passes to invoke/stream (haltproof cannot see it); the sweep "
    "below is small so that the first check is quick, LangGraph's default is 25.",
    "properties: what your app must do, beyond the out-of-the-box ones (docs/how-to/frameworks.md).",
]


def starter(obj: Any, ref: str) -> str:
    """A starter `framework: langgraph` declaration for the target (docs/how-to/init.md)."""
    g = read(obj, ref)
    s = shape(obj, ref)
    doc = Doc()
    header(doc, ref, "LangGraph", ASKS)
    doc.key("framework", FRAMEWORK)
    doc.key("target", ref)
    _input(doc, g)
    run_object(doc, "context", g.graph.builder.context_schema, "the runtime context your nodes read "
               "(runtime.context)")
    if g.models:
        _models(doc, g, s)
    _nodes(doc, g, s)
    low = max(2, _shortest(s))
    doc.blank()
    doc.comment("ASK: the limit your app sets (config={'recursion_limit': N}); every value swept is one run of "
                "the check. LangGraph's default is 25.")
    doc.key("params", block=True)
    doc.key("recursion_limit", {"min": low, "max": low + SWEEP - 1}, 2)
    _properties(doc, g)
    return doc.text()


def _input(doc: Doc, g: Graph) -> None:
    doc.blank()
    doc.comment("ASK: the graph's input, as you pass it to graph.invoke (placeholders from the state's schema).")
    doc.key("input", block=True)
    for name, value in _input_values(g).items():
        doc.key(name, value, 2)


def _input_values(g: Graph) -> dict[str, Any]:
    """A placeholder input: each channel of the graph's input schema, by its type."""
    from langgraph.managed.base import is_managed_value
    schema = g.graph.builder.input_schema
    try:
        hints = typing.get_type_hints(schema, include_extras=True)
    except Exception:       # a state class whose annotations do not resolve: its channels' names only
        hints = {k: Any for k in g.graph.builder.channels}
    out: dict[str, Any] = {}
    for name, hint in hints.items():
        if is_managed_value(hint) or any(is_managed_value(a) for a in typing.get_args(hint)):
            continue
        out[name] = _value_of(name, hint)
    return out


def _value_of(name: str, hint: Any) -> Any:
    """A placeholder value of a state channel's type."""
    if name == "messages" or "add_messages" in repr(hint):
        return [{"role": "user", "content": "ASK: a request your app really gets"}]
    return hint_value(name, hint)


def _answer_labels(g: Graph, node: str, s: Shape) -> list[tuple[str, Any, str]]:
    """The answers a model called in `node` may give, as (label, answer, what it is): a final text,
    then a call of each tool a ToolNode it routes to runs."""
    taken: set[str] = set()
    out: list[tuple[str, Any, str]] = [(label("answer", taken), "ASK: a final answer your model gives",
                                        "a final answer: no tool call")]
    for edge in s.edges:
        if edge.source == node and edge.target in g.tools:
            for tool_name, tool in g.tools[edge.target].items():
                args = placeholder({"type": "object", "properties": dict(getattr(tool, "args", {}) or {})})
                out.append((label(f"call_{tool_name}", taken),
                            {"content": "", "tool_calls": [{"name": tool_name, "args": args, "id": f"call_{tool_name}"}]},
                            f"a call of the tool {tool_name} (the ToolNode {edge.target} runs it)"))
    return out


def _models(doc: Doc, g: Graph, s: Shape) -> None:
    doc.blank()
    doc.comment(f"The chat models {g.ref} takes, scripted: on each superstep a model gives one of these answers "
                "(the choice NAME_answer). ASK: keep the answers your model can really give.")
    if g.optional:
        doc.comment(f"Left at their defaults (not scripted): {', '.join(g.optional)}.")
    doc.key("models", block=True)
    for param in g.models:
        nodes = [n for n in g.names if param in g.models_of(n)]
        doc.key(param, indent=2, block=True, note=f"called in {', '.join(nodes)}" if nodes else "called by no node")
        schema = _structured(g, param, nodes)
        answers = _structured_answers(schema) if schema is not None else \
            [a for n in nodes[:1] for a in _answer_labels(g, n, s)] or \
            [("answer", "ASK: a final answer your model gives", "a final answer")]
        for name, answer, what in answers:
            doc.key(name, answer, 4, note=what)


def _structured(g: Graph, param: str, nodes: list[str]) -> Any:
    """The schema a model is asked for with `.with_structured_output(Schema)` in its nodes, if any."""
    model = g.models[param]
    for n in nodes:
        fn = g.funcs.get(n)
        parsed = function_ast(fn) if fn else None
        if parsed is None:
            continue
        for node in ast.walk(parsed[0]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "with_structured_output" and isinstance(node.func.value, ast.Name) and \
                    node.args and isinstance(node.args[0], ast.Name):
                found, value = resolve_name(fn, node.func.value.id)
                if found and value is model:
                    ok, schema = resolve_name(fn, node.args[0].id)
                    if ok:
                        return schema
    return None


def _structured_answers(schema: Any) -> list[tuple[str, Any, str]]:
    """A structured output's answers: one per value of its first Literal (enum) field, else one."""
    from pydantic import TypeAdapter
    try:
        js = TypeAdapter(schema).json_schema()
    except Exception:       # a schema pydantic cannot read: one placeholder answer
        return [("answer", {"ASK": "the structured answer's fields"}, "a structured answer")]
    base = placeholder(js)
    base = base if isinstance(base, dict) else {}
    props = js.get("properties", {})
    field_name = next((k for k, v in props.items() if v.get("enum")), None)
    if field_name is None:
        return [("answer", base, f"a {getattr(schema, '__name__', 'structured')} answer")]
    taken: set[str] = set()
    return [(label(str(v), taken), {**base, field_name: v}, f"{field_name} = {v}")
            for v in props[field_name]["enum"]]


def _nodes(doc: Doc, g: Graph, s: Shape) -> None:
    """Scripted nodes: a node returning a Command to several destinations (it decides the route) and,
    in a compiled graph, a node calling one of the app's chat models (its answer cannot be scripted)."""
    scripted = [n for n in g.names if _routes_by_command(g, s, n) or (not g.models and g.calls_model(n))]
    if not scripted:
        return
    doc.blank()
    doc.comment("Nodes whose return value is scripted instead of run (the choice NAME_returns). ASK: keep what "
                "each can really return, with the update it writes; delete a node's entry to run it as written.")
    doc.key("nodes", block=True)
    for n in scripted:
        dests = [e.target for e in s.edges if e.source == n and e.decided != "always"]
        if _routes_by_command(g, s, n):
            doc.key(n, indent=2, block=True, note="it returns a Command: where the run goes next")
            taken: set[str] = set()
            for dest in dests:
                doc.key(label(f"to_{dest.strip('_')}", taken), {"command": {"goto": dest}}, 4,
                        note=f"goes to {dest}; add the update it writes (update: {{...}})")
        else:
            doc.key(n, indent=2, block=True, note="it calls a chat model of your app")
            for name, answer, what in _answer_labels(g, n, s):
                message = {"role": "assistant", **answer} if isinstance(answer, dict) else \
                    {"role": "assistant", "content": answer}
                doc.key(name, {"messages": [message]}, 4, note=what)


def _routes_by_command(g: Graph, s: Shape, n: str) -> bool:
    """Whether node `n` picks the next node with a Command, among two or more, without a scripted model."""
    if g.models_of(n):
        return False
    return len({e.target for e in s.edges if e.source == n and e.how.startswith("the Command")}) >= 2


def _shortest(s: Shape) -> int:
    """The fewest edges from the start to the end (a run that answers needs a limit of at least that)."""
    import networkx as nx
    graph = nx.DiGraph([(e.source, e.target) for e in s.edges])
    try:
        return int(nx.shortest_path_length(graph, s.start, s.end))
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return 2


def _properties(doc: Doc, g: Graph) -> None:
    doc.blank()
    doc.comment("The out-of-the-box properties are always checked: run_ends, limit_error, most_supersteps"
                + (", most_model_calls" if g.models else "")
                + (", most_tool_runs" if "messages" in g.graph.builder.channels else "")
                + ". ASK: add what your app must do, over the vars next, steps, status, runs_NODE"
                + (", model_calls" if g.models else "") + (", tool_runs" if "messages" in g.graph.builder.channels
                                                           else "") + ", e.g.:")
    first = g.names[0] if g.names else "NODE"
    doc.comment("properties:")
    doc.comment(f"  {first}_at_most_twice:", 0)
    doc.comment(f"    always: runs_{first} <= 2")
