"""The explored state space as one graph model, and every format drawn from it.

`build_graph` turns one exploration (the same BFS as `check`), with the traces to
highlight, into a `StateGraph`; `haltproof graph` (cli/graph.py) writes it as DOT,
GraphML, Mermaid or JSON, and the HTML report (reports/html.py) draws it as inline SVG
through the same DOT writer. What the graph holds, in every format:

- node `i` is the i-th state in BFS order: each var's value, `depth`, `initial`,
  `terminal`, `terminal_label` (the terminal label's value, "" when not terminal or the
  spec's terminal is a predicate), `deadlock` (non-terminal, no successor), `spec_error`
  (a transition from it left its domain or failed to evaluate), `cut` (how many of its
  transitions go to states left out by --max-nodes) and `highlight` (on a trace);
- an edge is every transition between the same two states (`action`, `choices`, `rule`);
  GraphML and JSON hold one edge per pair (a networkx DiGraph), with the values of merged
  transitions joined with " | " and `transitions` counting them;
- what was explored and what is shown (`states`, `transitions`, `shown_states`,
  `shown_transitions`, `left_out_states`, `left_out_transitions`, `note`).

DOT and Mermaid text are written here (no Graphviz needed); every id and label is quoted
and escaped. In the networkx form every attribute value is a str, int or bool, so the same
graph goes to GraphML and JSON (node-link). In every format a lone surrogate in a name or
value is written as its escape `\\udc80`, as in the reports (machine/text.py `encodable`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:      # networkx is imported where a graph is exported: it costs startup time
    import networkx as nx

from haltproof.machine.compiled import EvalError, Machine
from haltproof.machine.text import assignments_text, encodable, value_text
from haltproof.properties.kinds import Step, Trace

from haltproof.explorer.engine import Exploration

FORMAT_NAMES = ("dot", "graphml", "mermaid", "json")
DEFAULT_MAX_NODES = 500


def _scalar(value: Any) -> str | int | bool:
    """An attribute value GraphML can hold."""
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return encodable(value)
    return json.dumps(value, default=repr) if isinstance(value, (list, dict)) else repr(value)


# ---------------------------------------------------------------- the model

@dataclass(frozen=True)
class Transition:
    """One transition of an edge: the action, its choices (in declared order) and the decide rule."""

    action: str
    choices: tuple[tuple[str, Any], ...] = ()
    rule: str = ""          # "" when the action has no decide stage

    @property
    def choices_text(self) -> str:
        return assignments_text(dict(self.choices))

    @property
    def label(self) -> str:
        return "\n".join(x for x in (self.action, self.choices_text, f"[{self.rule}]" if self.rule else "") if x)


@dataclass
class StateGraph:
    """An explored state space (or its first states in BFS order), ready to draw.

    Nodes are the indexes of `states`; `edges` maps (source, target) to the transitions
    between them, in the order the exploration found them."""

    var_names: list[str]
    states: list[tuple[Any, ...]]
    initial: set[int] = field(default_factory=set)
    terminal: set[int] = field(default_factory=set)
    edges: dict[tuple[int, int], list[Transition]] = field(default_factory=dict)
    depth: list[int] = field(default_factory=list)            # empty: every state at depth 0
    terminal_labels: dict[int, str] = field(default_factory=dict)
    deadlock: set[int] = field(default_factory=set)
    spec_error: set[int] = field(default_factory=set)
    cut: dict[int, int] = field(default_factory=dict)          # state -> transitions to left-out states
    on_trace: set[int] = field(default_factory=set)            # highlighted states
    trace_edges: set[tuple[int, int]] = field(default_factory=set)   # highlighted edges
    name: str = ""
    source: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    explored_states: int | None = None          # None: the states shown are all there is
    explored_transitions: int | None = None
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    highlight: str = ""                         # the highlighted property's name (`graph --highlight`)
    highlight_path: list[int | None] | None = None   # the last trace's states (None: not a state of the space)

    @property
    def transitions(self) -> int:
        """The transitions shown."""
        return sum(len(ts) for ts in self.edges.values())

    @property
    def total_states(self) -> int:
        return len(self.states) if self.explored_states is None else self.explored_states

    @property
    def total_transitions(self) -> int:
        return self.transitions if self.explored_transitions is None else self.explored_transitions

    def state_text(self, i: int) -> str:
        """The state's vars, one `name=value` a line."""
        return assignments_text(dict(zip(self.var_names, self.states[i])), sep="\n")

    def edge_label(self, key: tuple[int, int]) -> str:
        return "\n".join(t.label for t in self.edges[key])


