"""SARIF 2.1.0: `--format sarif` and `--sarif FILE`, for code scanning (GitHub and others).

One SARIF run for the whole check. `tool.driver.rules` has one rule per property name
(its kind and description), plus `haltproof/scenario` and `haltproof/expect` when a
golden scenario fails or a run's findings are not the ones its `expect:` declares. Each
finding that fails the gate is a result at level `error`:

- a violated property, located at the property's line in the spec (a built-in property,
  which the spec does not declare, at the rule or action of the transition that broke
  it), with the counterexample as `codeFlows[0].threadFlows[0]`: one location per step,
  at the decide rule that fired (the action's line as an annotation), or at the action
  when no rule fired, or at the vars for the initial state; the step's state is the
  location's `state`, its action, choices, rule and changed vars its message. An
  independence violation's second run is `codeFlows[1]`;
- an `expect:`ed violation that did not happen, at the property's line;
- a failed golden scenario, at the scenario's line.

Decided: violations that a spec's `expect:` declares (the mutants) are NOT results.
They are the gate passing, not defects, and GitHub code scanning opens an alert for
every uploaded result whatever its level (it also ignores SARIF `suppressions`), so
a `note` would leave permanent open alerts for every mutant. They are counted and listed
in `runs[0].properties.expectedViolations` instead. Properties that are unknown because
a bound was hit are not results either (they prove nothing, and are no defect in the
spec): each incomplete run is a `toolExecutionNotifications` entry of the invocation.

Each result's `partialFingerprints["haltproof/v1"]` is a SHA-256 of the spec path as
given (relative; for a spec given by an absolute path, its file name), the rule, what
kind of finding it is and the params: never timestamps, counts, traces or absolute
paths, so the same finding matches across runs and code scanning deduplicates it. The
artifact URI is the spec path relative to the working directory with `uriBaseId`
`%SRCROOT%`: run `haltproof check` from the repository root.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from pathlib import PurePosixPath, PureWindowsPath, Path
from typing import Any
from urllib.parse import quote

from haltproof.properties.kinds import BUILTIN_TEXT, KIND_TEXT

from haltproof.machine import text as T

from . import findings as F

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT = "haltproof/v1"
SCENARIO_RULE = "haltproof/scenario"
EXPECT_RULE = "haltproof/expect"

def _is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def artifact_location(path: str) -> dict[str, Any]:
    """A spec path as a SARIF artifactLocation: relative to %SRCROOT%, or a file: URI."""
    if _is_absolute(path):
        return {"uri": Path(path).as_uri()}
    rel = posixpath.normpath(path.replace("\\", "/"))
    return {"uri": quote(rel, safe="/"), "uriBaseId": "%SRCROOT%"}


def _stable_path(path: str) -> str:
    if _is_absolute(path):
        return PurePosixPath(path.replace("\\", "/")).name
    return posixpath.normpath(path.replace("\\", "/"))


def fingerprint(spec: str, rule: str, finding: str, params: dict[str, Any]) -> str:
    key = json.dumps([_stable_path(spec), rule, finding, sorted(params.items())],
                     ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _physical(file: str, line: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactLocation": artifact_location(file)}
    if line:
        out["region"] = {"startLine": int(line)}
    return out


def _step_message(trace: dict[str, Any], n: int) -> str:
    step = trace["steps"][n]
    if n == 0:
        head = "step 0: initial state"
    else:
        head = f"step {n}: {step['action']}"
        choices = T.assignments_text(step.get("choices") or {})
        if choices:
            head += f" {choices}"
        if step.get("rule"):
            head += f", rule {step['rule']}"
    text = f"{head}; {T.changes(trace['steps'], n)}"
    mark = T.loop_mark(trace, n)
    return f"{text} ({mark})" if mark else text


def _thread_flow(run: dict[str, Any], trace: dict[str, Any]) -> dict[str, Any]:
    locations = []
    for n, step in enumerate(trace["steps"]):
        loc: dict[str, Any] = {"physicalLocation": _physical(*F.step_location(run, step)),
                               "message": {"text": _step_message(trace, n)}}
        action_line = F.action_line(run, step.get("action"))
        if step.get("rule") and action_line and F.rule_line(run, step.get("action"), step.get("rule")):
            loc["annotations"] = [{"startLine": action_line,
                                   "message": {"text": f"action {step['action']}"}}]
        locations.append({
            "location": loc,
            "state": {k: {"text": T.value_text(v)} for k, v in step["state"].items()},
            "executionOrder": n,
            "nestingLevel": 0,
        })
    return {"locations": locations}


def _chances(prop: dict[str, Any]) -> dict[str, Any]:
    """What a `probability` or `expected` result adds to its SARIF properties: its value (the
    report's keys: `value`, `exact` or `interval`), and when violated its most probable run's
    probability and its witness policy's decide table."""
    out: dict[str, Any] = {key: prop[key] for key in ("value", "exact", "interval") if key in prop}
    if prop.get("most_probable_run"):
        found = prop["most_probable_run"]
        out["mostProbableRun"] = {"goal": found["goal"], "probability": found["probability"], "odds": found["odds"]}
    if prop.get("decide_table"):
        out["decideTable"] = prop["decide_table"]
    return out


def _code_flows(run: dict[str, Any], prop: dict[str, Any]) -> list[dict[str, Any]]:
    flows = []
    trace = prop.get("trace")
    if trace and trace.get("steps"):
        what = "a lasso: a prefix, then a cycle that never ends" if trace.get("kind") == "lasso" \
            else "the shortest counterexample"
        flows.append({"message": {"text": f"{prop['name']}: {what} "
                                          f"({len(trace['steps']) - 1} transitions)"},
                      "threadFlows": [_thread_flow(run, trace)]})
    run_ = prop.get("most_probable_run")
    if run_ and run_["trace"].get("steps"):
        flows.append({"message": {"text": f"{prop['name']}: the most probable "
                                          f"{run_['goal'].removeprefix('a ')} under the witness policy "
                                          f"({len(run_['trace']['steps']) - 1} transitions, probability "
                                          f"{run_['probability']})"},
                      "threadFlows": [_thread_flow(run, run_["trace"])]})
    other = prop.get("other_trace")
    if other and other.get("steps"):
        flows.append({"message": {"text": f"{prop['name']}: the run that, equal up to the ignored "
                                          f"vars, does differently"},
                      "threadFlows": [_thread_flow(run, other)]})
    return flows


class _Rules:
    def __init__(self) -> None:
        self.rules: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}

    def add(self, rule_id: str, kind: str, description: str | None) -> int:
        if rule_id in self.index:
            rule = self.rules[self.index[rule_id]]
            kinds = rule["properties"]["kinds"]
            if kind not in kinds:
                kinds.append(kind)
            if description and rule["properties"].get("described") is False:
                rule["shortDescription"] = {"text": description}
                rule["properties"]["described"] = True
            return self.index[rule_id]
        text = BUILTIN_TEXT.get(rule_id) if kind == "builtin" else KIND_TEXT.get(kind)
        short = description or text or rule_id
        full = f"{short} (haltproof property kind: {kind})"
        if description and text:
            full = f"{description}. Kind {kind}: {text}."
        self.index[rule_id] = len(self.rules)
        self.rules.append({
            "id": rule_id,
            "name": rule_id,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full},
            "defaultConfiguration": {"level": "error"},
            "help": {"text": f"{full} A violation comes with the shortest run that breaks it "
                             f"(codeFlows); replay it with `haltproof replay SPEC --trace`."},
            "properties": {"kind": kind, "kinds": [kind], "described": bool(description),
                           "tags": ["haltproof", kind], "precision": "very-high",
                           "problem.severity": "error"},
        })
        return self.index[rule_id]


