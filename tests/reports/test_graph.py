"""`haltproof graph`: the explored state space as DOT, GraphML, Mermaid and JSON.

The graph must be the check's state space exactly (same states, transitions, terminals),
the highlighted path must be the check's trace, a cut must say what it left out, and the
DOT must be valid DOT (checked with a strict DOT grammar in tests/dot_grammar.py, and with
Graphviz `dot` when it is installed)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
import shlex
import shutil
import subprocess
import sys

import networkx as nx
import pytest

from conftest import LOOP_DEMO, MUTANTS, ROOT
from dot_grammar import DotSyntaxError, parse_dot
from haltproof.cli.graph import graph_for
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, prepare
from haltproof.machine.spec import load_spec
from haltproof.reports import report
from haltproof.reports.html import state_graphs
from haltproof.reports.graph import PAGE_VIEW, StateGraph, Transition, dot_quote, mermaid_text, to_dot, to_networkx

RETRY = ROOT / "docs" / "examples" / "retry_loop.yaml"
DOC = ROOT / "docs" / "how-to" / "traces-and-graphs.md"
DOT = shutil.which("dot")
needs_dot = pytest.mark.skipif(DOT is None, reason="Graphviz `dot` is not installed "
                                                   "(apt-get install graphviz); tests/dot_grammar.py still checks the DOT")


def _graph_json(cli, *args):
    ran = cli("graph", *args, "--format", "json")
    assert ran.code == 0, ran.err
    data = ran.json()
    G = nx.node_link_graph(data, edges="edges")
    return G, data, ran


def _stats(cli, spec, *pins):
    ran = cli("check", spec, *pins, "--format", "json")
    assert ran.code in (0, 1), ran.err
    (run,) = ran.json()["runs"]
    return run


def _pins(params):
    return [x for k, v in params.items() for x in ("-p", f"{k}={v}")]


# ---------------------------------------------------------------- the graph is the state space

CASES = [
    (LOOP_DEMO, {"max_steps": 2, "max_retries": 1}),
    (LOOP_DEMO, {"max_steps": 5, "max_retries": 1}),
    (MUTANTS / "failure_not_a_step.yaml", {"max_steps": 3, "max_retries": 1}),
    (MUTANTS / "decide_counts_as_step.yaml", {"max_steps": 3, "max_retries": 0}),
    (RETRY, {"K": 4, "R": 2}),
]


@pytest.mark.parametrize("spec, params", CASES, ids=lambda x: getattr(x, "name", None) or
                         " ".join(f"{k}={v}" for k, v in x.items()))
def test_nodes_edges_and_terminals_equal_the_checks_stats(cli, spec, params):
    run = _stats(cli, spec, *_pins(params))
    G, data, _ = _graph_json(cli, spec, *_pins(params), "--max-nodes", "100000")
    st = run["stats"]
    assert G.number_of_nodes() == st["states"]
    assert sum(d["transitions"] for _, _, d in G.edges(data=True)) == st["transitions"]
    assert G.number_of_edges() == st["transitions"]       # these specs never merge two transitions
    assert sum(1 for _, d in G.nodes(data=True) if d["terminal"]) == st["terminal_states"]
    assert max(d["depth"] for _, d in G.nodes(data=True)) == st["max_depth"]
    assert data["graph"]["states"] == st["states"] and data["graph"]["transitions"] == st["transitions"]
    assert data["graph"]["left_out_states"] == 0 and data["graph"]["left_out_transitions"] == 0
    # terminal nodes have no successors; initial nodes are the depth-0 ones
    for n, d in G.nodes(data=True):
        if d["terminal"]:
            assert G.out_degree(n) == 0
        assert d["initial"] == (d["depth"] == 0)
    # the terminal counts per label are the check's coverage of terminals
    labels: dict[str, int] = {}
    for _, d in G.nodes(data=True):
        if d["terminal"]:
            labels[d["terminal_label"]] = labels.get(d["terminal_label"], 0) + 1
    if spec != RETRY:
        assert labels == {k: v for k, v in run["coverage"]["terminals"].items() if v}
        for _, d in G.nodes(data=True):
            assert d["terminal_label"] == (d["var.decision"] if d["terminal"] else "")


def test_edges_carry_action_choices_and_rule(cli):
    G, _, _ = _graph_json(cli, RETRY, "-p", "K=2", "-p", "R=1")
    edges = {(u, v): d for u, v, d in G.edges(data=True)}
    nodes = dict(G.nodes(data=True))
    assert nodes[0]["var.calls"] == 0 and nodes[0]["var.status"] == "running" and nodes[0]["initial"]
    by_rule = {d["rule"]: (u, v, d) for (u, v), d in edges.items()}
    assert set(by_rule) == {"finished", "retry", "gave_up"}
    u, v, d = by_rule["retry"]
    assert d["action"] == "call_tool" and d["choices"] == "outcome=error" and d["choice.outcome"] == "error"
    assert nodes[v]["var.fails"] == 1 and nodes[v]["var.status"] == "running"


def test_transitions_between_the_same_two_states_share_one_edge_and_are_counted(cli, tmp_path):
    spec = tmp_path / "twice.yaml"
    spec.write_text(
        "machine: twice\n"
        "vars:\n"
        "  n: {type: int, min: 0, max: 2, init: 0}\n"
        "actions:\n"
        "  step:\n"
        "    when: n < 2\n"
        "    choose: {how: [walk, run]}\n"
        "    do:\n"
        "      - set: {n: n + 1}\n"
        "terminal: n == 2\n"
        "properties:\n"
        "  ends: {terminates: true}\n")
    run = _stats(cli, spec)
    assert run["stats"]["transitions"] == 4 and run["stats"]["states"] == 3
    G, _, _ = _graph_json(cli, spec)
    assert G.number_of_nodes() == 3 and G.number_of_edges() == 2
    assert sum(d["transitions"] for _, _, d in G.edges(data=True)) == 4
    d = G.edges[0, 1]
    assert d["choices"] == "how=walk | how=run" and d["choice.how"] == "walk | run"
    assert d["action"] == "step | step" and d["transitions"] == 2


# ---------------------------------------------------------------- highlight

@pytest.mark.parametrize("spec, params, prop", [
    (MUTANTS / "limit_before_observation.yaml", {"max_steps": 3, "max_retries": 0},
     "final_answer_on_last_step_kept"),
    (MUTANTS / "failure_not_a_step.yaml", {"max_steps": 2, "max_retries": 0}, "terminates"),
    (MUTANTS / "empty_search_continues.yaml", {"max_steps": 2, "max_retries": 1},
     "complete_search_always_decides"),
    # the monitors tell apart states with the same vars: the trace is followed along the edges
    (ROOT / "tests" / "fixtures" / "monitors" / "toggle.yaml", {}, "never_done_after_one"),
    (ROOT / "tests" / "fixtures" / "monitors" / "toggle.yaml", {}, "reaches_done"),
])
def test_highlighted_path_is_the_counterexample(cli, spec, params, prop):
    run = _stats(cli, spec, *_pins(params), "--property", prop)
    trace = next(p for p in run["properties"] if p["name"] == prop)["trace"]
    G, data, ran = _graph_json(cli, spec, *_pins(params), "--highlight", prop)
    path = [int(i) for i in data["graph"]["highlight_path"].split(",")]
    assert len(path) == len(trace["steps"])
    for i, step in zip(path, trace["steps"]):
        assert {k[4:]: v for k, v in G.nodes[i].items() if k.startswith("var.")} == step["state"]
    for a, b, step in zip(path, path[1:], trace["steps"][1:]):
        d = G.edges[a, b]
        assert d["highlight"] and d["action"] == step["action"] and d["rule"] == (step["rule"] or "")
        assert d["choices"] == " ".join(f"{k}={v}" for k, v in step["choices"].items())
    assert {n for n, d in G.nodes(data=True) if d["highlight"]} == set(path)
    assert {(u, v) for u, v, d in G.edges(data=True) if d["highlight"]} == set(zip(path, path[1:]))
    assert f"--highlight {prop}: violated; its counterexample ({len(trace['steps']) - 1} transition" in ran.err
    if trace["kind"] == "lasso" and "fixtures" not in str(spec):
        assert path[-1] == path[trace["loop_start"]]
    elif trace["kind"] == "lasso":      # closed over the property's own monitor: another one's may differ
        assert G.nodes[path[-1]]["label"] == G.nodes[path[trace["loop_start"]]]["label"]
        assert path[-1] != path[trace["loop_start"]]


def test_highlight_of_a_domains_trace_says_its_last_state_is_outside(cli):
    G, data, ran = _graph_json(cli, MUTANTS / "decide_counts_as_step.yaml", "-p", "max_steps=3",
                               "-p", "max_retries=0", "--highlight", "domains")
    assert data["graph"]["highlight_path"].endswith(",")          # the last state is not a node
    assert sum(d["highlight"] for _, d in G.nodes(data=True)) == 2
    assert "step 2 is not a state of the explored space" in ran.err
    assert "the spec's own errors cut the exploration short" in ran.err
    assert any(d["spec_error"] for _, d in G.nodes(data=True))


def test_highlight_of_a_reachable_property_shows_its_witness_and_of_a_holding_one_nothing(cli):
    G, _, ran = _graph_json(cli, RETRY, "-p", "K=2", "-p", "R=1", "--highlight", "can_finish")
    assert "can_finish: holds; its witness (1 transition) is highlighted" in ran.err
    assert sorted(n for n, d in G.nodes(data=True) if d["highlight"]) == [0, 1]
    G, _, ran = _graph_json(cli, RETRY, "-p", "K=2", "-p", "R=1", "--highlight", "bounded")
    assert "--highlight bounded: holds, no trace: nothing highlighted" in ran.err
    assert not any(d["highlight"] for _, d in G.nodes(data=True))


# ---------------------------------------------------------------- --max-nodes

def test_max_nodes_keeps_the_first_states_and_says_what_it_left_out(cli):
    full, _, _ = _graph_json(cli, LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1")
    G, data, ran = _graph_json(cli, LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1",
                               "--max-nodes", "20")
    assert sorted(G.nodes) == list(range(20))                  # the first 20 in BFS order
    kept = [(u, v) for u, v in full.edges if u < 20 and v < 20]
    assert sorted(G.edges) == sorted(kept)
    g = data["graph"]
    assert (g["states"], g["transitions"]) == (112, 105)
    assert (g["shown_states"], g["shown_transitions"]) == (20, len(kept)) == (20, 13)
    assert (g["left_out_states"], g["left_out_transitions"]) == (92, 92)
    assert sum(d["cut"] for _, d in G.nodes(data=True)) == 105 - 13 - sum(
        1 for u, v in full.edges if u >= 20)                  # cut edges leave a kept node
    note = ("cut at --max-nodes 20: shows the first 20 of 112 states (BFS order) and 13 of 105 "
            "transitions; 92 states and 92 transitions are left out")
    assert note in g["note"] and f"haltproof graph: {note}" in ran.err
    dot = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--max-nodes", "20")
    assert f"// {note}" in dot.out and "(+5 transitions cut)" in dot.out
    mermaid = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--max-nodes", "20",
                  "--format", "mermaid")
    assert f"%% {note}" in mermaid.out


def test_a_complete_graph_says_so_and_prints_nothing_on_stderr(cli):
    ran = cli("graph", RETRY, "-p", "K=2", "-p", "R=1")
    assert ran.code == 0 and ran.err == ""
    assert "// complete: all 5 states and 4 transitions" in ran.out


# ---------------------------------------------------------------- formats

def test_done_criterion_loop_demo_dot_is_valid_dot(cli):
    ran = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--format", "dot")
    assert ran.code == 0 and ran.out.startswith("// haltproof state graph of loop_demo")
    dot = parse_dot(ran.out)                      # the strict grammar of the DOT language
    assert dot.directed and dot.name == "loop_demo"
    assert len(dot.nodes) == 112 and len(dot.edges) == 105
    terminal = [n for n, a in dot.nodes.items() if a.get("peripheries") == "2"]
    assert len(terminal) == 91                                 # = the check's terminal_states
    assert dot.nodes["s0"]["label"].startswith("s0\nsteps=0\nfailures=0\nphase=start")
    assert dot.defaults["graph"]["comment"] == "complete: all 112 states and 105 transitions"


@needs_dot
def test_done_criterion_dot_renders_with_graphviz(cli, tmp_path):
    ran = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--format", "dot",
              "-o", tmp_path / "g.dot")
    assert ran.code == 0 and ran.out == ""
    done = subprocess.run([DOT, "-Tsvg", str(tmp_path / "g.dot")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""                                    # not even a warning
    assert done.stdout.count('class="node"') == 112 and done.stdout.count('class="edge"') == 105


NASTY = 'a "quoted" \\ back\\slash\nline 2 {x} -> y; [z] // c /* d */ # <b> | `e` \\"'


def _nasty_graph():
    g, _ = graph_for(str(MUTANTS / "failure_not_a_step.yaml"), {"max_steps": 2, "max_retries": 0},
                     highlight="terminates")
    g.name = 'we"ird\\'
    g.notes.append(NASTY)
    g.states[0] = (NASTY, *g.states[0][1:])
    u, v = next(iter(g.edges))
    g.edges[u, v] = [Transition(NASTY)]
    return g, (u, v)


def test_every_id_and_label_is_quoted_and_escaped():
    assert dot_quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    g, (u, v) = _nasty_graph()
    dot = parse_dot(to_dot(g))
    assert dot.name == 'we"ird\\'
    first, *rest = [f"{k}={x}" for k, x in zip(g.var_names, g.states[0])]
    assert first == f"{g.var_names[0]}={NASTY}" and len(rest) == len(g.var_names) - 1
    assert dot.nodes["s0"]["label"] == "\n".join(["s0", first, *rest])
    (label,) = [a["label"] for a_, b_, a in dot.edges if (a_, b_) == (f"s{u}", f"s{v}")]
    assert label == NASTY
    assert NASTY in dot.defaults["graph"]["comment"]
    assert len(dot.nodes) == len(g.states) == 77 and len(dot.edges) == len(g.edges)


def test_an_ampersand_in_a_value_is_an_entity_so_graphviz_shows_it_as_written():
    """Graphviz decodes entities in every label: `&lt;` written as is was drawn as `<`."""
    assert dot_quote("a&lt;b & c") == '"a&amp;lt;b &amp; c"'
    g, _ = graph_for(str(RETRY), {"K": 1, "R": 0})
    g.states[0] = ("x&lt;y&z", *g.states[0][1:])
    assert parse_dot(to_dot(g)).nodes["s0"]["label"].split("\n")[1] == f"{g.var_names[0]}=x&amp;lt;y&amp;z"
    if DOT:
        done = subprocess.run([DOT, "-Tplain"], input=to_dot(g), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("node s0 ")]
        assert f"{g.var_names[0]}=x&lt;y&z" in line


def test_a_line_break_in_the_machine_name_never_ends_a_comment(cli, tmp_path):
    """The DOT and Mermaid headers are comments: a name with a line break wrote its second
    line as DOT (`}` ended the graph) or as a Mermaid statement."""
    spec = tmp_path / "name.yaml"
    spec.write_text('machine: "two\\n} digraph x {\\rclassDef s fill:red"\n'
                    "vars:\n  n: {type: int, min: 0, max: 1, init: 0}\n"
                    "actions:\n  go: {when: n < 1, do: [{set: {n: n + 1}}]}\n"
                    "terminal: n == 1\n")
    dot = cli("graph", spec)
    assert dot.code == 0, dot.err
    parsed = parse_dot(dot.out)
    assert parsed.name == "two\n} digraph x {\nclassDef s fill:red"        # \\r is written as a line break
    assert len(parsed.nodes) == 2 and len(parsed.edges) == 1
    assert dot.out.splitlines()[:3] == ["// haltproof state graph of two", "// } digraph x {",
                                        f"// classDef s fill:red ({spec})"]
    mermaid = cli("graph", spec, "--format", "mermaid")
    assert mermaid.code == 0 and mermaid.out.splitlines()[1:4] == [
        "  %% haltproof state graph of two", "  %% } digraph x {", f"  %% classDef s fill:red ({spec})"]
    assert mermaid_text("a\rb") == "a<br/>b"


def test_the_dot_checks_have_teeth():
    """An unescaped quote in a label is caught by the grammar check (and by Graphviz)."""
    broken = 'digraph "g" {\n  "s0" [label="a "quoted" label"];\n}\n'
    with pytest.raises(DotSyntaxError, match="line 2: expected '='"):
        parse_dot(broken)
    if DOT:
        done = subprocess.run([DOT, "-Tsvg"], input=broken, capture_output=True, text=True)
        assert done.returncode != 0


@needs_dot
def test_escaped_dot_renders_with_graphviz(tmp_path):
    G, _ = _nasty_graph()
    done = subprocess.run([DOT, "-Tsvg"], input=to_dot(G), capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_the_html_reports_graph_is_the_graph_commands_graph():
    """One graph model: the page draws the check's exploration with the same states, edges,
    styles and highlighted counterexample as `haltproof graph --highlight`, through the same
    DOT writer; only the layout (ids, tooltips, compact labels) differs."""
    spec, pins = MUTANTS / "failure_not_a_step.yaml", {"max_steps": 2, "max_retries": 0}
    opts = Options(pins=pins, properties=["terminates"])
    (m,) = prepare(load_spec(spec), opts)
    run = check_machine(m, opts)
    (page,) = state_graphs([run], report.to_json([run]))
    cmd, _ = graph_for(str(spec), pins, highlight="terminates")
    assert isinstance(page, StateGraph)
    for attr in ("var_names", "states", "edges", "initial", "terminal", "deadlock", "spec_error",
                 "on_trace", "trace_edges", "depth"):
        assert getattr(page, attr) == getattr(cmd, attr), attr
    assert page.on_trace == {0, 7} and page.trace_edges == {(0, 7), (7, 7)}      # the lasso
    page_dot = parse_dot(to_dot(page, replace(PAGE_VIEW, id_prefix="g3")))
    file_dot = parse_dot(to_dot(cmd))
    assert set(page_dot.nodes) == set(file_dot.nodes) and len(page_dot.nodes) == 77
    assert [(u, v) for u, v, _ in page_dot.edges] == [(u, v) for u, v, _ in file_dot.edges]
    for n, a in file_dot.nodes.items():
        b = page_dot.nodes[n]
        assert {k: a.get(k) for k in STYLE} == {k: b.get(k) for k in STYLE}, n
        assert b["id"] == f"g3-{n}" and b["label"] == n                 # 77 > 30 states: compact
        assert b["tooltip"] == "state " + a["label"][1:]
    assert page_dot.nodes["s0"]["color"] == "#cf222e" and page_dot.nodes["s0"]["style"] == "rounded,bold"
    red = [(u, v) for u, v, a in page_dot.edges if a.get("color") == "#cf222e"]
    assert red == [(u, v) for u, v, a in file_dot.edges if a.get("color") == "#cf222e"] == \
        [("s0", "s7"), ("s7", "s7")]


STYLE = ("style", "fillcolor", "peripheries", "color", "penwidth")


def test_graphml_reads_back_with_the_same_graph(cli, tmp_path):
    out = tmp_path / "g.graphml"
    ran = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--format", "graphml",
              "-o", out, "--highlight", "success_reachable")
    assert ran.code == 0 and ran.out == ""
    G = nx.read_graphml(out)
    assert G.number_of_nodes() == 112 and G.number_of_edges() == 105
    assert sum(1 for _, d in G.nodes(data=True) if d["terminal"] is True) == 91
    d0 = G.nodes["0"]
    assert d0["var.steps"] == 0 and d0["initial"] is True and d0["depth"] == 0
    assert G.graph["states"] == 112 and G.graph["highlight"] == "success_reachable"
    assert sum(1 for _, d in G.nodes(data=True) if d["highlight"]) == 2


def test_mermaid_flowchart_styles_terminals_and_the_highlighted_path(cli):
    ran = cli("graph", MUTANTS / "failure_not_a_step.yaml", "-p", "max_steps=2", "-p", "max_retries=0",
              "--format", "mermaid", "--highlight", "terminates")
    assert ran.code == 0
    lines = ran.out.splitlines()
    assert lines[0] == "flowchart TD"
    G = to_networkx(graph_for(str(MUTANTS / "failure_not_a_step.yaml"), {"max_steps": 2, "max_retries": 0},
                              highlight="terminates")[0])
    node_lines = [x for x in lines if re.match(r"  s\d+[\[(]", x)]
    edge_lines = [x for x in lines if " -->|" in x]
    assert len(node_lines) == G.number_of_nodes() == 77 and len(edge_lines) == G.number_of_edges()
    terminal = {f"s{n}" for n, d in G.nodes(data=True) if d["terminal"]}
    (cls,) = [x for x in lines if x.endswith(" terminal") and x.startswith("  class ")]
    assert set(cls.split()[1].split(",")) == terminal
    assert all(re.match(rf"  {s}\(\[", next(x for x in node_lines if x.startswith(f"  {s}[") or
                                             x.startswith(f"  {s}(")))
               for s in terminal)                              # terminals are stadium-shaped
    (link,) = [x for x in lines if x.startswith("  linkStyle ")]
    marked = [int(i) for i in link.split()[1].split(",")]
    hl = [n for n, (_, _, d) in enumerate(G.edges(data=True)) if d["highlight"]]
    assert marked == hl and len(hl) == 2                      # s0 -> s7 and the self-loop s7 -> s7
    assert mermaid_text('a"b#c<d>|e\nf') == "a#quot;b#35;c#lt;d#gt;#124;e<br/>f"


# ---------------------------------------------------------------- usage errors

@pytest.mark.parametrize("args, message", [
    ([LOOP_DEMO], "a graph shows one param combination, and 10 are declared; pin max_steps, "
                  "max_retries (e.g. -p max_steps=1 -p max_retries=0)"),
    ([LOOP_DEMO, "-p", "max_steps=2"], "and 2 are declared; pin max_retries (e.g. -p max_retries=0)"),
    ([LOOP_DEMO, "-p", "max_steps=9", "-p", "max_retries=0"], "-p max_steps=9: not a declared value"),
    ([LOOP_DEMO, "-p", "nope=1"], "-p nope=1: the spec has no param nope"),
    ([LOOP_DEMO, "-p", "max_steps"], "-p max_steps: write -p NAME=VALUE"),
    ([LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=0", "--highlight", "nope"],
     "--highlight nope: the spec has no such property"),
    ([LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=0", "--max-nodes", "0"],
     "--max-nodes must be positive"),
    ([LOOP_DEMO, "--format", "svg"], "invalid choice: 'svg'"),
    (["no/such/spec.yaml"], "no/such/spec.yaml: no such file"),
    ([RETRY, "-p", "K=1", "-p", "R=0", "-o", "/no/such/dir/g.dot"],
     "-o /no/such/dir/g.dot: cannot write the graph"),
    # an empty -o wrote the graph to stdout; an empty --highlight highlighted nothing, silently
    ([RETRY, "-p", "K=1", "-p", "R=0", "-o", ""], "error: -o needs a file name\n"),
    ([RETRY, "-p", "K=1", "-p", "R=0", "--highlight="],
     "retry_loop.yaml: --highlight : the spec has no such property (it has: bounded, "),
])
def test_usage_errors_exit_2_with_a_message_and_no_traceback(cli, args, message):
    ran = cli("graph", *args)
    assert ran.code == 2, ran.out
    assert message in ran.err
    assert "Traceback" not in ran.err and ran.out == ""


def test_an_invalid_spec_is_exit_2_naming_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("machine: bad\nvars:\n  n: {type: int, min: 0, max: 2, init: 0}\n"
                   "actions:\n  go: {do: [{set: {n: n + flag}}]}\n")
    ran = cli("graph", bad)
    assert ran.code == 2 and "bad.yaml:5" in ran.err and "flag" in ran.err
    assert "Traceback" not in ran.err and ran.out == ""


# ---------------------------------------------------------------- the doc's examples are real

def _doc_commands() -> list[tuple[str, int]]:
    text = DOC.read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command, _, comment = line.partition("  #")
            command = command.strip()
            if command.startswith(("haltproof ", "python ")):
                m = re.search(r"exit (\d)", comment)
                out.append((command, int(m.group(1)) if m else 0))
    return out


def test_the_doc_has_commands_for_both_features():
    commands = " ".join(c for c, _ in _doc_commands())
    assert "--trace-format itf" in commands and "replay" in commands and "haltproof graph" in commands
    assert {code for _, code in _doc_commands()} == {0, 1, 2}


@pytest.fixture
def doc_dir(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run_doc_commands(cli, doc_dir):
    for command, code in _doc_commands():
        if command.startswith("python "):
            done = subprocess.run(shlex.quote(sys.executable) + command[len("python"):], shell=True,
                                  cwd=doc_dir, capture_output=True, text=True)
            assert done.returncode == code, (command, done.stderr)
            continue
        ran = cli(*shlex.split(command)[1:])
        assert ran.code == code, (command, ran.out[-1500:], ran.err)
        assert "Traceback" not in ran.err


def test_the_docs_commands_run_in_order_with_the_documented_exit_codes(cli, doc_dir):
    _run_doc_commands(cli, doc_dir)
    for name in ("report.json", "terminates.itf.json", "domains.json", "loop_demo.dot",
                 "loop_demo.graphml", "loop_demo.json", "lasso.dot", "cut.dot"):
        assert (doc_dir / name).is_file(), name


@pytest.mark.slow
def test_the_docs_sample_outputs_are_what_the_commands_print(cli, doc_dir):
    text = DOC.read_text()
    samples = re.findall(r"```(?:text|console)\n\$ (haltproof [^\n]*)\n(.*?)```", text, re.S)
    assert len(samples) >= 3
    _run_doc_commands(cli, doc_dir)
    for command, shown in samples:
        ran = cli(*shlex.split(command.split("  #")[0])[1:])
        printed = ran.out + ran.err
        for line in shown.splitlines():
            if line.strip() and line.strip() != "...":
                assert line.rstrip() in printed, (command, line)
    # the ITF example is exactly what check writes
    (example,) = re.findall(r"```json\n(.*?)```", text, re.S)
    report = json.loads((doc_dir / "report.json").read_text())
    trace = next(p for p in report["runs"][0]["properties"] if p["name"] == "terminates")["trace"]
    assert json.loads(example) == trace
    # and the Mermaid block is the real output, comments aside
    (mermaid,) = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    (command,) = [c for c, _ in _doc_commands() if "--format mermaid" in c]
    real = cli(*shlex.split(command)[1:]).out
    assert mermaid == "".join(x + "\n" for x in real.splitlines() if not x.strip().startswith("%%"))


@pytest.mark.parametrize("max_nodes, message", [
    (0, "max_nodes must be positive, got 0"),
    (-1, "max_nodes must be positive, got -1"),
    (2.5, "max_nodes must be a positive integer, got 2.5"),
    (True, "max_nodes must be a positive integer, got True"),
])
def test_graph_for_refuses_a_max_nodes_that_is_not_a_positive_int(max_nodes, message):
    """From Python, 0 and -1 drew an empty graph ("shows the first -1 of 42 states ... 43
    states are left out") and True one state "cut at --max-nodes True"."""
    with pytest.raises(ValueError) as info:
        graph_for(str(LOOP_DEMO), {"max_steps": 1, "max_retries": 0}, max_nodes=max_nodes)
    assert str(info.value) == message
