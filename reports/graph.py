"""`haltproof graph`: the explored state space of one param combination as a graph.

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

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # networkx is imported where a graph is built: it costs startup time
    import networkx as nx

from haltproof.machine.compiled import EvalError, Machine
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine import usercode
from haltproof.machine.inputs import check_number, positive
from haltproof.machine.spec import load_spec
from haltproof.machine.usercode import OutOfTime
from haltproof.properties.kinds import HOLDS, VIOLATED, Trace

from haltproof.explorer.check import Options, check_machine, prepare, stop_reason, sweep
from haltproof.explorer.engine import Exploration, explore
from haltproof.machine.spec import shown_path
from .report import EXIT_INCOMPLETE
from haltproof.explorer.usage import UsageError, one_value_each, parse_pins

FORMAT_NAMES = ("dot", "graphml", "mermaid", "json")
DEFAULT_MAX_NODES = 500


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


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


# ---------------------------------------------------------------- command

def add_arguments(g: argparse.ArgumentParser) -> None:
    g.add_argument("spec", metavar="SPEC")
    g.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE",
                   help="pin a param (repeatable); the graph needs exactly one combination")
    g.add_argument("--format", choices=FORMAT_NAMES, default="dot", help="default dot")
    g.add_argument("-o", dest="output", metavar="FILE", help="write to FILE instead of stdout")
    g.add_argument("--max-nodes", type=positive(int, "--max-nodes"), default=DEFAULT_MAX_NODES, metavar="N",
                   help=f"keep the first N states in BFS order (default {DEFAULT_MAX_NODES})")
    g.add_argument("--highlight", metavar="PROPERTY",
                   help="highlight the counterexample of PROPERTY (or the witness of a reachable one)")


def graph_for(spec_path: str, pins: dict[str, int], *, max_nodes: int | None = DEFAULT_MAX_NODES,
              highlight: str | None = None, timeout: float | None = None) -> tuple[nx.DiGraph, list[str]]:
    """The graph of one param combination of a spec, and the notes to tell the user.

    Raises SpecError (bad spec, pin or property), GraphUsage (not exactly one combination),
    or ValueError (max_nodes not a positive int, timeout not a positive finite number),
    before anything is explored. `timeout` bounds it all, as `check --timeout` does, the
    bound code included; a graph is of the whole space, so hitting it (or running out of
    memory) raises GraphIncomplete and gives no graph."""
    if max_nodes is not None:
        max_nodes = check_number(max_nodes, "max_nodes", int, above=0)
    if timeout is not None:
        timeout = check_number(timeout, "timeout", float, above=0)
    try:
        with usercode.deadline(timeout):
            return _graph(spec_path, pins, max_nodes, highlight, timeout)
    except OutOfTime as stop:        # while loading the bound code, before any exploration
        raise GraphIncomplete(f"--timeout {timeout:g} s reached while "
                              f"{stop.doing or 'running the user code'}") from None


def _graph(spec_path: str, pins: dict[str, int], max_nodes: int | None, highlight: str | None,
           timeout: float | None) -> tuple[nx.DiGraph, list[str]]:
    spec = load_spec(spec_path)
    combos = sweep(spec, pins)
    if len(combos) != 1:
        unpinned = [p for p in spec.params if p.name not in pins and p.count > 1]
        example = " ".join(f"-p {p.name}={p.values[0]}" for p in unpinned)
        raise GraphUsage(f"{spec_path}: a graph shows one param combination, and {len(combos)} are "
                         f"declared; pin {', '.join(p.name for p in unpinned)} (e.g. {example})")
    opts = Options(pins=pins, properties=[highlight] if highlight else None, timeout=timeout)
    try:
        (m,) = prepare(spec, opts)
    except SpecError as exc:             # its property check names the option --property
        raise SpecError([Problem(p.file, p.line, p.message.replace("--property ", "--highlight ", 1), p.text)
                         for p in exc.problems]) from None
    ex = explore(m, timeout=usercode.remaining())
    if not ex.complete:
        raise GraphIncomplete(stop_reason(ex, opts))
    notes: list[str] = []
    trace = None
    if highlight:
        run = check_machine(m, opts)
        if run.stopped_by is not None:
            raise GraphIncomplete(run.stop_reason)
        res = next((p for p in run.properties if p.name == highlight), None)
        if res is None:
            notes.append(f"--highlight {highlight}: the property is not checked for these params "
                         "(its `when` is false): nothing highlighted")
        elif res.status == VIOLATED and res.trace is not None:
            trace = res.trace
            notes.append(f"--highlight {highlight}: violated; its counterexample "
                         f"({_n(len(trace), 'transition')}) is highlighted")
        elif res.witness is not None:
            trace = res.witness
            notes.append(f"--highlight {highlight}: holds; its witness ({_n(len(trace), 'transition')}) "
                         "is highlighted")
        else:
            what = "holds" if res.status == HOLDS else res.status
            notes.append(f"--highlight {highlight}: {what}, no trace: nothing highlighted")
    G = build_graph(ex, max_nodes=max_nodes, highlight=trace, name=spec.name,
                    source=shown_path(spec.path))
    G.graph["params"] = " ".join(f"{k}={v}" for k, v in m.params.items())
    if highlight:
        G.graph["highlight"] = highlight
        lines = G.graph["note"].split("\n")
        marked = [n for n in lines if n.startswith("highlighted:")]
        lines = [n for n in lines if not n.startswith("highlighted:")]
        G.graph["note"] = "\n".join(lines + [notes[0] + "".join(f"; {n}" for n in marked)])
    told = [n for n in G.graph["note"].split("\n") if not n.startswith("complete:")]
    return G, told


class GraphUsage(Exception):
    """Not exactly one param combination."""


class GraphIncomplete(Exception):
    """The timeout passed (or memory ran out) before the whole space was explored."""


def cmd_graph(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "graph")
    try:
        G, notes = graph_for(args.spec, pins, max_nodes=args.max_nodes, highlight=args.highlight,
                             timeout=args.timeout)
    except GraphUsage as exc:
        raise UsageError(str(exc)) from None
    except GraphIncomplete as exc:
        print(f"haltproof graph: incomplete: {exc}; no graph written", file=sys.stderr)
        return EXIT_INCOMPLETE
    text = WRITERS[args.format](G)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"-o {args.output}: cannot write the graph: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
    for note in notes:
        print(f"haltproof graph: {note}", file=sys.stderr)
    return 0
