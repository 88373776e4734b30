"""The HTML report: one self-contained page rendered from the `haltproof-report/1` dict.

The page needs no network: its CSS is inlined, it has no JavaScript, no external
asset, no font or image fetch, and a Content-Security-Policy that forbids any. Every
string that comes from a spec (names, messages, state values, choices) is escaped.

Sections: a summary (overall result and counts), a sweep matrix per spec (the params
grid, each cell coloured by the run's verdict and linking to the run), then per run its
property table, each counterexample as a step table (changed vars highlighted, a
lasso's loop marked), coverage (rule and terminal counts, vacuity warnings), and the
explored state graph as inline SVG.

The graph is not in the report dict. `state_graphs` builds the one graph model
(reports/graph.py) from the exploration the check kept for each run small enough to
draw, with the run's counterexamples highlighted, and `render_html(report, graphs=...)`
draws it through the same DOT writer as `haltproof graph`, with Graphviz `dot` when it
is installed. Rendered from the report dict alone, or without `dot`, the page says why
the graph is missing instead of drawing it.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import replace
from html.parser import HTMLParser
from typing import Any

from haltproof.explorer.chances import number
from haltproof.machine.text import assignments_text, counted, fraction_from_json, value_text
from haltproof.properties.kinds import VIOLATED, Trace

from . import findings as F
from .graph import PAGE_VIEW, StateGraph, build_graph, to_dot
from .text import outcome_rows

GRAPH_MAX_STATES = 200          # a run's graph is drawn only up to this many states
GRAPH_BUDGET = 2000             # ... and at most this many states over the whole report
DOT_TIMEOUT = 30.0              # seconds per `dot` call

NOT_INCLUDED = ("state graph: not included (this report was rendered from the report data alone, "
                "which does not hold the explored graph)")


def e(value: Any) -> str:
    """Escape any value for HTML text and attribute values."""
    return html.escape(_v(value), quote=True)


def _v(value: Any) -> str:
    """A value in a cell: blank when absent, a record as JSON, else as every format shows it."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value_text(value)


Writer = Callable[[str], None]      # appends one piece of the page


# ---------------------------------------------------------------- verdicts

_VERDICT_KEY = {"pass": "proved", "fail": "violated", "incomplete": "incomplete"}
# the legend's and the counts' words for each css key (the keys F.counts counts under)
VERDICT_TEXT = {"proved": "proved", "violated": "violated", "expected": "violated as expected",
                "incomplete": "incomplete"}
_COUNTED = {"proved": "proved", "expected": "as expected", "violated": "failed", "incomplete": "incomplete"}


def run_verdict(run: dict[str, Any]) -> tuple[str, str]:
    """(css key, text) of a run's verdict: the gate's judgement (findings.run_verdict, which is
    check.judge) in the text report's words (findings.run_result_text)."""
    verdict = F.run_verdict(run)
    key = "expected" if verdict == "pass" and run.get("as_expected") else _VERDICT_KEY[verdict]
    return key, F.run_result_text(run)


def _prop_status(p: dict[str, Any]) -> tuple[str, str]:
    """(css key, words) of a property's status; the words are the text report's (F.status_text)."""
    status = p.get("status", "unknown")
    if p.get("expected") is True and status == "violated":
        key = "expected"
    elif p.get("expected") is False:
        key = "violated"
    else:
        key = {"holds": "proved", "violated": "violated", "unknown": "incomplete"}.get(status, "error")
    return key, F.status_text(p)


# ---------------------------------------------------------------- state graphs

def state_graphs(runs: Sequence[Any], report: dict[str, Any],
                 limit: int = GRAPH_MAX_STATES) -> list[StateGraph | str]:
    """Per run of the report (same order as `runs`, the check's RunResults), its graph or
    why there is none. The graph is the one the check explored (kept on the RunResult for
    small complete runs): nothing is explored again."""
    rows = report.get("runs") or []
    if len(runs) != len(rows):
        return [NOT_INCLUDED] * len(rows)
    return [_graph_of(r, row, limit) for r, row in zip(runs, rows)]


