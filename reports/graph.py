"""The explored state space of one param combination as a graph (`haltproof graph`, cli/graph.py).

The graph is a networkx DiGraph built from one exploration (the same BFS as `check`):

- node `i` is the i-th state in BFS order; attributes `var.NAME` (each var's value),
  `label` (the vars as text), `index`, `depth`, `initial`, `terminal`,
  `terminal_label` (the terminal label's value, "" when not terminal or the spec's
  terminal is a predicate), `deadlock` (non-terminal, no successor), `spec_error` (a
  transition from it left its domain or failed to evaluate), `cut` (how many of its
  transitions go to states left out by --max-nodes) and `highlight`;
- an edge is one or more transitions between the same two states (a DiGraph holds one
  edge per pair): `action`, `choices` (`name=value ...`), `rule` ("" when the action
  has no decide stage), `choice.NAME` for each choice, `transitions` (how many
  transitions it stands for; the values of merged transitions are joined with " | "),
  `label` and `highlight`;
- graph attributes say what was explored and what is shown (`states`, `transitions`,
  `shown_states`, `shown_transitions`, `left_out_states`, `left_out_transitions`,
  `note`).

Every attribute value is a str, int or bool, so the same graph goes to GraphML, JSON
(node-link), DOT and Mermaid. DOT and Mermaid text are written here (no Graphviz needed);
every id and label is quoted and escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:      # networkx is imported where a graph is built: it costs startup time
    import networkx as nx

from haltproof.machine.compiled import EvalError, Machine
from haltproof.properties.kinds import Trace

from haltproof.explorer.engine import Exploration

FORMAT_NAMES = ("dot", "graphml", "mermaid", "json")
DEFAULT_MAX_NODES = 500


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _scalar(value: Any) -> str | int | bool:
    """An attribute value GraphML can hold."""
    if isinstance(value, (bool, int, str)):
        return value
    return json.dumps(value, default=repr) if isinstance(value, (list, dict)) else repr(value)


def build_graph(ex: Exploration, *, max_nodes: int | None = None, highlight: Trace | None = None,
                name: str = "", source: str = "") -> nx.DiGraph:
    """The explored state space as a DiGraph; the first `max_nodes` states in BFS order when given."""
    m: Machine = ex.machine
    total = len(ex.states)
    shown = total if max_nodes is None else min(total, max_nodes)
    import networkx as nx
    G = nx.DiGraph()
    label_of = m.label
    for i in range(shown):
        s = ex.states[i]
        expanded = i < ex.expanded
        terminal = expanded and bool(ex.terminal[i])
        attrs: dict[str, Any] = {f"var.{k}": _scalar(v) for k, v in zip(m.var_names, s)}
        tlabel = ""
        if terminal and label_of is not None:
            try:
                tlabel = _text(label_of(s))
            except (EvalError, ZeroDivisionError):    # a label that fails to evaluate: unknown
                tlabel = "?"
        attrs.update(
            label="\n".join(f"{k}={_text(v)}" for k, v in zip(m.var_names, s)),
            index=i, depth=int(ex.depth[i]), initial=ex.parent[i] == -1, terminal=terminal,
            terminal_label=tlabel,
            deadlock=expanded and not terminal and not ex.errored[i]
            and ex.edge_start[i] == ex.edge_start[i + 1],
            spec_error=expanded and bool(ex.errored[i]), cut=0, highlight=False)
        G.add_node(i, **attrs)
    shown_transitions = 0
    for i in range(min(shown, ex.expanded)):
        for e in ex.edges_of(i):
            j = ex.e_dst[e]
            if j >= shown:
                G.nodes[i]["cut"] += 1
                continue
            shown_transitions += 1
            act = m.actions[ex.e_action[e]]
            choices = act.labels[ex.e_combo[e]]
            rule = ex.e_rule[e] or ""
            ctext = " ".join(f"{k}={_text(v)}" for k, v in choices.items())
            if G.has_edge(i, j):
                d = G.edges[i, j]
                d["transitions"] += 1
                d["action"] += f" | {act.name}"
                d["choices"] += f" | {ctext}"
                d["rule"] += f" | {rule}"
                for k, v in choices.items():
                    key = f"choice.{k}"
                    d[key] = f"{d[key]} | {_text(v)}" if key in d else _text(v)
                d["label"] += "\n" + _edge_label(act.name, ctext, rule)
            else:
                G.add_edge(i, j, action=act.name, choices=ctext, rule=rule, transitions=1,
                           label=_edge_label(act.name, ctext, rule), highlight=False,
                           **{f"choice.{k}": _text(v) for k, v in choices.items()})
    left_states, left_transitions = total - shown, ex.transitions - shown_transitions
    G.graph.update(name=name, source=source, states=total, transitions=ex.transitions,
                   shown_states=shown, shown_transitions=shown_transitions,
                   left_out_states=left_states, left_out_transitions=left_transitions,
                   complete=ex.complete and not any(ex.errored))
    notes = []
    if left_states or left_transitions:
        notes.append(f"cut at --max-nodes {max_nodes}: shows the first {shown:,} of {total:,} states "
                     f"(BFS order) and {shown_transitions:,} of {ex.transitions:,} transitions; "
                     f"{left_states:,} states and {left_transitions:,} transitions are left out")
    else:
        notes.append(f"complete: all {total:,} states and {ex.transitions:,} transitions")
    if any(ex.errored):
        notes.append("the spec's own errors cut the exploration short: transitions that leave a "
                     "domain or fail to evaluate are not in the graph (nodes marked spec_error)")
    if highlight is not None:
        notes.append(_highlight(G, ex, highlight))
    G.graph["note"] = "\n".join(notes)
    return G


def _edge_label(action: str, choices: str, rule: str) -> str:
    return "\n".join(x for x in (action, choices, f"[{rule}]" if rule else "") if x)


def _highlight(G: nx.DiGraph, ex: Exploration, trace: Trace) -> str:
    """Mark the trace's states and transitions; say how much of it the graph shows."""
    m = ex.machine
    path: list[int | None] = []
    for st in trace.steps:
        key = tuple(st.state.get(v) for v in m.var_names)
        path.append(ex.index.get(key))
    marked = 0
    for n, i in enumerate(path):
        if i is not None and i in G:
            G.nodes[i]["highlight"] = True
            marked += 1
        if n > 0 and path[n - 1] in G and i in G and G.has_edge(path[n - 1], i):
            G.edges[path[n - 1], i]["highlight"] = True
    G.graph["highlight_path"] = ",".join("" if i is None else str(i) for i in path)
    total = len(trace.steps)
    text = f"highlighted: {marked} of the trace's {total} states"
    outside = [n for n, i in enumerate(path) if i is None]
    cut = [n for n, i in enumerate(path) if i is not None and i not in G]
    if outside:
        text += (f"; step {outside[0]} is not a state of the explored space (a value outside "
                 "its domain)")
    if cut:
        text += f"; {len(cut)} of its states are left out by --max-nodes"
    return text


