"""JUnit XML: `--format junit` and `--junit FILE`, for CI test-result views.

One `<testsuite>` per spec file and one `<testcase>` per params x property, named
`property[K=2,R=1]` with the machine name as classname. What each property result
becomes:

- holds: a pass;
- violated: `<failure>` with the counterexample as a text step table;
- violated, and the spec's `expect:` declares it: a pass, the finding and its trace in
  `<system-out>`;
- holds, but the spec's `expect:` declares a violation: `<failure>`;
- unknown because a bound was hit: `<error>` (an incomplete check proves nothing);
- unknown because the spec's own error (a `domains` violation, ...) cut the exploration
  short: `<skipped>` (that error is the finding);
- declared but not judged for these params (its `when:` is false, or `--property` left
  it out): `<skipped>`.

A spec's golden scenarios are test cases too (`scenario/NAME[params]`, a failure when the
run diverges). When the gate fails or is incomplete for a reason no test case shows (an
`expect:`ed property that was never judged), a `gate[params]` test case carries it, so
the JUnit counts never pass a run that the exit code fails.

The XML follows the schema Jenkins' xUnit plugin and pytest's `xunit2` use (junit-10.xsd):
only the attributes it allows, times with at most three decimals, no timestamp or host
(the file depends on nothing but the report). Testcase times are the run's exploration
time shared evenly among its test cases, so they add up to the suite's time.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from . import findings as F
from .text import outcome_lines

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    """Drop the characters XML 1.0 cannot carry at all (escaping is ElementTree's job)."""
    return _NOT_XML.sub("\ufffd", text)


def _time(seconds: float) -> str:
    return f"{max(seconds, 0.0):.3f}"


def _case_name(name: str, params: dict[str, Any]) -> str:
    label = F.params_label(params)
    return f"{name}[{label}]" if label else name


def _run_cases(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The test cases of one run, as plain dicts: name, kind (pass/failure/error/skipped),
    message, type, text (the element's body), out (system-out)."""
    params = run["params"]
    cases: list[dict[str, Any]] = []
    judged = set()
    for p in run["properties"]:
        judged.add(p["name"])
        kind = F.outcome(p, run)
        case: dict[str, Any] = {"name": _case_name(p["name"], params), "kind": "pass"}
        file, where = F.finding_location(run, p)
        at = f"{file}:{where}" if where else file
        if kind == F.FAIL:
            case["kind"] = "failure"
            if p["status"] == "violated":
                case["type"] = "violated"
                case["message"] = f"{p['name']} violated: {p['message']}"
            else:
                case["type"] = "expected violation missing"
                case["message"] = F.finding_text(p)
            body = [f"{at}  [{run['machine']}]  {F.params_text(params)}", F.finding_text(p)]
            if p.get("description"):
                body.append(p["description"])
            found = [part for part in (F.trace_text(p), F.answers_text(p)) if part]
            if found:               # the counterexample, and what a violated probability adds
                body += ["", *found]
            case["text"] = "\n".join(body) + "\n"
        elif kind == F.ERROR:
            case["kind"] = "error"
            case["type"] = "incomplete"
            case["message"] = f"{p['name']} unknown: {F.proves_nothing_text(run)}"
            case["text"] = f"{at}  [{run['machine']}]  {F.params_text(params)}\n{p['message']}\n"
        elif kind == F.UNDECIDED:
            case["kind"] = "skipped"
            case["message"] = f"{p['name']} {p['status']}: {p['message']}"
        elif p.get("fairness") and p["status"] == "holds":    # the proof relies on them: say so
            case["out"] = f"{at}  [{run['machine']}]  {F.params_text(params)}\n{F.fairness_text(p)}\n"
        elif kind == F.EXPECTED:
            lines = [f"{at}  [{run['machine']}]  {F.params_text(params)}", F.finding_text(p)]
            found = [part for part in (F.trace_text(p), F.answers_text(p)) if part]
            if found:
                lines += ["", *found]
            case["out"] = "\n".join(lines) + "\n"
        cases.append(case)
    declared = ((run.get("source") or {}).get("properties") or {})
    for name in declared:
        if name not in judged:
            cases.append({"name": _case_name(name, params), "kind": "skipped",
                          "message": "not judged for these params (its when: does not hold, "
                                     "or --property left it out)"})
    for sc in run.get("scenarios", []):
        case = {"name": _case_name(f"scenario/{sc['name']}", params), "kind": "pass"}
        if sc["status"] != "passed":
            line = F.scenario_line(run, sc["name"])
            at = f"{F.spec_file(run)}:{line}" if line else F.spec_file(run)
            case.update(kind="failure", type="scenario failed",
                        message=f"scenario {sc['name']}: {sc['message']}",
                        text=f"{at}  [{run['machine']}]  {F.params_text(params)}\n"
                             f"scenario {sc['name']} failed after {sc.get('steps', 0)} steps: "
                             f"{sc['message']}\n")
        cases.append(case)
    verdict = F.run_verdict(run)
    kinds = {c["kind"] for c in cases}
    if verdict == "fail" and "failure" not in kinds:
        unjudged = [n for n in declared if n not in judged]
        why = f" (not judged for these params: {', '.join(unjudged)})" if unjudged else ""
        cases.append({"name": _case_name("gate", params), "kind": "failure", "type": "not as expected",
                      "message": f"the run is {F.not_as_expected_text(run)}{why}",
                      "text": f"{F.spec_file(run)}  [{run['machine']}]  {F.params_text(params)}\n"})
    elif verdict == "incomplete" and not kinds & {"failure", "error"}:
        cases.append({"name": _case_name("gate", params), "kind": "error", "type": "incomplete",
                      "message": F.proves_nothing_text(run)})
    return cases


def _suite_of(runs: list[dict[str, Any]]) -> ET.Element:
    file = F.spec_file(runs[0])
    suite = ET.Element("testsuite")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    elements = []
    for run in runs:
        cases = _run_cases(run)
        run_seconds = float(run["stats"].get("seconds") or 0.0)
        seconds += run_seconds
        share = run_seconds / len(cases) if cases else 0.0
        for c in cases:
            tc = ET.Element("testcase", {"name": _clean(c["name"]), "classname": _clean(run["machine"]),
                                         "time": _time(share)})
            totals["tests"] += 1
            if c["kind"] in ("failure", "error"):
                totals["failures" if c["kind"] == "failure" else "errors"] += 1
                el = ET.SubElement(tc, c["kind"], {"message": _clean(c["message"]), "type": c["type"]})
                if c.get("text"):
                    el.text = _clean(c["text"])
            elif c["kind"] == "skipped":
                totals["skipped"] += 1
                ET.SubElement(tc, "skipped", {"message": _clean(c["message"])})
            if c.get("out"):
                ET.SubElement(tc, "system-out").text = _clean(c["out"])
            elements.append(tc)
    suite.attrib.update({"name": _clean(file), "tests": str(totals["tests"]),
                         "failures": str(totals["failures"]), "errors": str(totals["errors"]),
                         "skipped": str(totals["skipped"]), "time": _time(seconds), "file": _clean(file)})
    props = ET.SubElement(suite, "properties")
    machines = sorted({r["machine"] for r in runs})
    for name, value in (("machine", ", ".join(machines)), ("runs", str(len(runs))),
                        ("result", _suite_result(runs))):
        ET.SubElement(props, "property", {"name": name, "value": _clean(value)})
    suite.extend(elements)
    tables = [f"{run['machine']}  {F.params_text(run['params'])}\n" + "\n".join(outcome_lines(run["outcomes"]))
              for run in runs if run.get("outcomes")]
    if tables:                  # a weighted spec's outcome tables: how its runs end, and how likely
        ET.SubElement(suite, "system-out").text = _clean("\n".join(tables) + "\n")
    return suite


def _suite_result(runs: list[dict[str, Any]]) -> str:
    verdicts = {F.run_verdict(r) for r in runs}
    return "fail" if "fail" in verdicts else "incomplete" if "incomplete" in verdicts else "pass"


def render_junit(report: dict[str, Any]) -> str:
    by_spec: dict[str, list[dict[str, Any]]] = {}
    for run in report["runs"]:
        by_spec.setdefault(F.spec_file(run), []).append(run)
    root = ET.Element("testsuites", {"name": "haltproof"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for runs in by_spec.values():
        suite = _suite_of(runs)
        for k in totals:
            totals[k] += int(suite.attrib[k])
        seconds += float(suite.attrib["time"])
        root.append(suite)
    # junit-10.xsd allows no `skipped` on <testsuites>; each <testsuite> carries its own.
    root.attrib.update({k: str(v) for k, v in totals.items() if k != "skipped"})
    root.set("time", _time(seconds))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