def _graph_of(result: Any, run: dict[str, Any], limit: int) -> StateGraph | str:
    stats = run.get("stats") or {}
    n = stats.get("states", 0)
    if run.get("stopped_after_exploration"):
        return f"state graph: not drawn (the analyses after the exploration stopped at {F.stop_text(run)})"
    if run.get("stopped_by"):
        return "state graph: not drawn (the exploration stopped early, so the graph is incomplete)"
    ex = getattr(result, "_exploration", None)
    if n > limit or ex is None:
        return f"state graph: not drawn ({n:,} states; it is drawn for runs of at most {limit} states)"
    return build_graph(ex, highlight=_counterexamples(result), name=run.get("machine", ""))


def _counterexamples(result: Any) -> list[Trace]:
    """The traces the page shows for a run, to draw in red on its graph."""
    out: list[Trace] = []
    for p in getattr(result, "properties", None) or []:
        if p.status == VIOLATED and p.trace is not None:
            out += [p.trace] + ([p.other_trace] if p.other_trace is not None else [])
    return out


def find_dot() -> str | None:
    return shutil.which("dot")


_SVG_ELEMENTS = {"svg", "g", "title", "polygon", "polyline", "path", "ellipse", "text", "a",
                 "circle", "rect", "line", "tspan"}


class _SvgCheck(HTMLParser):
    """Accept dot's SVG only if it is plain drawing: no script, link, style or url()."""

    def __init__(self) -> None:
        super().__init__()
        self.bad: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _SVG_ELEMENTS:
            self.bad = self.bad or f"element <{tag}>"
        for name, value in attrs:
            v = (value or "").lower()
            if name.startswith("on") or name in ("href", "xlink:href", "src", "style") \
                    or "url(" in v or "javascript:" in v or "//" in v:
                self.bad = self.bad or f"attribute {name}"


def graph_svg(dot_source: str, dot: str) -> tuple[str | None, str]:
    """(svg markup to inline, or None, and a note for the reader)."""
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_source, capture_output=True, text=True,
                              timeout=DOT_TIMEOUT, encoding="utf-8")
    except subprocess.TimeoutExpired:
        return None, f"state graph: not drawn (Graphviz dot took more than {DOT_TIMEOUT:.0f} s)"
    except OSError as exc:
        return None, f"state graph: not drawn (Graphviz dot could not be run: {exc.strerror})"
    if done.returncode != 0 or "<svg" not in done.stdout:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"state graph: not drawn (Graphviz dot failed: {why})"
    svg = done.stdout[done.stdout.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg)   # implied for <svg> inside HTML
    svg = re.sub(r"\n\s*\n", "\n", svg).strip()
    check = _SvgCheck()
    check.feed(svg)
    check.close()
    if check.bad:
        return None, f"state graph: not drawn (dot's SVG held an unexpected {check.bad})"
    return svg, ""


# ---------------------------------------------------------------- page

