"""GitHub Actions: `--format github` (workflow-command annotations) and `--format markdown`
(the job summary).

`--format github` prints one `::error` per violated property (grouped over the params of
a sweep: one annotation per spec and property, listing every params combination where
it fails, with the smallest counterexample's summary), per `expect:`ed violation that did
not happen, per failed golden scenario and per incomplete run; and one `::warning` per
vacuity warning (a decide rule that never fires, a terminal never reached, an action never
taken), also grouped over params. Violations the spec `expect:`s are the gate passing and
get no annotation. When `GITHUB_STEP_SUMMARY` is set the command line also appends the
Markdown summary to that file (see `append_step_summary`); the renderers themselves only
return text.

Escaping follows the runner's rules (actions/toolkit `command.ts`): in the message `%`,
CR and LF become `%25`, `%0D`, `%0A`; in property values also `:` and `,` become `%3A`
and `%2C`.

The Markdown summary: the verdict, a run table (spec, params, result, states,
transitions, depth), and for each violated property a step table and a Mermaid
`flowchart` of the counterexample (for a sweep, the first params combination in full and
the others listed), then the violations found as expected and the warnings.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from haltproof.machine import text as T

from . import findings as F
from .text import outcome_rows

Key = tuple[Any, ...]        # what groups annotations: the finding's kind, file, line and text
Params = dict[str, Any]     # a run's params, or (in `failing`) a run or property of the report

# ---------------------------------------------------------------- workflow commands


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **props: Any) -> str:
    """`::name k=v,k=v::message`, escaped; properties that are None are left out."""
    shown = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{name}{' ' + shown if shown else ''}::{escape_data(message)}"


def _group(items: list[tuple[Key, dict[str, Any], Any]]) -> list[tuple[Key, list[tuple[Params, Any]]]]:
    """Group (key, params, payload) by key, keeping first-seen order."""
    groups: dict[Key, list[tuple[Params, Any]]] = {}
    for key, params, payload in items:
        groups.setdefault(key, []).append((params, payload))
    return list(groups.items())


def _params_list(entries: list[tuple[Params, Any]], limit: int = 8) -> str:
    labels = [F.params_text(p) for p, _ in entries]
    shown = "; ".join(labels[:limit])
    if len(labels) > limit:
        shown += f"; and {len(labels) - limit} more"
    return shown


def _trace_summary(prop: dict[str, Any]) -> str:
    trace = prop.get("trace")
    if not trace or not trace.get("steps"):
        return ""
    path = []
    for st in trace["steps"][1:]:
        bit = st["action"] or "?"
        choices = T.assignments_text(st.get("choices") or {})
        if choices:
            bit += f"({choices})"
        if st.get("rule"):
            bit += f" -> {st['rule']}"
        path.append(bit)
    kind = "lasso" if trace.get("kind") == "lasso" else "shortest counterexample"
    tail = f", back to step {trace.get('loop_start')}" if trace.get("kind") == "lasso" else ""
    return f"{kind} ({len(trace['steps']) - 1} steps): " + "; ".join(path) + tail


def render_github(report: dict[str, Any]) -> str:
    errors: list[tuple[Key, Params, Any]] = []
    warnings: list[tuple[Key, Params, Any]] = []
    notices: list[tuple[Key, Params, Any]] = []      # proofs that rely on fairness assumptions
    lines: list[str] = []
    for run in report["runs"]:
        file = F.spec_file(run)
        failed_here = False
        for p in run["properties"]:
            if F.outcome(p, run) != F.FAIL:
                continue
            failed_here = True
            missing = p["status"] != "violated"
            errors.append((("prop", file, p["name"], missing), run["params"], (run, p)))
        for sc in run.get("scenarios", []):
            if sc["status"] != "passed":
                failed_here = True
                errors.append((("scenario", file, sc["name"]), run["params"], (run, sc)))
        verdict = F.run_verdict(run)
        if verdict == "fail" and not failed_here:
            errors.append((("expect", file), run["params"], (run, None)))
        if verdict == "incomplete":
            errors.append((("incomplete", file), run["params"], (run, None)))
        for p in F.under_fairness(run):
            notices.append((("fair", file, p["name"], tuple(p["fairness"])), run["params"], (run, p)))
        for w in F.warnings_with_lines(run):
            # grouped by what is dead; the why may differ between param combinations
            key = ("warning", F.warning_file(run, w), w.get("line"), w.get("summary") or w["message"])
            warnings.append((key, run["params"], w))
    for key, entries in _group(errors):
        run, item = entries[0][1]
        file = key[1]
        where = _params_list(entries)
        if key[0] == "prop":
            p = item
            if key[3]:
                title = f"haltproof: {p['name']} was expected to be violated"
                msg = f"{F.finding_text(p)}. Params: {where}."
            else:
                title = f"haltproof: {p['name']} violated"
                msg = f"{p['name']} ({p['kind']}): {p['message']}. Violated for {where}."
                summary = _trace_summary(p)
                if summary:
                    msg += f"\nAt {F.params_text(run['params'])}, {summary}."
            at, line = F.finding_location(run, p)
            lines.append(command("error", msg, file=at, line=line, title=title))
        elif key[0] == "scenario":
            sc = item
            lines.append(command("error", f"scenario {sc['name']} failed: {sc['message']}. Params: {where}.",
                                 file=file, line=F.scenario_line(run, sc["name"]),
                                 title=f"haltproof: scenario {sc['name']} failed"))
        elif key[0] == "expect":
            lines.append(command("error", f"{run['machine']}: {F.NOT_AS_EXPECTED}. Params: {where}.",
                                 file=file, title="haltproof: not as expected"))
        else:
            lines.append(command("error", f"{run['machine']}: {F.proves_nothing_text(run)}. Params: {where}.",
                                 file=file, title="haltproof: incomplete"))
    for key, entries in _group(warnings):
        _, file, line, message = key
        whole = {w["message"] for _, w in entries}
        if len(whole) == 1:
            message = whole.pop()
        lines.append(command("warning", f"{message} (params: {_params_list(entries)})",
                             file=file, line=line, title="haltproof: vacuous" if "vacuous" in message
                             else "haltproof: warning"))
    for _key, entries in _group(notices):
        run, p = entries[0][1]
        at, line = F.finding_location(run, p)
        lines.append(command("notice", f"{F.fairness_text(p)} (params: {_params_list(entries)})", file=at, line=line,
                             title="haltproof: proved under fairness"))
    lines.append(f"haltproof: {F.totals_text(report)}")
    return "\n".join(lines) + "\n"


def append_step_summary(report: dict[str, Any], environ: dict[str, str] | None = None) -> str | None:
    """Append the Markdown summary to $GITHUB_STEP_SUMMARY when it is set; returns the path
    written, or None. An OSError is the caller's to report."""
    env = os.environ if environ is None else environ
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with Path(target).open("a", encoding="utf-8") as fh:
        fh.write(render_markdown(report))
    return target