# ---------------------------------------------------------------- writers

def dot_quote(text: Any) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, line breaks as \\n."""
    t = str(text).replace("\r\n", "\n").replace("\r", "\n")
    return '"' + t.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot_attrs(attrs: dict[str, Any]) -> str:
    return "[" + ", ".join(f"{k}={dot_quote(v)}" for k, v in attrs.items()) + "]"


def _comment_lines(G: nx.DiGraph, prefix: str) -> list[str]:
    head = f"haltproof state graph of {G.graph['name']}"
    if G.graph.get("source"):
        head += f" ({G.graph['source']}"
        if G.graph.get("params"):
            head += f", {G.graph['params']}"
        head += ")"
    return [f"{prefix} {line}" for line in [head, *G.graph["note"].split("\n")]]


def _display(G: nx.DiGraph, i: int) -> str:
    d = G.nodes[i]
    text = f"s{i}\n{d['label']}"
    if d["cut"]:
        text += f"\n(+{d['cut']} transitions cut)"
    return text


def to_dot(G: nx.DiGraph) -> str:
    out = _comment_lines(G, "//")
    out.append(f"digraph {dot_quote(G.graph['name'] or 'haltproof')} {{")
    title = f"{G.graph['name']}  {G.graph.get('params', '')}".strip()
    out.append(f"  graph {_dot_attrs({'label': title, 'labelloc': 't', 'comment': G.graph['note']})};")
    out.append(f"  node {_dot_attrs({'shape': 'box', 'style': 'rounded', 'fontname': 'Helvetica', 'fontsize': '10'})};")
    out.append(f"  edge {_dot_attrs({'fontname': 'Helvetica', 'fontsize': '9'})};")
    for i, d in G.nodes(data=True):
        a: dict[str, Any] = {"label": _display(G, i)}
        style = ["rounded"]
        if d["terminal"]:
            style.append("filled")
            a.update(fillcolor="#d8f0d8", peripheries="2")
        elif d["deadlock"] or d["spec_error"]:
            style.append("filled")
            a["fillcolor"] = "#f8d0d0"
        if d["initial"]:
            style.append("bold")
        if d["cut"]:
            style.append("dashed")
        if d["highlight"]:
            a.update(color="#d00000", penwidth="3")
        a["style"] = ",".join(style)
        out.append(f"  {dot_quote(f's{i}')} {_dot_attrs(a)};")
    for u, v, d in G.edges(data=True):
        a = {"label": d["label"]}
        if d["highlight"]:
            a.update(color="#d00000", fontcolor="#d00000", penwidth="3")
        out.append(f"  {dot_quote(f's{u}')} -> {dot_quote(f's{v}')} {_dot_attrs(a)};")
    out.append("}")
    return "\n".join(out) + "\n"


def mermaid_text(text: Any) -> str:
    """Text for a quoted Mermaid label: entity codes for the characters Mermaid would read."""
    t = str(text)
    for ch, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;"),
                     ("`", "#96;")):
        t = t.replace(ch, code)
    return t.replace("\r\n", "\n").replace("\n", "<br/>")


def to_mermaid(G: nx.DiGraph) -> str:
    out = ["flowchart TD", *("  " + line for line in _comment_lines(G, "%%"))]
    classes: dict[str, list[str]] = {"initial": [], "terminal": [], "stuck": [], "cut": [], "highlight": []}
    for i, d in G.nodes(data=True):
        text = f'"{mermaid_text(_display(G, i))}"'
        out.append(f"  s{i}([{text}])" if d["terminal"] else f"  s{i}[{text}]")
        for cls, on in (("initial", d["initial"]), ("terminal", d["terminal"]),
                        ("stuck", d["deadlock"] or d["spec_error"]), ("cut", d["cut"] > 0),
                        ("highlight", d["highlight"])):
            if on:
                classes[cls].append(f"s{i}")
    marked = []
    for n, (u, v, d) in enumerate(G.edges(data=True)):
        out.append(f'  s{u} -->|"{mermaid_text(d["label"])}"| s{v}')
        if d["highlight"]:
            marked.append(str(n))
    out.append("  classDef initial stroke-width:3px")
    out.append("  classDef terminal fill:#d8f0d8,stroke:#2e7d32")
    out.append("  classDef stuck fill:#f8d0d0,stroke:#c62828")
    out.append("  classDef cut stroke-dasharray:4 3")
    out.append("  classDef highlight stroke:#d00000,stroke-width:4px")
    for cls, ids in classes.items():
        if ids:
            out.append(f"  class {','.join(ids)} {cls}")
    if marked:
        out.append(f"  linkStyle {','.join(marked)} stroke:#d00000,stroke-width:3px")
    return "\n".join(out) + "\n"


def to_graphml(G: nx.DiGraph) -> str:
    import networkx as nx
    return "\n".join(nx.generate_graphml(G)) + "\n"


def to_json(G: nx.DiGraph) -> str:
    import networkx as nx
    try:
        data = nx.node_link_data(G, edges="edges")
    except TypeError:                     # networkx < 3.4 names them "links"
        data = nx.node_link_data(G)
        data["edges"] = data.pop("links")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


WRITERS: dict[str, Callable[[nx.DiGraph], str]] = {
    "dot": to_dot, "graphml": to_graphml, "mermaid": to_mermaid, "json": to_json,
}