CSS = """
:root { --ok: #1a7f37; --ok-bg: #dafbe1; --bad: #cf222e; --bad-bg: #ffebe9;
  --exp: #0969da; --exp-bg: #ddf4ff; --inc: #9a6700; --inc-bg: #fff8c5;
  --muted: #57606a; --line: #d0d7de; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  color: #1f2328; margin: 0 auto; padding: 16px 24px 48px; max-width: 1400px; }
h1 { font-size: 22px; margin: 4px 0 12px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
h4 { font-size: 14px; margin: 12px 0 4px; }
code, .mono, td.val, td.choices { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12.5px; }
table { border-collapse: collapse; margin: 4px 0 8px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
a { color: inherit; }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600;
  border: 1px solid currentColor; white-space: nowrap; }
.v-proved { color: var(--ok); background: var(--ok-bg); }
.v-violated { color: var(--bad); background: var(--bad-bg); }
.v-expected { color: var(--exp); background: var(--exp-bg); }
.v-incomplete { color: var(--inc); background: var(--inc-bg); }
.v-error { color: #fff; background: var(--bad); }
.v-none { color: var(--muted); background: #fff; }
.summary { display: flex; gap: 16px; align-items: center; flex-wrap: wrap; margin-bottom: 8px; }
.summary .result { font-size: 20px; padding: 4px 14px; }
.counts td { text-align: right; min-width: 3em; }
.legend span { margin-right: 8px; }
table.sweep td.cell { text-align: center; min-width: 9em; padding: 0; font-weight: 600; }
table.sweep td.cell a { display: block; padding: 6px 8px; text-decoration: none; }
table.sweep td.cell a:hover { text-decoration: underline; }
table.sweep th.corner { font-weight: 400; color: var(--muted); }
table.sweep th { vertical-align: middle; }
section.run { border: 1px solid var(--line); border-left: 6px solid var(--line); border-radius: 6px;
  padding: 4px 14px 10px; margin: 14px 0; }
section.run.v-proved { border-left-color: var(--ok); background: #fff; color: inherit; }
section.run.v-violated { border-left-color: var(--bad); background: #fff; color: inherit; }
section.run.v-expected { border-left-color: var(--exp); background: #fff; color: inherit; }
section.run.v-incomplete { border-left-color: var(--inc); background: #fff; color: inherit; }
section.run:target { box-shadow: 0 0 0 3px #54aeff66; }
td.status { font-weight: 600; white-space: nowrap; }
td.expected { white-space: nowrap; }
td.status.v-proved, td.status.v-violated, td.status.v-expected, td.status.v-incomplete { background: none; }
tr.prop.v-violated { background: var(--bad-bg); }
table.trace td.changed { background: #fff1a8; font-weight: 700; }
table.trace tr.loop-start td { border-top: 2px solid var(--bad); }
table.trace tr.loop-start td.step, table.trace tr.loop-back td.step { color: var(--bad); font-weight: 700; }
table.trace tr.loop-back td { border-bottom: 2px solid var(--bad); }
table.trace th.var { background: #eef1f4; }
.coverage { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
td.zero { color: var(--bad); font-weight: 700; }
ul.warnings { margin: 4px 0; padding-left: 20px; color: var(--inc); }
.graph { overflow: auto; max-height: 720px; border: 1px solid var(--line); border-radius: 6px;
  padding: 6px; background: #fff; }
.graph svg { max-width: 100%; height: auto; }
p.note { color: var(--muted); font-style: italic; margin: 6px 0; }
details > summary { cursor: pointer; font-weight: 600; margin: 10px 0 4px; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
@media print { section.run { break-inside: avoid-page; } .graph { max-height: none; } }
"""


def _badge(key: str, text: str, cls: str = "") -> str:
    return f'<span class="badge v-{key}{" " + cls if cls else ""}">{e(text)}</span>'


def render_html(report: dict[str, Any], graphs: Sequence[StateGraph | str] | None = None,
                *, dot: str | None | bool = True) -> str:
    """The whole page. `graphs`: per run, from `state_graphs` (None: no graphs in the
    report dict, so the page says so). `dot`: the Graphviz binary; True finds it on PATH,
    None/False means it is not installed."""
    runs = report.get("runs") or []
    binary = find_dot() if dot is True else dot or None
    if graphs is None or len(graphs) != len(runs):
        graphs = [NOT_INCLUDED] * len(runs)
    verdicts = [run_verdict(r) for r in runs]
    budget = _graph_budget(runs, graphs, verdicts)

    out: list[str] = []
    w = out.append
    title = _title(runs)
    w("<!DOCTYPE html>")
    w('<html lang="en"><head><meta charset="utf-8">')
    w('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
      'style-src \'unsafe-inline\'; img-src data:">')
    w('<meta name="viewport" content="width=device-width, initial-scale=1">')
    w('<meta name="generator" content="haltproof">')
    w(f"<title>{e(title)}</title>")
    w(f"<style>{CSS}</style></head><body>")
    w(f'<h1>{e(title)}</h1>')
    _summary(w, report, runs, verdicts)
    _sweeps(w, runs, verdicts, report.get("sweeps") or [])
    w('<h2 id="runs">Runs</h2>')
    for n, (run, (key, text)) in enumerate(zip(runs, verdicts)):
        _run(w, n, run, key, text, graphs[n], budget.get(n), binary, single=len(runs) == 1)
    tool = report.get("tool") or {}
    w(f'<footer>{e(tool.get("name", "haltproof"))} {e(tool.get("version", ""))} · report schema '
      f'{e(report.get("schema", ""))} · a self-contained page: no scripts, no network</footer>')
    w("</body></html>")
    return "\n".join(out) + "\n"