# ---------------------------------------------------------------- Markdown


def md_cell(text: Any) -> str:
    """Plain text for a Markdown table cell: on one line, HTML escaped, and the characters
    that would start emphasis, code, links or a new cell backslash-escaped."""
    s = html.escape(re.sub(r"[\r\n]+", " ", str(text)), quote=False)
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", s)


def md_code(text: Any) -> str:
    """Inline code in a table cell: a backtick fence longer than any run inside."""
    s = re.sub(r"[\r\n]+", " ", str(text)).replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def mermaid_text(text: Any) -> str:
    """A label safe inside a Mermaid node (`["..."]`) or edge (`|...|`) label: every
    character that is not an ASCII letter, digit, space or one of `_.=,` becomes a
    `#NNN;` entity code, so no quote, bracket, pipe, arrow or keyword can end it."""
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch in " _.=," else f"#{ord(ch)};"
                   for ch in str(text))


def mermaid_trace(trace: dict[str, Any]) -> list[str]:
    """A trace as a Mermaid flowchart: one node per state (step 0 lists every var, later
    ones what changed), one edge per transition labelled with action, choices and rule;
    a lasso's last edge goes back to the loop's first state. The state that breaks the
    property (the end of a path, the start of a lasso's cycle) has a red border."""
    steps = trace["steps"]
    last = len(steps) - 1
    lasso = trace.get("kind") == "lasso" and trace.get("loop_start") is not None and last > 0
    out = ["```mermaid", "flowchart TD"]
    for n in range(len(steps)):
        if lasso and n == last:
            continue          # the lasso's last state is the loop's first one again
        out.append(f'    s{n}["{mermaid_text(f"{n}: {T.changes(steps, n)}")}"]')
    for n in range(1, len(steps)):
        st = steps[n]
        bits = [st.get("action") or "?"]
        choices = T.assignments_text(st.get("choices") or {})
        if choices:
            bits.append(choices)
        if st.get("rule"):
            bits.append(f"rule {st['rule']}")
        target = trace["loop_start"] if lasso and n == last else n
        out.append(f"    s{n - 1} -->|{mermaid_text(' '.join(bits))}| s{target}")
    bad = trace["loop_start"] if lasso else last
    out.append(f"    style s{bad} stroke:#d00,stroke-width:3px")
    out.append("```")
    return out


