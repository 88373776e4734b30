"""The HTML report (`--html FILE`, `--format html`): one self-contained, escaped page.

Checked twice: the page source parsed with html.parser (no external reference, every
user string escaped, the expected structure), and the DOM that real headless Chromium
renders from it (skipped only when chromium is not installed; .ci/run installs it).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import shlex
import shutil
import stat
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import haltproof.reports.html as H
from conftest import LOOP_DEMO, MUTANTS, ROOT, doc_commands
from haltproof.reports import report
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, check_spec, prepare
from haltproof.cli.main import main
from haltproof.reports.formats import FILE_FORMATS, FORMATS
from haltproof.reports.graph import Transition
from haltproof.machine.spec import load_spec

XSS_SPEC = """\
machine: xss_demo
description: values that try to break out of the page <b>bold</b> & "quotes"
params:
  K: [1, 2]
  R: [0, 1]
vars:
  n: {type: int, min: 0, max: K, init: 0}
  tag: {type: enum, values: ["<script>alert(1)</script>", "a&b \\"q\\" 'x' &lt;", done],
        init: "<script>alert(1)</script>"}
actions:
  go:
    when: tag != done
    choose: {pick: ["<img src=x onerror=alert(2)>", ok]}
    do:
      - set: {n: n + 1}
      - decide: tag
        rules:
          - {name: finish, when: n >= K, then: done}
          - {name: flip, then: "a&b \\"q\\" 'x' &lt;"}
terminal: {label: tag, values: [done]}
properties:
  small: {always: n < K, description: "n stays below K </td><script>alert(3)</script>"}
  ends: {terminates_within: K}