def build_graph(ex: Exploration, *, max_nodes: int | None = None, highlight: Sequence[Trace] = (),
                name: str = "", source: str = "", params: dict[str, Any] | None = None) -> StateGraph:
    """The explored state space, the first `max_nodes` states in BFS order when given, with the
    states and transitions of each `highlight` trace marked."""
    m: Machine = ex.machine
    total = len(ex.states)
    shown = total if max_nodes is None else min(total, max_nodes)
    g = StateGraph(list(m.var_names), [tuple(ex.states[i]) for i in range(shown)], name=name, source=source,
                   params=dict(m.params if params is None else params), explored_states=total,
                   explored_transitions=ex.transitions, complete=ex.complete and not any(ex.errored))
    _add_nodes(g, ex, m, shown)
    _add_edges(g, ex, m, shown)
    left_states, left_transitions = total - shown, ex.transitions - g.transitions
    if left_states or left_transitions:
        g.notes.append(f"cut at --max-nodes {max_nodes}: shows the first {shown:,} of {total:,} states "
                       f"(BFS order) and {g.transitions:,} of {ex.transitions:,} transitions; "
                       f"{left_states:,} states and {left_transitions:,} transitions are left out")
    else:
        g.notes.append(f"complete: all {total:,} states and {ex.transitions:,} transitions")
    if any(ex.errored):
        g.notes.append("the spec's own errors cut the exploration short: transitions that leave a "
                       "domain or fail to evaluate are not in the graph (nodes marked spec_error)")
    for trace in highlight:
        g.notes.append(_highlight(g, ex, trace))
    return g


def _add_nodes(g: StateGraph, ex: Exploration, m: Machine, shown: int) -> None:
    for i in range(shown):
        expanded = i < ex.expanded
        g.depth.append(int(ex.depth[i]))
        if ex.parent[i] == -1:
            g.initial.add(i)
        if not expanded:
            continue
        if ex.errored[i]:
            g.spec_error.add(i)
        if ex.terminal[i]:
            g.terminal.add(i)
            g.terminal_labels[i] = _terminal_label(m, g.states[i])
        elif not ex.errored[i] and ex.edge_start[i] == ex.edge_start[i + 1]:
            g.deadlock.add(i)


def _terminal_label(m: Machine, state: tuple[Any, ...]) -> str:
    if m.label is None:
        return ""
    try:
        return value_text(m.label(state))
    except (EvalError, ZeroDivisionError):    # a label that fails to evaluate: unknown
        return "?"


def _add_edges(g: StateGraph, ex: Exploration, m: Machine, shown: int) -> None:
    for i in range(min(shown, ex.expanded)):
        for e in ex.edges_of(i):
            j = int(ex.e_dst[e])
            if j >= shown:
                g.cut[i] = g.cut.get(i, 0) + 1
                continue
            act = m.actions[ex.e_action[e]]
            labels = act.labels[ex.e_combo[e]]
            g.edges.setdefault((i, j), []).append(Transition(act.name, tuple(labels.items()), ex.e_rule[e] or ""))


def _highlight(g: StateGraph, ex: Exploration, trace: Trace) -> str:
    """Mark the trace's states and transitions; say how much of it the graph shows."""
    path = _trace_states(ex, g, trace)
    shown = len(g.states)
    marked = 0
    for n, i in enumerate(path):
        if i is not None and i < shown:
            g.on_trace.add(i)
            marked += 1
        before = path[n - 1] if n > 0 else None
        if before is not None and i is not None and (before, i) in g.edges:
            g.trace_edges.add((before, i))
    g.highlight_path = path
    text = f"highlighted: {marked} of the trace's {len(trace.steps)} states"
    outside = [n for n, i in enumerate(path) if i is None]
    cut = [n for n, i in enumerate(path) if i is not None and i >= shown]
    if outside:
        text += (f"; step {outside[0]} is not a state of the explored space (a value outside "
                 "its domain)")
    if cut:
        text += f"; {len(cut)} of its states are left out by --max-nodes"
    return text