def _title(runs: list[dict[str, Any]]) -> str:
    machines = list(dict.fromkeys(r.get("machine", "?") for r in runs))
    shown = ", ".join(machines[:3]) + (f" and {len(machines) - 3} more" if len(machines) > 3 else "")
    return f"haltproof report: {shown}" if shown else "haltproof report"


def _graph_budget(runs: list[dict[str, Any]], graphs: Sequence[StateGraph | str],
                  verdicts: list[tuple[str, str]]) -> dict[int, str]:
    """Runs whose graph is left out because the report already draws enough states.
    Failing runs get their graph first."""
    order = sorted(range(len(runs)), key=lambda n: (verdicts[n][0] != "violated", n))
    used, skipped = 0, {}
    for n in order:
        g = graphs[n]
        if isinstance(g, StateGraph):
            if used + len(g.states) > GRAPH_BUDGET:
                skipped[n] = (f"state graph: not drawn (this report already draws {used:,} states "
                              f"of graphs; the limit per report is {GRAPH_BUDGET:,}; check this run "
                              "alone with -p to see its graph)")
            else:
                used += len(g.states)
    return skipped


def _summary(w: Writer, report: dict[str, Any], runs: list[dict[str, Any]],
             verdicts: list[tuple[str, str]]) -> None:
    result = report.get("result", "error")
    key = result if result in ("proved", "violated", "incomplete") else "error"
    tally = F.counts(runs)
    counts = {k: tally[c] for k, c in _COUNTED.items()}
    specs = list(dict.fromkeys(r.get("spec", "?") for r in runs))
    states = sum((r.get("stats") or {}).get("states", 0) for r in runs)
    w('<section id="summary"><h2>Summary</h2><div class="summary">')
    w(f'<span class="badge result v-{key}" id="overall">{e(result)}</span>')
    code = report.get("exit_code")
    w(f'<span>{counted(len(runs), "run")} of {counted(len(specs), "spec")}, {states:,} states explored'
      + (f", exit code {e(code)}" if code is not None else "") + "</span></div>")
    w('<table class="counts"><tr>')
    for k in ("proved", "expected", "violated", "incomplete"):
        w(f'<th class="v-{k}">{e("failed" if k == "violated" else VERDICT_TEXT[k])}</th>')
    w("</tr><tr>")
    for k in ("proved", "expected", "violated", "incomplete"):
        w(f'<td id="count-{k}">{counts[k]}</td>')
    w("</tr></table>")
    failing = [n for n, (k, _) in enumerate(verdicts) if k == "violated"]
    if failing:
        w("<p>Failing runs: " + ", ".join(
            f'<a href="#run-{n}">{e(runs[n].get("machine"))} {e(F.params_text(runs[n].get("params") or {}))}</a>'
            for n in failing) + "</p>")
    w("</section>")