def md_trace_table(trace: dict[str, Any]) -> list[str]:
    rows = ["| step | action | choices | rule | state (changes) |", "|---:|---|---|---|---|"]
    for row in T.step_rows(trace):
        rows.append("| " + " | ".join([row[0], md_code(row[1]) if row[1] != "(initial)" else "(initial)",
                                       md_code(row[2]) if row[2] else "", md_code(row[3]) if row[3] else "",
                                       md_code(row[4])]) + " |")
    return rows


def render_markdown(report: dict[str, Any]) -> str:
    runs = report["runs"]
    c = F.counts(runs)
    out = [f"## haltproof: {report['result']}", "",
           f"{T.counted(len(runs), 'run')}: {c['proved']} proved, {c['as expected']} violated as expected, "
           f"{c['failed']} failed, {c['incomplete']} incomplete (exit {report.get('exit_code', '?')}).", "",
           "| spec | params | result | states | transitions | depth |",
           "|---|---|---|---:|---:|---:|"]
    for run in runs:
        verdict = F.run_verdict(run)
        result = F.run_result_stop_text(run)
        mark = {"pass": "✅", "fail": "❌", "incomplete": "⚠️"}[verdict]
        s = run["stats"]
        out.append(f"| {md_code(F.spec_file(run))} | {md_cell(F.params_text(run['params']))} | "
                   f"{mark} {md_cell(result)} | {s['states']:,} | {s['transitions']:,} | {s['max_depth']} |")
    failing: dict[Key, list[tuple[Params, Params]]] = {}
    expected: list[tuple[Params, Params]] = []
    for run in runs:
        for p in run["properties"]:
            kind = F.outcome(p, run)
            if kind == F.FAIL:
                failing.setdefault((F.spec_file(run), p["name"]), []).append((run, p))
            elif kind == F.EXPECTED:
                expected.append((run, p))
    problems = [(run, sc) for run in runs for sc in run.get("scenarios", []) if sc["status"] != "passed"]
    if failing or problems:
        out += ["", "### Violations", ""]
    for (_file, name), entries in failing.items():
        run, p = entries[0]
        at, line = F.finding_location(run, p)
        out.append(f"#### `{name}` in {md_code(f'{at}:{line}' if line else at)}")
        out.append("")
        out.append(f"{md_cell(F.finding_text(p))} ({md_cell(p['kind'])})")
        if p.get("description"):
            out += ["", f"> {md_cell(p['description'])}"]
        out += ["", f"Params: {md_cell(F.params_text(run['params']))}"
                    + (f"; also at: {md_cell('; '.join(F.params_text(r['params']) for r, _ in entries[1:]))}"
                       if len(entries) > 1 else "")]
        for label, trace in (("counterexample", p.get("trace")), ("the run that does differently",
                                                                  p.get("other_trace"))):
            if not trace or not trace.get("steps"):
                continue
            kind = "lasso (a prefix, then a cycle)" if trace.get("kind") == "lasso" else "shortest path"
            n = len(trace["steps"]) - 1
            out += ["", f"{label.capitalize()}, {kind}, {T.counted(n, 'transition')}:", ""]
            out += md_trace_table(trace)
            out += [""] + mermaid_trace(trace)
        out.append("")
    for run, sc in problems:
        line = F.scenario_line(run, sc["name"])
        file = F.spec_file(run)
        out += [f"#### scenario `{sc['name']}` in {md_code(f'{file}:{line}' if line else file)}", "",
                f"{md_cell(sc['message'])} (params {md_cell(F.params_text(run['params']))})", ""]
    if expected:
        out += ["", "### Violated as expected", "",
                "Found exactly as the spec's `expect:` declares (the gate passes).", "",
                "| spec | params | property | message |", "|---|---|---|---|"]
        for run, p in expected:
            out.append(f"| {md_code(F.spec_file(run))} | {md_cell(F.params_text(run['params']))} | "
                       f"{md_code(p['name'])} | {md_cell(p['message'])} |")
    fair = [(run, p) for run in runs for p in F.under_fairness(run)]
    if fair:
        out += ["", "### Proved under fairness", "",
                "These hold only on the runs that honour the spec's `fairness:` assumptions.", "",
                "| spec | params | property | message |", "|---|---|---|---|"]
        for run, p in fair:
            out.append(f"| {md_code(F.spec_file(run))} | {md_cell(F.params_text(run['params']))} | "
                       f"{md_code(p['name'])} | {md_cell(p['message'])} |")
    worst = [(run, name, text) for run in runs for name, text in F.worst_cases(run)]
    if worst:
        out += ["", "### Worst cases", "", "The exact maximum of each `maximum:` property over every reachable state.",
                "", "| spec | params | property | maximum |", "|---|---|---|---|"]
        out += [f"| {md_code(F.spec_file(run))} | {md_cell(F.params_text(run['params']))} | {md_code(name)} | "
                f"{md_cell(text)} |" for run, name, text in worst]
    allows = [(sweep, row) for sweep in report.get("sweeps") or [] for row in sweep.get("limit_allows", [])]
    if allows:
        out += ["", "### What the limits allow", "",
                "Per `maximum:` property with a `limit:` param: its exact maximum at each swept value.", "",
                "| spec | other params | property | allows |", "|---|---|---|---|"]
        out += [f"| {md_code(sweep['spec'])} | {md_cell(F.params_text(row['others'])) if row['others'] else ''} | {md_code(row['property'])} | "
                f"{md_cell(row['message'])} |" for sweep, row in allows]
    weighted = [run for run in runs if run.get("outcomes")]
    if weighted:
        out += ["", "### Outcomes", "",
                "How runs end and what they cost on average, min..max over the policies "
                "(specs with `probabilities:`).", "",
                "| spec | params | outcome | probability or expected total |", "|---|---|---|---|"]
        for run in weighted:
            table = run["outcomes"]
            rows = [("outcomes", table["message"])] if "message" in table else outcome_rows(table)
            for what, span in rows:
                out.append(f"| {md_code(F.spec_file(run))} | {md_cell(F.params_text(run['params']))} | "
                           f"{md_cell(what)} | {md_cell(span)} |")
    warned: dict[Key, list[str]] = {}
    for run in runs:
        for w in F.warnings_with_lines(run):
            warned.setdefault((F.warning_file(run, w), w.get("line"), w["message"]), []).append(
                F.params_text(run["params"]))
    if warned:
        out += ["", "### Warnings", "", "| spec | line | warning | params |", "|---|---:|---|---|"]
        for (file, line, message), params in warned.items():
            out.append(f"| {md_code(file)} | {line or ''} | {md_cell(message)} | "
                       f"{md_cell('; '.join(params))} |")
    return "\n".join(out).rstrip("\n") + "\n"