def _trace_states(ex: Exploration, g: StateGraph, trace: Trace) -> list[int | None]:
    """The explored state of each step of `trace` (None: not one). A trace shows the user's vars
    only; where property monitors tell explored states apart, the run is followed along the
    explored edges instead (the monitors are a function of the run, so the path is unique)."""
    def shown(st: Step) -> tuple[Any, ...]:
        return tuple(st.state.get(v) for v in g.var_names)
    if not ex.machine.monitor_names:
        index = ex.index or {s: i for i, s in enumerate(ex.states)}     # the vector engine keeps no index
        return [index.get(shown(st)) for st in trace.steps]
    width = len(g.var_names)
    first = shown(trace.steps[0])
    at = next((i for i in range(len(ex.states)) if ex.parent[i] == -1 and tuple(ex.states[i][:width]) == first), None)
    path: list[int | None] = [at]
    for st in trace.steps[1:]:
        at = None if at is None else _follow(ex, at, st, shown(st), width)
        path.append(at)
    return path


def _follow(ex: Exploration, i: int, step: Step, want: tuple[Any, ...], width: int) -> int | None:
    """The successor of explored state i along the edge `step` takes, None when none is explored."""
    if i >= ex.expanded:
        return None
    m = ex.machine
    for e in ex.edges_of(i):
        act = m.actions[ex.e_action[e]]
        j = int(ex.e_dst[e])
        if (act.name == step.action and dict(act.labels[ex.e_combo[e]]) == dict(step.choices or {})
                and tuple(ex.states[j][:width]) == want):
            return j
    return None


# ---------------------------------------------------------------- networkx: GraphML and JSON

def to_networkx(g: StateGraph) -> nx.DiGraph:
    """The graph as a networkx DiGraph whose attribute values are all str, int or bool."""
    import networkx as nx
    G = nx.DiGraph()
    for i, state in enumerate(g.states):
        attrs: dict[str, Any] = {f"var.{k}": _scalar(v) for k, v in zip(g.var_names, state)}
        attrs.update(label=g.state_text(i), index=i, depth=g.depth[i] if g.depth else 0,
                     initial=i in g.initial, terminal=i in g.terminal,
                     terminal_label=g.terminal_labels.get(i, ""), deadlock=i in g.deadlock,
                     spec_error=i in g.spec_error, cut=g.cut.get(i, 0), highlight=i in g.on_trace)
        G.add_node(i, **attrs)
    for (i, j), transitions in g.edges.items():
        G.add_edge(i, j, **_edge_attrs(transitions), label=g.edge_label((i, j)),
                   highlight=(i, j) in g.trace_edges)
        d = G.edges[i, j]
        for t in transitions:         # a choice's values over the merged transitions that have it
            for k, v in t.choices:
                key = f"choice.{k}"
                d[key] = f"{d[key]} | {value_text(v)}" if key in d else value_text(v)
    G.graph.update(_graph_attrs(g))
    for attrs in (*(d for _, d in G.nodes(data=True)), *(d for *_, d in G.edges(data=True)), G.graph):
        attrs.update({k: encodable(v) for k, v in attrs.items() if isinstance(v, str)})
    return G


def _edge_attrs(transitions: list[Transition]) -> dict[str, Any]:
    return {"action": " | ".join(t.action for t in transitions),
            "choices": " | ".join(t.choices_text for t in transitions),
            "rule": " | ".join(t.rule for t in transitions), "transitions": len(transitions)}


def _graph_attrs(g: StateGraph) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": g.name, "source": g.source, "states": g.total_states, "transitions": g.total_transitions,
        "shown_states": len(g.states), "shown_transitions": g.transitions,
        "left_out_states": g.total_states - len(g.states),
        "left_out_transitions": g.total_transitions - g.transitions, "complete": g.complete}
    if g.highlight_path is not None:
        out["highlight_path"] = ",".join("" if i is None else str(i) for i in g.highlight_path)
    out.update(note="\n".join(g.notes), params=assignments_text(g.params))
    if g.highlight:
        out["highlight"] = g.highlight
    return out