def _sweeps(w: Writer, runs: list[dict[str, Any]], verdicts: list[tuple[str, str]],
            summaries: list[dict[str, Any]]) -> None:
    w('<section id="sweep"><h2>Sweep</h2>')
    w('<p class="legend">' + " ".join(_badge(k, VERDICT_TEXT[k])
                                      for k in ("proved", "violated", "expected", "incomplete"))
      + ' <span class="muted">each cell links to its run</span></p>')
    groups: dict[tuple[str, str], list[int]] = {}
    for n, r in enumerate(runs):
        groups.setdefault((r.get("spec", "?"), r.get("machine", "?")), []).append(n)
    for g, ((spec, machine), members) in enumerate(groups.items()):
        w(f'<h3><code>{e(spec)}</code> <span class="muted">[{e(machine)}]</span></h3>')
        names = list(dict.fromkeys(k for n in members for k in (runs[n].get("params") or {})))
        w(_matrix(g, spec, names, members, runs, verdicts))
        _limit_allows(w, [row for sweep in summaries if sweep["spec"] == spec
                          for row in sweep.get("limit_allows", [])])
    w("</section>")


def _limit_allows(w: Writer, rows: list[dict[str, Any]]) -> None:
    """A sweep's `limit_allows` lines (report.limit_allows) under its matrix: what each limit value allows."""
    if rows:
        w('<ul class="allows">' + "".join(
            f"<li><code>{e(row['property'])}</code>"
            + (f" at {e(F.params_text(row['others']))}" if row["others"] else "")
            + f": {e(row['message'])}</li>" for row in rows) + "</ul>")


def _cell(n: int, run: dict[str, Any], verdict: tuple[str, str]) -> str:
    key, text = verdict
    stats = run.get("stats") or {}
    tip = f"{F.params_text(run.get('params') or {})}: {text}, {stats.get('states', 0):,} states"
    return (f'<td class="cell v-{key}" data-params="{e(F.params_text(run.get("params") or {}))}">'
            f'<a href="#run-{n}" title="{e(tip)}">{e(text)}</a></td>')


def _matrix(g: int, spec: str, names: list[str], members: list[int], runs: list[dict[str, Any]],
            verdicts: list[tuple[str, str]]) -> str:
    rows: list[str] = [f'<table class="sweep" id="sweep-{g}" data-spec="{e(spec)}">']
    a = rows.append
    if len(names) in (1, 2):
        def values(name: str) -> list[Any]:
            return sorted({(runs[n].get("params") or {}).get(name) for n in members},
                          key=lambda v: (str(type(v)), v))
        at = {tuple((runs[n].get("params") or {}).get(k) for k in names): n for n in members}
        cols = values(names[-1])
        lines = values(names[0]) if len(names) == 2 else [None]
        corner = f"{e(names[0])} ↓ · {e(names[1])} →" if len(names) == 2 else f"{e(names[0])} →"
        a(f'<tr><th class="corner">{corner}</th>'
          + "".join(f"<th>{e(c)}</th>" for c in cols) + "</tr>")
        for line in lines:
            head = e(line) if len(names) == 2 else ""
            cells = []
            for c in cols:
                key = (line, c) if len(names) == 2 else (c,)
                n = at.get(key)
                cells.append('<td class="cell v-none">not run</td>' if n is None
                             else _cell(n, runs[n], verdicts[n]))
            a(f"<tr><th>{head}</th>{''.join(cells)}</tr>")
    else:   # no params, or more than two: one row per run
        a("<tr>" + "".join(f"<th>{e(k)}</th>" for k in names) + "<th>verdict</th></tr>")
        for n in members:
            params = runs[n].get("params") or {}
            a("<tr>" + "".join(f"<td>{e(params.get(k))}</td>" for k in names)
              + _cell(n, runs[n], verdicts[n]) + "</tr>")
    a("</table>")
    return "\n".join(rows)