"""

DOT = shutil.which("dot")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# ---------------------------------------------------------------- helpers

def plain_copy(mutant: Path, target: Path) -> Path:
    """A mutant without its `expect:` block: a plainly violated spec."""
    lines = mutant.read_text().splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        if line.startswith("expect:"):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        skipping = False
        out.append(line)
    text = "".join(out)
    assert "expect:" not in text
    target.write_text(text)
    return target


def run_cli(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        found = []
        for c in self.children:
            if isinstance(c, Node):
                if ((tag is None or c.tag == tag) and (cls is None or cls in c.classes)
                        and all(c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())):
                    found.append(c)
                found.extend(c.all(tag, cls, **attrs))
        return found

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.all(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]


class Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", {}, None)
        self.elements: list[Node] = []

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        self.elements.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        self.elements.append(node)

    def handle_endtag(self, tag):
        node = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(page: str) -> Tree:
    t = Tree()
    t.feed(page)
    t.close()
    return t


def run_section(tree: Tree, machine: str, params: str) -> Node:
    for sec in tree.root.all("section", "run"):
        h = sec.all("h3")[0]
        if h.text().startswith(machine + " ") and h.one("span", "mono").text() == params:
            return sec
    raise AssertionError(f"no run section for {machine} {params}")


def sweep_cell(tree: Tree, spec_suffix: str, params: str) -> Node:
    cells = [c for c in tree.root.all("td", "cell") if c.attrs.get("data-params") == params]
    for c in cells:
        table = c.parent
        while table.tag != "table":
            table = table.parent
        if Path(table.attrs["data-spec"]).name == spec_suffix:
            return c
    raise AssertionError(f"no sweep cell for {spec_suffix} {params}")


def verdict_class(node: Node) -> str:
    (v,) = [c for c in node.classes if c.startswith("v-")]
    return v


def trace_table_after(section: Node, prop: str) -> Node:
    kids = [k for k in section.children if isinstance(k, Node)]
    for i, k in enumerate(kids):
        if k.tag == "h4" and k.attrs.get("id", "").endswith("-" + prop):
            assert kids[i + 1].tag == "table" and "trace" in kids[i + 1].classes
            return kids[i + 1]
    raise AssertionError(f"no counterexample table for {prop}")


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """One check over four specs giving all four verdicts, as HTML (with graphs) and JSON:
    loop_demo (proved; incomplete above 150 states), a plain copy of a mutant (violated),
    a mutant with `expect` (violated as expected) and a spec whose values are markup."""
    d = tmp_path_factory.mktemp("html")
    shutil.copy(LOOP_DEMO, d / "loop_demo.yaml")
    plain_copy(MUTANTS / "limit_before_observation.yaml", d / "lbo_plain.yaml")
    shutil.copy(MUTANTS / "retry_past_last_step.yaml", d / "retry_past_last_step.yaml")
    (d / "xss.yaml").write_text(XSS_SPEC)
    specs = [d / n for n in ("loop_demo.yaml", "lbo_plain.yaml", "retry_past_last_step.yaml", "xss.yaml")]
    code, out, err = run_cli("check", *specs, "--max-states", "150", "--html", d / "report.html",
                             "--json", d / "report.json", "--format", "json")
    assert code == 1, err
    return {"dir": d, "page": (d / "report.html").read_text(encoding="utf-8"),
            "report": json.loads((d / "report.json").read_text()), "stdout": json.loads(out)}


# ---------------------------------------------------------------- registry and CLI

def test_html_is_registered_as_a_format_and_a_file_format():
    assert "html" in FORMATS and "html" in FILE_FORMATS


def test_format_html_to_stdout_is_the_same_page_as_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("check", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1",
                           "--format", "html", "--html", "page.html")
    assert code == 0
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert out == (tmp_path / "page.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("target", ["missing-dir/report.html", "."])
def test_unwritable_html_file_is_a_usage_error(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0",
                             "--html", target)
    assert code == 2
    assert f"--html {target}: cannot write the report" in err
    assert "Traceback" not in err and out == ""


def test_html_option_without_a_file_is_a_usage_error():
    code, _, err = run_cli("check", LOOP_DEMO, "--html")
    assert code == 2 and "--html" in err and "Traceback" not in err


# ---------------------------------------------------------------- the page source

def test_page_is_self_contained(mixed):
    page = mixed["page"]
    tree = parse(page)
    assert page.startswith("<!DOCTYPE html>")
    # no network reference anywhere: the test specs contain no URL, so none may appear
    assert "http://" not in page and "https://" not in page
    banned = {"script", "link", "img", "iframe", "object", "embed", "base", "form", "video",
              "audio", "source", "frame", "image", "use", "foreignobject"}
    assert not [el.tag for el in tree.elements if el.tag in banned]
    for el in tree.elements:
        for name, value in el.attrs.items():
            v = (value or "").strip().lower()
            assert not name.startswith("on"), (el.tag, name)
            assert "//" not in v and "url(" not in v and "javascript:" not in v, (el.tag, name, v)
            if name in ("href", "xlink:href", "src", "action", "poster", "data"):
                assert v.startswith("#"), (el.tag, name, v)
    (style,) = tree.root.all("style")
    css = style.text()
    assert "url(" not in css and "@import" not in css and "//" not in css
    csp = [m for m in tree.root.all("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0].attrs["content"]
    # every internal link points at an element of the page
    ids = {el.attrs["id"] for el in tree.elements if "id" in el.attrs}
    assert len(ids) == len([el for el in tree.elements if "id" in el.attrs]), "duplicate ids"
    hrefs = [el.attrs["href"] for el in tree.elements if el.attrs.get("href")]
    assert hrefs and all(h[1:] in ids for h in hrefs)


def test_user_strings_are_escaped(mixed):
    page = mixed["page"]
    assert "<script>" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page                  # a state value
    assert "pick=&lt;img src=x onerror=alert(2)&gt;" in page                # a choice
    assert "&lt;/td&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in page        # a description
    tree = parse(page)
    sec = run_section(tree, "xss_demo", "K=2 R=0")
    rows = trace_table_after(sec, "small").all("tr", "step-row")
    values = [[td.text() for td in r.all("td", "val")] for r in rows]
    # parsed back, the text is exactly the spec's value (escaped once, not twice)
    assert values == [["0", "<script>alert(1)</script>"], ["1", "a&b \"q\" 'x' &lt;"], ["2", "done"]]
    assert rows[0].one("td", "action").text() == "(initial)"
    assert rows[1].one("td", "choices").text() == "pick=<img src=x onerror=alert(2)>"


def test_summary_counts_and_overall_result(mixed):
    tree = parse(mixed["page"])
    overall = tree.root.one(id="overall")
    assert overall.text() == "violated" and "v-violated" in overall.classes
    runs = mixed["report"]["runs"]
    keys = [H.run_verdict(r)[0] for r in runs]
    for k in ("proved", "expected", "violated", "incomplete"):
        assert tree.root.one(id=f"count-{k}").text() == str(keys.count(k))
    assert set(keys) == {"proved", "expected", "violated", "incomplete"}
    assert mixed["report"] == mixed["stdout"]


def test_sweep_matrix_cells_have_the_run_verdicts_and_link_to_the_runs(mixed):
    tree = parse(mixed["page"])
    runs = mixed["report"]["runs"]
    cells = tree.root.all("td", "cell")
    assert len(cells) == len(runs)                           # every combination was run
    for n, run in enumerate(runs):
        params = " ".join(f"{k}={v}" for k, v in run["params"].items())
        cell = sweep_cell(tree, Path(run["spec"]).name, params)
        assert verdict_class(cell) == "v-" + H.run_verdict(run)[0]
        assert cell.one("a").attrs["href"] == f"#run-{n}"
    # the grid: rows are max_steps, columns max_retries
    loop = tree.root.all("table", "sweep")[0]
    rows = loop.all("tr")
    assert [th.text() for th in rows[0].all("th")][1:] == ["0", "1"]
    assert [r.all("th")[0].text() for r in rows[1:]] == ["1", "2", "3", "4", "5"]
    expect = {"max_steps=1 max_retries=0": "v-proved", "max_steps=5 max_retries=1": "v-incomplete"}
    for params, cls in expect.items():
        assert verdict_class(sweep_cell(tree, "loop_demo.yaml", params)) == cls
    assert verdict_class(sweep_cell(tree, "lbo_plain.yaml", "max_steps=3 max_retries=0")) == "v-violated"
    assert verdict_class(sweep_cell(tree, "retry_past_last_step.yaml",
                                    "max_steps=1 max_retries=1")) == "v-expected"


def test_property_table_and_counterexample_with_changed_vars(mixed):
    tree = parse(mixed["page"])
    sec = run_section(tree, "loop_limit_before_observation", "max_steps=3 max_retries=0")
    assert "v-violated" in sec.classes
    run = next(r for r in mixed["report"]["runs"]
               if r["machine"] == "loop_limit_before_observation" and r["params"]["max_steps"] == 3
               and r["params"]["max_retries"] == 0)
    rows = sec.one("table", "props").all("tr", "prop")
    assert [r.attrs["data-property"] for r in rows] == [p["name"] for p in run["properties"]]
    row = next(r for r in rows if r.attrs["data-property"] == "final_answer_on_last_step_kept")
    status = row.one("td", "status")
    assert status.text() == "VIOLATED" and "v-violated" in status.classes
    assert "false for this transition" in row.text()
    table = trace_table_after(sec, "final_answer_on_last_step_kept")
    head = [th.text() for th in table.all("tr")[0].all("th")]
    assert head == ["step", "action", "choices", "rule", "steps", "failures", "phase", "observation",
                    "decision", "scenario"]
    steps = next(p for p in run["properties"] if p["name"] == "final_answer_on_last_step_kept")["trace"]["steps"]
    body = table.all("tr", "step-row")
    assert len(body) == len(steps) == 4
    last = body[-1]
    assert last.one("td", "action").text() == "read_task_cards"
    assert last.one("td", "choices").text() == "obs=one_match"
    assert last.one("td", "rule").text() == "limit"
    for i, tr in enumerate(body):
        changed = {head[4 + k] for k, td in enumerate(tr.all("td", "val")) if "changed" in td.classes}
        want = set() if i == 0 else {k for k, v in steps[i]["state"].items() if steps[i - 1]["state"][k] != v}
        assert changed == want, i
    assert {"steps", "observation", "decision"} <= want


def test_lasso_marks_the_loop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli("check", MUTANTS / "failure_not_a_step.yaml", "-p", "max_steps=2",
                         "-p", "max_retries=0", "--html", "lasso.html")
    assert code == 0
    tree = parse((tmp_path / "lasso.html").read_text())
    sec = tree.root.one("section", "run")
    assert "v-expected" in sec.classes
    table = trace_table_after(sec, "terminates")
    assert "lasso" in table.classes
    rows = table.all("tr", "step-row")
    assert [r.one("td", "step").text() for r in rows] == ["0", "1 ⟲ loop starts", "2 ↩ back to step 1"]
    assert "loop-start" in rows[1].classes and "loop-back" in rows[2].classes
    row = next(r for r in sec.one("table", "props").all("tr", "prop") if r.attrs["data-property"] == "terminates")
    assert row.one("td", "status").text() == "violated as expected"
    assert row.one("td", "expected").text() == "as expected"


def test_coverage_and_vacuity_warnings(mixed):
    tree = parse(mixed["page"])
    sec = run_section(tree, "loop_demo", "max_steps=1 max_retries=0")
    rules = {r.all("td")[0].text(): r.all("td")[1] for r in sec.one("table", "rules").all("tr")[1:]}
    assert rules["continue"].text() == "0" and "zero" in rules["continue"].classes
    assert rules["success"].text() == "7"
    terminals = {r.all("td")[0].text(): r.all("td")[1].text() for r in sec.one("table", "terminals").all("tr")[1:]}
    assert terminals == {"success": "7", "needs_input": "14", "error": "7", "limit": "7"}
    run = mixed["report"]["runs"][int(sec.attrs["id"].removeprefix("run-"))]
    assert run["params"] == {"max_steps": 1, "max_retries": 0}
    line = run["source"]["rules"]["read_task_cards"]["continue"]
    assert rules["continue"].parent.all("td")[2].text() == str(line)
    warnings = [li.text() for li in sec.one("ul", "warnings").all("li")]
    assert warnings == [f"warning: vacuous: decide rule 'continue' of action read_task_cards (line {line}) "
                        "never fires: it is shadowed, whenever its condition holds an earlier rule "
                        "(error, limit, needs_input, success) fires first"]


def test_a_model_run_of_a_bound_spec_says_the_code_did_not_run():
    """--model never claims the code ran, in the page either: it says the code did not run."""
    pins = {"max_steps": 1, "max_retries": 0}
    model = report.to_json(check_spec(load_spec(LOOP_DEMO), Options(pins=pins, model_only=True)))
    code = report.to_json(check_spec(load_spec(LOOP_DEMO), Options(pins=pins)))
    said = "the spec's stages only (--model: the bound code did not run)"
    head = parse(H.render_html(model)).root.one("section", "run").one("p", "muted").text()
    assert said in head and "checked the bound" not in head
    head = parse(H.render_html(code)).root.one("section", "run").one("p", "muted").text()
    assert said not in head and "checked the bound code: haltproof.harness.loop_binding:LoopDemoAdapter" in head


def test_matrix_with_one_none_and_three_params():
    base = json.loads(json.dumps(_small_report()))
    run = base["runs"][0]
    one = dict(base, runs=[dict(run, params={"K": k}) for k in (1, 2, 3)])
    page = parse(H.render_html(one))
    table = page.root.one("table", "sweep")
    assert len(table.all("tr")) == 2 and len(table.all("td", "cell")) == 3
    none = dict(base, runs=[dict(run, params={})])
    assert len(parse(H.render_html(none)).root.one("table", "sweep").all("td", "cell")) == 1
    three = dict(base, runs=[dict(run, params={"a": a, "b": b, "c": 0}) for a in (1, 2) for b in (1, 2)])
    table = parse(H.render_html(three)).root.one("table", "sweep")
    rows = table.all("tr")
    assert [th.text() for th in rows[0].all("th")] == ["a", "b", "c", "verdict"]
    assert len(rows) == 5 and [td.text() for td in rows[2].all("td")][:3] == ["1", "2", "0"]
    # a pinned sweep leaves holes in the grid: "not run" cells
    holes = dict(base, runs=[dict(run, params={"a": 1, "b": 1}), dict(run, params={"a": 2, "b": 2})])
    t = parse(H.render_html(holes)).root.one("table", "sweep")
    assert len(t.all("td", "v-none")) == 2


def _small_report() -> dict:
    runs = check_spec(load_spec(ROOT / "docs" / "examples" / "retry_loop.yaml"), Options(pins={"K": 1, "R": 0}))
    return report.to_json(runs)


def test_run_verdict_matches_the_gate(tmp_path):
    """The page's verdict per run is RunResult.verdict, also for specs with `expect` that
    stopped early or were not met."""
    plain = plain_copy(MUTANTS / "limit_before_observation.yaml", tmp_path / "plain.yaml")
    gate = {"pass": {"proved", "expected"}, "fail": {"violated"}, "incomplete": {"incomplete"}}
    seen = set()
    for path in (LOOP_DEMO, plain, MUTANTS / "retry_past_last_step.yaml", MUTANTS / "failure_not_a_step.yaml"):
        for opts in (Options(), Options(max_states=150), Options(max_states=20)):
            runs = check_spec(load_spec(path), opts)
            for r, rd in zip(runs, report.to_json(runs)["runs"], strict=True):
                key = H.run_verdict(rd)[0]
                assert key in gate[r.verdict], (path, r.params, r.verdict, key)
                seen.add((r.verdict, key))
    assert {("pass", "proved"), ("pass", "expected"), ("fail", "violated"), ("incomplete", "incomplete")} <= seen
    # an expected violation that does not happen fails: the cell is red, and says so
    rd = copy.deepcopy(report.to_json(check_spec(load_spec(LOOP_DEMO), Options(pins={"max_steps": 1, "max_retries": 0})))["runs"][0])
    rd["as_expected"] = False
    assert H.run_verdict(rd) == ("violated", "proved, NOT as expected")


# ---------------------------------------------------------------- the state graph

def test_rendered_from_report_data_alone_the_graph_is_not_included(mixed):
    page = FORMATS["html"](mixed["report"])
    assert "state graph: not included" in page and "<svg" not in page


def test_without_dot_the_page_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, _ = run_cli("check", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--html", "r.html")
    assert code == 0
    page = (tmp_path / "r.html").read_text()
    assert "<svg" not in page
    assert re.search(r"state graph: not drawn \(Graphviz <code>dot</code> is not installed", page)


def test_graph_notes_for_big_and_incomplete_runs(mixed, tmp_path, monkeypatch):
    page = mixed["page"]
    assert "state graph: not drawn (the exploration stopped early" in page
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli("check", LOOP_DEMO, "-p", "max_steps=5", "-p", "max_retries=1", "--html", "big.html")
    assert code == 0
    assert "state graph: not drawn (322 states; it is drawn for runs of at most 200 states)" in \
        (tmp_path / "big.html").read_text()


def test_state_graphs_are_the_checked_graphs():
    spec = load_spec(LOOP_DEMO)
    opts = Options(pins={"max_retries": 1})
    machines = prepare(spec, opts)
    runs = [check_machine(m, opts) for m in machines]
    data = report.to_json(runs)
    graphs = H.state_graphs(runs, data)
    for g, run in zip(graphs, data["runs"], strict=True):
        if run["stats"]["states"] <= H.GRAPH_MAX_STATES:
            assert isinstance(g, H.StateGraph)
            assert len(g.states) == run["stats"]["states"] and g.transitions == run["stats"]["transitions"]
            assert len(g.terminal) == run["stats"]["terminal_states"]
        else:
            assert isinstance(g, str) and "not drawn" in g
    assert H.state_graphs(runs[:1], data) == [H.NOT_INCLUDED] * len(data["runs"])


def _fake_dot(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-dot"
    script.write_text("#!/bin/sh\ncat >/dev/null\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_broken_or_unsafe_dot_output_is_not_inlined(tmp_path):
    data = _small_report()
    graphs = [H.StateGraph(["x"], [(0,), (1,)], {0}, {1}, {(0, 1): [Transition("go")]})]
    failing = _fake_dot(tmp_path, "echo 'syntax error in line 1' >&2\nexit 1\n")
    page = H.render_html(data, graphs, dot=failing)
    assert "state graph: not drawn (Graphviz dot failed: syntax error in line 1)" in page
    evil = _fake_dot(tmp_path, "echo '<svg><script>alert(1)</script><a href=\"https://x\"></a></svg>'\n")
    page = H.render_html(data, graphs, dot=evil)
    assert "unexpected element &lt;script&gt;" in page and "<script" not in page and "https" not in page
    page = H.render_html(data, graphs, dot=None)
    assert "Graphviz <code>dot</code> is not installed" in page


def test_graph_budget_per_report(mixed, monkeypatch):
    monkeypatch.setattr(H, "GRAPH_BUDGET", 10)
    graphs = [H.StateGraph(["x"], [(i,) for i in range(6)]) for _ in mixed["report"]["runs"]]
    page = H.render_html(mixed["report"], graphs, dot=None)
    assert page.count("the limit per report is 10") == len(graphs) - 1


@pytest.mark.skipif(DOT is None, reason="Graphviz dot is not installed (apt-get install graphviz)")
def test_graph_svg_is_inline_escaped_and_highlights_the_counterexample(mixed):
    tree = parse(mixed["page"])
    sec = run_section(tree, "xss_demo", "K=2 R=0")
    (svg,) = sec.all("svg")
    assert "xmlns" not in svg.attrs
    texts = [t.text() for t in svg.all("text")]
    assert "tag=<script>alert(1)</script>" in texts and "tag=a&b \"q\" 'x' &lt;" in texts
    n = mixed["report"]["runs"].index(next(r for r in mixed["report"]["runs"]
                                           if r["machine"] == "xss_demo" and r["params"] == {"K": 2, "R": 0}))
    # the counterexample is 0 -> 1 -> 2: all three states and both edges drawn in red
    for i in range(3):
        node = svg.one("g", id=f"g{n}-s{i}")
        assert any(p.attrs.get("stroke") == "#cf222e" for p in node.all("path") + node.all("polygon"))
    big = run_section(tree, "loop_limit_before_observation", "max_steps=3 max_retries=0")
    assert len(big.one("div", "graph").all("g", "node")) == 112


LOOP_DEMO_OUTCOMES = [        # docs/how-to/probabilities.md's table, max_steps=2 max_retries=1: nothing left to a policy
    ["success", "69/100 (0.69)"], ["needs_input", "23/80 (0.2875)"], ["error", "1/400 (0.0025)"],
    ["limit", "1/50 (0.02)"], ["deadlock", "0"], ["never_terminating", "0"],
    ["expected transitions", "23/20 (1.15)"], ["expected failed_reads", "23/400 (0.0575)"],
]


def outcome_cells(section: Node) -> list[list[str]]:
    return [[td.text() for td in row.all("td")] for row in section.one("table", "outcomes").all("tr", "outcome")]


def test_outcome_table_of_a_weighted_spec(mixed):
    tree = parse(mixed["page"])
    sec = run_section(tree, "loop_demo", "max_steps=2 max_retries=1")
    assert outcome_cells(sec) == LOOP_DEMO_OUTCOMES
    # a run stopped at --max-states claims nothing: its message, no table
    stopped = run_section(tree, "loop_demo", "max_steps=5 max_retries=1")
    assert not stopped.all("table", "outcomes")
    assert stopped.one("p", "outcomes").text().startswith("not computed: ")
    # a spec without weights has no outcome section
    assert not run_section(tree, "xss_demo", "K=1 R=0").all(None, "outcomes")


# ---------------------------------------------------------------- headless Chromium

def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; "
                                             ".ci/run installs it): the page is not rendered in a browser")
@pytest.mark.slow
def test_chromium_renders_the_trace_the_violation_and_the_sweep(mixed, tmp_path):
    page_file = mixed["dir"] / "report.html"
    done = _chromium(tmp_path, "--dump-dom", page_file.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "<html" in dom and "</html>" in dom, dom[:500]
    # this is the browser's DOM, not our source: the HTML parser added the implied <tbody>s
    assert "<tbody>" in dom and "<tbody>" not in mixed["page"]
    tree = parse(dom)
    # the browser built the page we wrote: sections, no script element, escaped text kept as text
    assert tree.root.one(id="overall").text() == "violated"
    assert not [el for el in tree.elements if el.tag in ("script", "img", "iframe")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    # the sweep matrix cells, with the right verdict classes
    runs = mixed["report"]["runs"]
    cells = tree.root.all("td", "cell")
    assert len(cells) == len(runs)
    classes = {verdict_class(c) for c in cells}
    assert classes == {"v-proved", "v-violated", "v-expected", "v-incomplete"}
    assert verdict_class(sweep_cell(tree, "loop_demo.yaml", "max_steps=2 max_retries=0")) == "v-proved"
    assert verdict_class(sweep_cell(tree, "loop_demo.yaml", "max_steps=5 max_retries=1")) == "v-incomplete"
    assert verdict_class(sweep_cell(tree, "lbo_plain.yaml", "max_steps=3 max_retries=0")) == "v-violated"
    assert verdict_class(sweep_cell(tree, "retry_past_last_step.yaml", "max_steps=2 max_retries=1")) == "v-expected"
    # the violated property and its trace rows
    sec = run_section(tree, "loop_limit_before_observation", "max_steps=3 max_retries=0")
    row = next(r for r in sec.all("tr", "prop") if r.attrs["data-property"] == "final_answer_on_last_step_kept")
    assert row.one("td", "status").text() == "VIOLATED"
    body = trace_table_after(sec, "final_answer_on_last_step_kept").all("tr", "step-row")
    cells_text = [[td.text() for td in r.all("td")] for r in body]
    assert cells_text[0][:2] == ["0", "(initial)"]
    assert cells_text[-1][:4] == ["3", "read_task_cards", "obs=one_match", "limit"]
    last_changed = [td.text() for td in body[-1].all("td", "changed")]
    assert last_changed == ["3", "one_match", "limit"]
    if DOT is not None:
        assert sec.all("svg") and len(sec.one("div", "graph").all("g", "node")) == 112
    # the outcome table of a weighted spec, as the browser built it
    assert outcome_cells(run_section(tree, "loop_demo", "max_steps=2 max_retries=1")) == LOOP_DEMO_OUTCOMES

    shot = tmp_path / "report.png"
    done = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,2000", page_file.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1400, 2000)
    assert len(png) > 50_000              # a blank page compresses to a few KB


# ---------------------------------------------------------------- the documentation

DOC = (ROOT / "docs" / "how-to" / "html-report.md").read_text()


def _doc_commands() -> list[tuple[str, int]]:
    out = []
    for block in re.findall(r"```bash\n(.*?)```", DOC, re.S):
        for line in block.splitlines():
            command, _, comment = line.partition("  #")
            if command.strip().startswith("haltproof "):
                m = re.search(r"exit (\d)", comment)
                out.append((command.strip(), int(m.group(1)) if m else 0))
    return out


def test_doc_has_examples():
    assert len(_doc_commands()) >= 3


@pytest.mark.parametrize("command,code", doc_commands(_doc_commands()))
def test_doc_command_runs(command, code, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    monkeypatch.chdir(tmp_path)
    words = shlex.split(command)[1:]
    target = None
    if ">" in words:
        target = words[words.index(">") + 1]
        words = words[:words.index(">")]
    ran, out, err = run_cli(*words)
    assert ran == code, (command, err[-1500:])
    if target:
        Path(target).write_text(out, encoding="utf-8")
    files = [words[words.index("--html") + 1]] if "--html" in words else [target]
    for f in files:
        page = (tmp_path / f).read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and "</html>" in page
        assert parse(page).root.all("table", "sweep")