def to_graphml(g: StateGraph) -> str:
    import networkx as nx
    return "\n".join(nx.generate_graphml(to_networkx(g))) + "\n"


def to_json(g: StateGraph) -> str:
    import networkx as nx
    G = to_networkx(g)
    try:
        data = nx.node_link_data(G, edges="edges")
    except TypeError:                     # networkx < 3.4 names them "links"
        data = nx.node_link_data(G)
        data["edges"] = data.pop("links")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- DOT

# One palette for DOT, Mermaid and the HTML report (its CSS uses the same colours)
TERMINAL_FILL, TERMINAL_LINE = "#dafbe1", "#1a7f37"
STUCK_FILL, STUCK_LINE = "#ffebe9", "#cf222e"
HIGHLIGHT = "#cf222e"


def dot_quote(text: Any) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, line breaks as \\n, and `&`
    as an entity (Graphviz decodes entities in every label, so a value `&lt;` would show as `<`)."""
    t = encodable(str(text)).replace("\r\n", "\n").replace("\r", "\n").replace("&", "&amp;")
    return '"' + t.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot_attrs(attrs: dict[str, Any]) -> str:
    return "[" + ", ".join(f"{k}={dot_quote(v)}" for k, v in attrs.items()) + "]"


@dataclass(frozen=True)
class DotView:
    """How the one DOT writer lays a graph out; the states, edges and their styles are the same
    in every view. The default is a stand-alone DOT file; the HTML report gives `id_prefix`
    (ids and hover tooltips for its inline SVG), a left-to-right layout and `compact_above`."""

    id_prefix: str = ""                 # "": no ids or tooltips
    compact_above: int | None = None    # above this many states: nodes show their number, edges no label
    titled: bool = True                 # the spec and params as the graph's label
    graph_defaults: tuple[tuple[str, str], ...] = ()
    node_defaults: tuple[tuple[str, str], ...] = ()
    edge_defaults: tuple[tuple[str, str], ...] = ()


PAGE_VIEW = DotView(
    compact_above=30, titled=False,
    graph_defaults=(("rankdir", "LR"), ("bgcolor", "transparent"), ("nodesep", "0.12"), ("ranksep", "0.45")),
    node_defaults=(("height", "0.2"), ("margin", "0.06,0.02")),
    edge_defaults=(("fontsize", "8"), ("color", "#8c959f"), ("fontcolor", "#57606a"), ("arrowsize", "0.6")))


def _comment_lines(g: StateGraph, prefix: str) -> list[str]:
    head = f"haltproof state graph of {g.name}"
    if g.source:
        head += f" ({g.source}"
        if g.params:
            head += f", {assignments_text(g.params)}"
        head += ")"
    # every line break starts a new comment line: a name, path or value never ends the comment
    return [f"{prefix} {line}" for text in [head, *g.notes] for line in text.splitlines() or [""]]


def _display(g: StateGraph, i: int, compact: bool = False) -> str:
    text = f"s{i}" if compact else f"s{i}\n{g.state_text(i)}"
    if g.cut.get(i):
        text += f"\n(+{g.cut[i]} transitions cut)"
    return text


FILE_VIEW = DotView()


def to_dot(g: StateGraph, view: DotView = FILE_VIEW) -> str:
    """The graph as DOT text: initial states bold, terminal ones green with a double border,
    deadlocks and spec errors red, cut states dashed, the highlighted path red and thick."""
    compact = view.compact_above is not None and len(g.states) > view.compact_above
    out = _comment_lines(g, "//")
    out.append(f"digraph {dot_quote(g.name or 'haltproof')} {{")
    top: dict[str, Any] = {}
    if view.id_prefix:
        top["id"] = view.id_prefix
    if view.titled:
        top.update(label=f"{g.name}  {assignments_text(g.params)}".strip(), labelloc="t")
    top.update(comment="\n".join(g.notes), **dict(view.graph_defaults))
    out.append(f"  graph {_dot_attrs(top)};")
    out.append(f"  node {_dot_attrs({'shape': 'box', 'style': 'rounded', 'fontname': 'Helvetica', 'fontsize': '10', **dict(view.node_defaults)})};")
    out.append(f"  edge {_dot_attrs({'fontname': 'Helvetica', 'fontsize': '9', **dict(view.edge_defaults)})};")
    out += [f"  {dot_quote(f's{i}')} {_dot_attrs(_node_style(g, i, view, compact))};" for i in range(len(g.states))]
    for k, (u, v) in enumerate(g.edges):
        a: dict[str, Any] = {} if compact else {"label": g.edge_label((u, v))}
        if view.id_prefix:
            a.update(id=f"{view.id_prefix}-e{k}", tooltip=g.edge_label((u, v)))
        if (u, v) in g.trace_edges:
            a.update(color=HIGHLIGHT, fontcolor=HIGHLIGHT, penwidth="3")
        out.append(f"  {dot_quote(f's{u}')} -> {dot_quote(f's{v}')} {_dot_attrs(a)};")
    out.append("}")
    return "\n".join(out) + "\n"


def _node_style(g: StateGraph, i: int, view: DotView, compact: bool) -> dict[str, Any]:
    a: dict[str, Any] = {"label": _display(g, i, compact)}
    if view.id_prefix:
        a.update(id=f"{view.id_prefix}-s{i}", tooltip=f"state {i}\n{g.state_text(i)}")
    style = ["rounded"]
    if i in g.terminal:
        style.append("filled")
        a.update(fillcolor=TERMINAL_FILL, peripheries="2")
    elif i in g.deadlock or i in g.spec_error:
        style.append("filled")
        a["fillcolor"] = STUCK_FILL
    if i in g.initial:
        style.append("bold")
    if g.cut.get(i):
        style.append("dashed")
    if i in g.on_trace:
        a.update(color=HIGHLIGHT, penwidth="3")
    a["style"] = ",".join(style)
    return a


# ---------------------------------------------------------------- Mermaid

def mermaid_text(text: Any) -> str:
    """Text for a quoted Mermaid label: entity codes for the characters Mermaid would read."""
    t = encodable(str(text))
    for ch, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;"),
                     ("`", "#96;")):
        t = t.replace(ch, code)
    return t.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br/>")


def to_mermaid(g: StateGraph) -> str:
    out = ["flowchart TD", *("  " + line for line in _comment_lines(g, "%%"))]
    classes: dict[str, list[str]] = {"initial": [], "terminal": [], "stuck": [], "cut": [], "highlight": []}
    for i in range(len(g.states)):
        text = f'"{mermaid_text(_display(g, i))}"'
        out.append(f"  s{i}([{text}])" if i in g.terminal else f"  s{i}[{text}]")
        for cls, on in (("initial", i in g.initial), ("terminal", i in g.terminal),
                        ("stuck", i in g.deadlock or i in g.spec_error), ("cut", bool(g.cut.get(i))),
                        ("highlight", i in g.on_trace)):
            if on:
                classes[cls].append(f"s{i}")
    marked = []
    for n, (u, v) in enumerate(g.edges):
        out.append(f'  s{u} -->|"{mermaid_text(g.edge_label((u, v)))}"| s{v}')
        if (u, v) in g.trace_edges:
            marked.append(str(n))
    out.append("  classDef initial stroke-width:3px")
    out.append(f"  classDef terminal fill:{TERMINAL_FILL},stroke:{TERMINAL_LINE}")
    out.append(f"  classDef stuck fill:{STUCK_FILL},stroke:{STUCK_LINE}")
    out.append("  classDef cut stroke-dasharray:4 3")
    out.append(f"  classDef highlight stroke:{HIGHLIGHT},stroke-width:4px")
    for cls, ids in classes.items():
        if ids:
            out.append(f"  class {','.join(ids)} {cls}")
    if marked:
        out.append(f"  linkStyle {','.join(marked)} stroke:{HIGHLIGHT},stroke-width:3px")
    return "\n".join(out) + "\n"


WRITERS: dict[str, Callable[[StateGraph], str]] = {
    "dot": to_dot, "graphml": to_graphml, "mermaid": to_mermaid, "json": to_json,
}