def _run(w: Writer, n: int, run: dict[str, Any], key: str, text: str, graph: StateGraph | str,
         skipped: str | None, dot: str | None, single: bool) -> None:
    params = run.get("params") or {}
    stats = run.get("stats") or {}
    w(f'<section class="run v-{key}" id="run-{n}">')
    w(f'<h3>{e(run.get("machine"))} <span class="mono">{e(F.params_text(params))}</span> '
      f'{_badge(key, text, "verdict")}</h3>')
    explored = run.get("explored")
    stop = run.get("stopped_by")
    stop_text = ""
    if stop:
        stop_text = f" — stopped at {F.stop_text(run)}: proves nothing"
    w(f'<p class="muted"><code>{e(run.get("spec"))}</code>'
      + (f" · checked the bound {e(explored)}" if explored and explored != "model" else "")
      + (f" · the spec's stages only ({e(run['code_not_run'].get('by', '--model'))}: the bound code did not run)"
         if run.get("code_not_run") else "")
      + f" · {stats.get('states', 0):,} states, {stats.get('transitions', 0):,} transitions, "
        f"{stats.get('terminal_states', 0):,} terminal, depth {e(stats.get('max_depth', 0))}, "
        f"{float(stats.get('seconds', 0) or 0):.2f} s{e(stop_text)}</p>")
    props = run.get("properties") or []
    _properties(w, n, props)
    _outcomes(w, n, run.get("outcomes"))
    for p in props:
        if p.get("status") == "violated" and p.get("trace"):
            w(f'<h4 id="run-{n}-{e(p.get("name"))}">counterexample: {e(p.get("name"))} '
              f'<span class="muted">— {e(p.get("message"))}</span></h4>')
            _trace(w, p["trace"])
            if p.get("other_trace"):
                w('<p class="muted">… while this run, equal up to the ignored vars, does differently:</p>')
                _trace(w, p["other_trace"])
        if p.get("status") == "violated":
            _answers(w, n, p)
        if p.get("sensitivity"):
            _sensitivity(w, n, p)
    _scenarios(w, run.get("scenarios") or [])
    _coverage(w, run)
    _graph(w, n, graph, skipped, dot, open_=single)
    w("</section>")


def _properties(w: Writer, n: int, props: list[dict[str, Any]]) -> None:
    w(f'<table class="props" id="props-{n}"><tr><th>property</th><th>kind</th><th>status</th>'
      "<th>message</th><th>expected</th><th>line</th></tr>")
    for p in props:
        key, text = _prop_status(p)
        exp = p.get("expected")
        exp_text = "" if exp is None else ("as expected" if exp else "NOT as expected")
        name = e(p.get("name"))
        if p.get("status") == "violated" and p.get("trace"):
            name = f'<a href="#run-{n}-{e(p.get("name"))}">{name}</a>'
        desc = p.get("description")
        msg = e(p.get("message")) + (f'<br><span class="muted">{e(desc)}</span>' if desc else "")
        w(f'<tr class="prop v-{key if key == "violated" else "none"}" data-property="{e(p.get("name"))}">'
          f"<td class=\"mono\">{name}</td><td>{e(p.get('kind'))}</td>"
          f'<td class="status v-{key}">{e(text)}</td><td>{msg}</td>'
          f'<td class="expected">{e(exp_text)}</td><td>{e(_line_cell(p))}</td></tr>')
    w("</table>")


def _outcomes(w: Writer, n: int, table: dict[str, Any] | None) -> None:
    """A weighted spec's outcome table (the rows of the text report): how a run ends, with
    which probability, and each expected total, min..max over the policies."""
    if table is None:
        return
    w('<h4>outcomes <span class="muted">— probability, min..max over policies</span></h4>')
    if "message" in table:
        w(f'<p class="outcomes muted" id="outcomes-{n}">{e(table["message"])}</p>')
        return
    w(f'<table class="outcomes" id="outcomes-{n}"><tr><th>outcome</th><th>min..max</th></tr>')
    for name, span in outcome_rows(table):
        w(f'<tr class="outcome" data-outcome="{e(name)}"><td class="mono">{e(name)}</td>'
          f'<td class="span">{e(span)}</td></tr>')
    w("</table>")


def _line_cell(p: dict[str, Any]) -> Any:
    """A property's line; with its file when that is not the spec's (a Python model's base class)."""
    return f"{p['file']}:{p.get('line')}" if p.get("file") else p.get("line")