def _result(rules: _Rules, rule_id: str, text: str, file: str, line: int | None,
            finding: str, run: dict[str, Any], extra: dict[str, Any], at: str | None = None) -> dict[str, Any]:
    """One result, fingerprinted by the spec's `file`, located at `at` (default: that file)."""
    return {
        "ruleId": rule_id,
        "ruleIndex": rules.index[rule_id],
        "kind": "fail",
        "level": "error",
        "message": {"text": text},
        "locations": [{"physicalLocation": _physical(at or file, line or 1)}],
        "partialFingerprints": {FINGERPRINT: fingerprint(file, rule_id, finding, run["params"])},
        "properties": {"machine": run["machine"], "params": run["params"], **extra},
    }


def render_sarif(report: dict[str, Any]) -> str:
    rules = _Rules()
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    fair: list[dict[str, Any]] = []
    outcomes: list[dict[str, Any]] = []      # a weighted spec's outcome table per run
    for run in report["runs"]:
        file = F.spec_file(run)
        where = f"{run['machine']} ({F.params_text(run['params'])})"
        if run.get("outcomes"):
            outcomes.append({"spec": file, "machine": run["machine"], "params": run["params"],
                             "outcomes": run["outcomes"]})
        failed_here = False
        for p in run["properties"]:
            rules.add(p["name"], p["kind"], p.get("description"))
            kind = F.outcome(p, run)
            if kind == F.EXPECTED:
                expected.append({"spec": file, "property": p["name"], "params": run["params"]})
            if kind != F.FAIL:
                continue
            failed_here = True
            at, line = F.finding_location(run, p)
            if p["status"] == "violated":
                trace = p.get("trace")
                steps = f" Shortest counterexample: {len(trace['steps']) - 1} transitions." \
                    if trace and trace.get("steps") else ""
                res = _result(rules, p["name"], f"{p['name']} is violated in {where}: {p['message']}.{steps}",
                              file, line, "violated", run, {"kind": p["kind"], "status": p["status"], **_chances(p)},
                              at)
                flows = _code_flows(run, p)
                if flows:
                    res["codeFlows"] = flows
            else:
                res = _result(rules, p["name"], f"{F.finding_text(p)} ({where})", file, line,
                              "expected-violation-missing", run,
                              {"kind": p["kind"], "status": p["status"], "expected": False}, at)
            results.append(res)
        for sc in run.get("scenarios", []):
            if sc["status"] == "passed":
                continue
            failed_here = True
            rules.add(SCENARIO_RULE, "scenario", "a golden scenario of the spec replays as written")
            results.append(_result(rules, SCENARIO_RULE,
                                   f"scenario {sc['name']} failed in {where}: {sc['message']}",
                                   file, F.scenario_line(run, sc["name"]), f"scenario:{sc['name']}", run,
                                   {"scenario": sc["name"]}))
        for p in F.under_fairness(run):       # a proof that relies on assumptions names them
            fair.append({"spec": file, "property": p["name"], "params": run["params"], "fairness": p["fairness"]})
            notifications.append({"level": "note", "message": {"text": f"{file} {where}: {F.fairness_text(p)}"},
                                  "locations": [{"physicalLocation": _physical(file, F.property_line(run, p))}]})
        verdict = F.run_verdict(run)
        if verdict == "fail" and not failed_here:
            rules.add(EXPECT_RULE, "expect", "a spec's findings are exactly the ones its expect: declares")
            results.append(_result(rules, EXPECT_RULE,
                                   f"{where} is {F.not_as_expected_text(run)}", file, None, "expect", run, {}))
        if run["result"] == "incomplete" or run.get("stopped_by"):
            unknown = sum(1 for p in run["properties"] if p["status"] == "unknown")
            notifications.append({
                "level": "error" if verdict == "incomplete" else "warning",
                "message": {"text": f"{file} {where}: incomplete, {F.incomplete_text(run)}; {unknown} "
                                    "properties unknown (it proves nothing)"},
                "locations": [{"physicalLocation": _physical(file, None)}],
            })
    for rule in rules.rules:
        rule["properties"].pop("described", None)
    tool_version = report.get("tool", {}).get("version", "0+unknown")
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "haltproof", "version": tool_version, "rules": rules.rules}},
            "invocations": [{"executionSuccessful": report.get("exit_code", 0) in (0, 1, 3),
                             "exitCode": report.get("exit_code", 0),
                             "toolExecutionNotifications": notifications}],
            "results": results,
            "properties": {"haltproofSchema": report.get("schema"), "result": report.get("result"),
                           "runs": len(report["runs"]), "expectedViolations": expected,
                           **({"outcomes": outcomes} if outcomes else {}),
                           **({"provedUnderFairness": fair} if fair else {})},
        }],
    }
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"