NEST = "&nbsp;" * 4       # a sub-agent's step is indented under the step that called it, per depth


def _answers(w: Writer, n: int, p: dict[str, Any]) -> None:
    """A violated probability's most probable run to its bad outcome (each step's probability
    in a column) and its witness policy as a decide table (the rows of the text report)."""
    name = e(p.get("name"))
    run = p.get("most_probable_run")
    if run:
        w(f'<h4 id="run-{n}-{name}-likeliest">most probable {e(run["goal"].removeprefix("a "))}: {name} '
          f'<span class="muted">— under the witness policy, probability '
          f'{e(number(fraction_from_json(run["probability"])))}</span></h4>')
        _trace(w, run["trace"], ["" if x == "1" else number(fraction_from_json(x)) for x in run["odds"]])
    table = p.get("decide_table")
    if not table:
        return
    w(f'<h4 id="run-{n}-{name}-decide">witness policy as a decide table: {name}</h4>')
    if not table["rows"]:
        w(f'<p class="muted decide">{e(table["message"])}</p>')
        return
    w(f'<table class="decide"><tr><th>where ({e(table["states"])} states where the choice matters)</th>'
      "<th>decision</th></tr>")
    for row in table["rows"]:
        w(f'<tr><td class="mono">{e(F.when_text(row["when"]))}</td><td class="mono">'
          f'{e(F.decision_text(row))}</td></tr>')
    w("</table>")


def _sensitivity(w: Writer, n: int, p: dict[str, Any]) -> None:
    """How a probability moves with each weight (every one; the text report lists the top few)."""
    name, sens = e(p.get("name")), p["sensitivity"]
    w(f'<h4 id="run-{n}-{name}-sensitivity">sensitivity to the weights: {name} <span class="muted">— '
      "d/dε of the probability when ε of a choice's weight moves to one value (the others scaled "
      "down), the witness policy fixed</span></h4>")
    if "message" in sens:
        w(f'<p class="muted sensitivity">{e(sens["message"])}</p>')
        return
    w('<table class="sensitivity"><tr><th>action</th><th>choice = value</th><th>weight</th><th>derivative</th></tr>')
    for row in sens["weights"]:
        w(f'<tr><td class="mono">{e(row["action"])}</td><td class="mono">{e(row["choice"])}='
          f'{e(value_text(row["toward"]))}</td><td>{e(number(fraction_from_json(row["weight"])))}</td>'
          f'<td class="rate">{e(F.sensitivity_row(row).rpartition(": ")[2])}</td></tr>')
    w("</table>")


def _trace(w: Writer, trace: dict[str, Any], odds: list[str] | None = None) -> None:
    """A trace as a table; with `odds` (each step's probability after the initial state) a column of them."""
    steps = trace.get("steps") or []
    names = list(dict.fromkeys(k for s in steps for k in (s.get("state") or {})))
    lasso = trace.get("kind") == "lasso"
    start = trace.get("loop_start")
    w(f'<table class="trace{" lasso" if lasso else ""}"><tr><th>step</th><th>action</th>'
      "<th>choices</th><th>rule</th>" + ("<th>probability</th>" if odds is not None else "")
      + "".join(f'<th class="var">{e(k)}</th>' for k in names) + "</tr>")
    prev: dict[str, Any] | None = None
    for i, s in enumerate(steps):
        state = s.get("state") or {}
        cls = ["step-row"]
        mark = ""
        if lasso and i == start:
            cls.append("loop-start")
            mark = " ⟲ loop starts"
        if lasso and i == len(steps) - 1 and i != start:
            cls.append("loop-back")
            mark = f" ↩ back to step {_v(start)}"
        choices = assignments_text(s.get("choices") or {})
        cells = []
        for k in names:
            changed = prev is not None and (k not in prev or prev.get(k) != state.get(k))
            cells.append(f'<td class="val{" changed" if changed else ""}">{e(state.get(k))}</td>')
        w(f'<tr class="{" ".join(cls)}"><td class="step">{i}{e(mark)}</td>'
          f'<td class="action">{NEST * s.get("depth", 0)}{e(s.get("action") or "(initial)")}</td>'
          f'<td class="choices">{e(choices)}</td><td class="rule">{e(s.get("rule"))}</td>'
          + (f'<td class="odds">{e(([""] + odds)[i])}</td>' if odds is not None else "")
          + "".join(cells) + "</tr>")
        prev = state
    w("</table>")


def _scenarios(w: Writer, scenarios: list[dict[str, Any]]) -> None:
    if not scenarios:
        return
    bad = [s for s in scenarios if s.get("status") != "passed"]
    if not bad:
        w(f'<p class="scenarios">scenarios: {len(scenarios)} passed ('
          + ", ".join(e(s.get("name")) for s in scenarios) + ")</p>")
        return
    w('<table class="scenarios"><tr><th>scenario</th><th>status</th><th>message</th></tr>')
    for s in scenarios:
        key = "proved" if s.get("status") == "passed" else "violated"
        w(f'<tr><td class="mono">{e(s.get("name"))}</td><td class="status v-{key}">{e(s.get("status"))}</td>'
          f"<td>{e(s.get('message'))}</td></tr>")
    w("</table>")


def _coverage(w: Writer, run: dict[str, Any]) -> None:
    cov = run.get("coverage") or {}
    rules, terminals = cov.get("rules") or {}, cov.get("terminals") or {}
    lines = {r: line for table in ((run.get("source") or {}).get("rules") or {}).values()
             for r, line in table.items()}
    w('<h4>coverage</h4><div class="coverage">')
    if rules:
        w('<table class="rules"><tr><th>decide rule</th><th>fired</th><th>line</th></tr>')
        for name, count in rules.items():
            w(f'<tr><td class="mono">{e(name)}</td><td class="count{" zero" if not count else ""}">'
              f"{e(count)}</td><td>{e(lines.get(name))}</td></tr>")
        w("</table>")
    if terminals:
        w('<table class="terminals"><tr><th>terminal</th><th>states</th></tr>')
        for name, count in terminals.items():
            w(f'<tr><td class="mono">{e(name)}</td><td class="count{" zero" if not count else ""}">'
              f"{e(count)}</td></tr>")
        w("</table>")
    w("</div>")
    warnings = run.get("warnings") or []
    if warnings:
        w('<ul class="warnings">' + "".join(f"<li>warning: {e(x)}</li>" for x in warnings) + "</ul>")
    elif not run.get("stopped_by"):
        w('<p class="muted">no vacuity warnings: every decide rule fires, every terminal and action is reached</p>')


def _graph(w: Writer, n: int, graph: StateGraph | str, skipped: str | None, dot: str | None, open_: bool) -> None:
    if isinstance(graph, str):
        w(f'<p class="note graph-note">{e(graph)}</p>')
        return
    if skipped:
        w(f'<p class="note graph-note">{e(skipped)}</p>')
        return
    if not dot:
        w('<p class="note graph-note">state graph: not drawn (Graphviz <code>dot</code> is not '
          "installed; install Graphviz, e.g. <code>apt-get install graphviz</code>, to include it)</p>")
        return
    svg, note = graph_svg(to_dot(graph, replace(PAGE_VIEW, id_prefix=f"g{n}")), dot)
    if svg is None:
        w(f'<p class="note graph-note">{e(note)}</p>')
        return
    w(f'<details class="graph-box"{" open" if open_ else ""}><summary>state graph '
      f"({len(graph.states):,} states, {graph.transitions:,} transitions)</summary>")
    w('<p class="muted legend">bold border: initial · green, double border: terminal · red fill: deadlock '
      "or spec error · red outline: on a counterexample · hover a state or an edge for its values</p>")
    w(f'<div class="graph" id="graph-{n}">{svg}</div></details>')


def render(report: dict[str, Any]) -> str:
    """The registry's renderer: the page from the report dict alone (no graphs)."""
    return render_html(report)
