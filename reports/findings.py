"""Reading a `haltproof-report/1` dict the way the CI formats need it.

JUnit, SARIF, GitHub annotations and the Markdown summary all ask the same questions of
the report: what does this property result mean for the gate, where in the spec is this
step, how does this trace read as a table. They are answered here, from the report dict
alone (never from a RunResult), so every format agrees and none re-runs a check.
"""

from __future__ import annotations

from typing import Any

from haltproof.explorer.options import BOUND_OPTION
from haltproof.explorer.results import judge, unsettled
from haltproof.explorer.chances import number
from haltproof.machine.text import assignments_text, counted, fraction_from_json, trace_table, value_text

# What one property result means for the gate.
PASS = "pass"            # holds (and was meant to)
EXPECTED = "expected"    # violated, and the spec's `expect:` says it must be: a pass with a finding
FAIL = "fail"            # violated unexpectedly, or an expected violation did not happen
ERROR = "error"          # unknown, and nothing found explains it: a bound (--max-states, --timeout,
                         # --max-memory) stopped the exploration, or the property could not be decided
UNDECIDED = "undecided"  # unknown because the spec's own error cut the exploration short: that
                         # error is the finding; this property is simply not decided


def outcome(prop: dict[str, Any], run: dict[str, Any] | None = None) -> str:
    status, expected = prop.get("status"), prop.get("expected")
    if status == "unknown":
        return ERROR if run is None or unsettled(_kinds(run), run.get("stopped_by")) else UNDECIDED
    if status == "violated":
        return EXPECTED if expected is True else FAIL
    return FAIL if expected is False else PASS


def run_verdict(run: dict[str, Any]) -> str:
    """pass | fail | incomplete, as the gate judges the run: by check.judge, as RunResult.verdict."""
    props = [(p.get("kind"), p.get("status"), p.get("expected")) for p in run.get("properties") or []]
    return judge(props, [s.get("status") == "passed" for s in run.get("scenarios") or []],
                 run.get("stopped_by"), run.get("as_expected"))[1]


def _kinds(run: dict[str, Any]) -> list[tuple[str, str]]:
    """Each property's (kind, status), as check.unsettled reads them."""
    return [(p.get("kind"), p.get("status")) for p in run.get("properties") or []]


def run_result_text(run: dict[str, Any]) -> str:
    """The run's result in words, as the gate judges it (run_verdict): against its `expect:`,
    "violated as expected" when it passes and "<result>, NOT as expected" when it fails;
    an incomplete run is "incomplete" whatever it expects (nothing says it is not as expected)."""
    if run.get("as_expected") is None:
        return str(run["result"])
    verdict = run_verdict(run)
    if verdict == "pass":
        return "violated as expected"
    if verdict == "fail":
        return f"{run['result']}, NOT as expected"
    return "incomplete"


def run_result_stop_text(run: dict[str, Any]) -> str:
    """run_result_text, with the bound that stopped the run: `incomplete (stopped at --timeout)`."""
    word = run_result_text(run)
    return f"{word} (stopped at {stop_text(run)})" if run.get("stopped_by") else word


_STATUS_WORD = {"holds": "holds", "violated": "VIOLATED", "unknown": "unknown"}


def status_text(prop: dict[str, Any]) -> str:
    """A property's status as the text and HTML reports word it, against the spec's `expect:`:
    `holds`, `VIOLATED`, `unknown`, `violated as expected`, `holds (NOT as expected)`."""
    status = prop.get("status", "unknown")
    if prop.get("expected") is True and status == "violated":
        return "violated as expected"
    word = _STATUS_WORD.get(status, str(status))
    return f"{word} (NOT as expected)" if prop.get("expected") is False else word


def params_label(params: dict[str, Any]) -> str:
    """`K=2,R=1`: the params as a compact, stable label (empty when there are none)."""
    return assignments_text(params, ",")


def params_text(params: dict[str, Any]) -> str:
    """`K=2 R=1`, or `(no params)`: the params as the text formats head a run."""
    return assignments_text(params) or "(no params)"


def likeliest_lines(run: dict[str, Any]) -> list[str]:
    """The most probable run to a violated probability's bad outcome: its probability, then
    its trace with each step's probability (a step of probability 1 left blank)."""
    odds = ["" if x == "1" else number(fraction_from_json(x)) for x in run["odds"]]
    return [f"most probable {run['goal'].removeprefix('a ')} under the witness policy: "
            f"probability {number(fraction_from_json(run['probability']))}",
            *["  " + row for row in trace_table(run["trace"], odds)]]


def decide_lines(table: dict[str, Any]) -> list[str]:
    """The witness policy as a decide table: a row per group of states -> the decision there."""
    if not table["rows"]:
        return [f"witness policy as a decide table: {table['message']}"]
    count = table["states"]
    lines = [f"witness policy as a decide table ({count:,} state{'s' if count != 1 else ''} where the choice matters):"]
    lines += [f"  {when_text(row['when'])} -> {decision_text(row)}" for row in table["rows"]]
    return lines


SENSITIVITY_SHOWN = 5     # weights the text lists, the largest moves first (JSON has them all)


def sensitivity_lines(sens: dict[str, Any]) -> list[str]:
    """How much a probability moves with each weight, the largest first (its sign says
    which way; a weight it does not move with is counted, not listed), or why that is not
    computed."""
    if "message" in sens:
        return [f"sensitivity to the weights: {sens['message']}"]
    rows = [row for row in sens["weights"] if row["derivative"] != "0"]
    zeros = len(sens["weights"]) - len(rows)
    if not rows:
        return ["sensitivity to the weights: no weight moves it (under the witness policy, every derivative is 0)"]
    lines = ["the answer moves most with (dP/d eps as eps of a choice's weight moves to one value, "
             "witness policy fixed):"]
    lines += [f"  {sensitivity_row(row)}" for row in rows[:SENSITIVITY_SHOWN]]
    notes = [f"{len(rows) - SENSITIVITY_SHOWN} more in the JSON report"] if len(rows) > SENSITIVITY_SHOWN else []
    notes += [f"{zeros} of derivative 0 not listed"] if zeros else []
    if notes:
        lines.append(f"  ({'; '.join(notes)})")
    return lines


def sensitivity_row(row: dict[str, Any]) -> str:
    """`step obs=ok (weight 1/2 (0.5)): +3/4 (0.75)`."""
    slope = fraction_from_json(row["derivative"])
    sign = "+" if slope > 0 else "-" if slope < 0 else ""
    return (f"{row['action']} {row['choice']}={value_text(row['toward'])} "
            f"(weight {number(fraction_from_json(row['weight']))}): {sign}{number(abs(slope))}")


def when_text(when: dict[str, list[Any]]) -> str:
    """A decide-table row's condition: `steps=0..2, decision=going` (`any state` for none)."""
    parts = []
    for name, values in when.items():
        ints = all(type(v) is int for v in values)
        if len(values) == 1:
            parts.append(f"{name}={value_text(values[0])}")
        elif ints and len(values) > 2 and values[-1] - values[0] == len(values) - 1:
            parts.append(f"{name}={values[0]}..{values[-1]}")
        else:
            parts.append(f"{name} in {{{', '.join(map(value_text, values))}}}")
    return ", ".join(parts) or "any state"


def decision_text(d: dict[str, Any]) -> str:
    """A policy's decision: `step tool=guess`."""
    return " ".join([d["action"], assignments_text(d["choices"])]).rstrip()


def answers_text(prop: dict[str, Any]) -> str:
    """A violated probability's most probable run and its witness policy's decide table, as
    the text report shows them (empty for any other result)."""
    lines: list[str] = []
    if prop.get("most_probable_run"):
        lines += likeliest_lines(prop["most_probable_run"])
    if prop.get("decide_table"):
        lines += decide_lines(prop["decide_table"])
    if prop.get("sensitivity"):
        lines += sensitivity_lines(prop["sensitivity"])
    return "\n".join(lines)


def trace_text(prop: dict[str, Any]) -> str:
    """The counterexample(s) of a property result as text (empty when it has none)."""
    lines: list[str] = []
    if prop.get("trace"):
        lines.extend(trace_table(prop["trace"]))
    if prop.get("other_trace"):
        lines.append("... while this run, equal up to the ignored vars, does differently:")
        lines.extend(trace_table(prop["other_trace"]))
    return "\n".join(lines)


def finding_text(prop: dict[str, Any]) -> str:
    """One line saying what happened to a property, in gate terms."""
    kind = outcome(prop, {"stopped_by": "?"})
    if kind == FAIL and prop["status"] != "violated":
        return (f"{prop['name']} was expected to be violated (the spec's expect:) but "
                f"{prop['status']}: {prop['message']}")
    if kind == EXPECTED:
        return f"{prop['name']} violated as expected: {prop['message']}"
    return f"{prop['name']} {prop['status']}: {prop['message']}"


def incomplete_text(run: dict[str, Any]) -> str:
    """Why an incomplete run proves nothing: the bound that stopped it, with how far it got,
    or (explored in full) its stop_reason, which names the properties left undecided."""
    if run.get("stopped_after_exploration"):
        return (f"the analyses after the exploration stopped at {stop_text(run)} (all "
                f"{run['stats']['states']:,} states explored)")
    if run.get("stopped_by"):
        return f"the exploration stopped at {stop_text(run)} after {run['stats']['states']:,} states"
    return run.get("stop_reason") or "a property could not be decided"


def proves_nothing_text(run: dict[str, Any]) -> str:
    """The finding of an incomplete run, as every format words it."""
    return f"{incomplete_text(run)}; it proves nothing"


NOT_AS_EXPECTED = "its findings are not exactly the ones the spec's expect: declares"


def not_as_expected_text(run: dict[str, Any]) -> str:
    """The finding of a run that fails against its `expect:`: `proved, NOT as expected: its findings ...`."""
    return f"{run_result_text(run)}: {NOT_AS_EXPECTED}"


def stop_text(run: dict[str, Any]) -> str:
    """The option whose bound stopped the run ("--max-memory"), or "" when none did."""
    by = run.get("stopped_by")
    if not by:
        return ""
    return BOUND_OPTION.get(by, str(by))


# ---------------------------------------------------------------- where things are

def spec_file(run: dict[str, Any]) -> str:
    return str((run.get("source") or {}).get("file") or run["spec"])


def property_line(run: dict[str, Any], prop: dict[str, Any]) -> int | None:
    line = prop.get("line")
    if line is None:
        line = ((run.get("source") or {}).get("properties") or {}).get(prop["name"])
    return line


def action_line(run: dict[str, Any], action: str | None) -> int | None:
    if not action:
        return None
    return ((run.get("source") or {}).get("actions") or {}).get(action)


def rule_line(run: dict[str, Any], action: str | None, rule: str | None) -> int | None:
    if not action or not rule:
        return None
    return (((run.get("source") or {}).get("rules") or {}).get(action) or {}).get(rule)


def initial_line(run: dict[str, Any]) -> int | None:
    """Where the initial state is declared: the first var's line."""
    lines = [n for n in ((run.get("source") or {}).get("vars") or {}).values() if n]
    return min(lines) if lines else None


def step_line(run: dict[str, Any], step: dict[str, Any]) -> int | None:
    """The spec line a trace step points at: the decide rule that fired, else its action,
    else (the initial state) the vars."""
    return (rule_line(run, step.get("action"), step.get("rule"))
            or action_line(run, step.get("action"))
            or (initial_line(run) if not step.get("action") else None))


def finding_line(run: dict[str, Any], prop: dict[str, Any]) -> int | None:
    """Where a property finding is shown: the property's line; for the built-ins (which
    are not declared in the spec), the transition that broke them."""
    line = property_line(run, prop)
    if line is None and prop.get("trace"):
        last = prop["trace"]["steps"][-1]
        line = rule_line(run, last.get("action"), last.get("rule")) or action_line(run, last.get("action"))
    return line


def _declared_file(run: dict[str, Any], kind: str, *names: str | None) -> str:
    """The file a declaration is in: `source.files` names those written elsewhere than the
    spec's file (a Python model's base class in another module), else the spec's file."""
    found: Any = ((run.get("source") or {}).get("files") or {}).get(kind) or {}
    for name in names:
        found = found.get(name) if isinstance(found, dict) else None
    return found if isinstance(found, str) else spec_file(run)


def step_location(run: dict[str, Any], step: dict[str, Any]) -> tuple[str, int | None]:
    """(file, line) of step_line: the rule's or action's own file, else the spec's."""
    action, rule = step.get("action"), step.get("rule")
    if rule_line(run, action, rule):
        return _declared_file(run, "rules", action, rule), rule_line(run, action, rule)
    if action_line(run, action):
        return _declared_file(run, "actions", action), action_line(run, action)
    return spec_file(run), step_line(run, step)


def finding_location(run: dict[str, Any], prop: dict[str, Any]) -> tuple[str, int | None]:
    """(file, line) of finding_line: a property may be declared in another file than the
    spec's (`file` on the property), as may the action a built-in's trace ends in."""
    line = finding_line(run, prop)
    if property_line(run, prop) is not None:
        return prop.get("file") or _declared_file(run, "properties", prop["name"]), line
    if line is not None:                # the transition a built-in's trace ends with
        return step_location(run, prop["trace"]["steps"][-1])[0], line
    return spec_file(run), None


def warning_file(run: dict[str, Any], warning: dict[str, Any]) -> str:
    """The file a warning's line is in: its own `file` when it has one, else the spec's."""
    return warning.get("file") or spec_file(run)


def scenario_line(run: dict[str, Any], name: str) -> int | None:
    return ((run.get("source") or {}).get("scenarios") or {}).get(name)


def warnings_with_lines(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's warnings as {message, line, ...}: `warning_details` when the report has
    it, else the bare messages without lines."""
    details: list[dict[str, Any]] | None = run.get("warning_details")
    if details is not None:
        return details
    return [{"message": w, "line": None, "kind": "other"} for w in run.get("warnings", [])]


def under_fairness(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's properties that hold only under the spec's fairness assumptions (their
    `fairness` key): every format names those assumptions, since the proof relies on them."""
    return [p for p in run.get("properties") or [] if p.get("status") == "holds" and p.get("fairness")]


def fairness_text(prop: dict[str, Any]) -> str:
    """`ends holds under fairness: strong call_tool when outcome == ok`."""
    return f"{prop['name']} holds under fairness: {', '.join(prop['fairness'])}"


def worst_cases(run: dict[str, Any]) -> list[tuple[str, str]]:
    """A run's `maximum` properties as (name, its value in words): what every format shows of
    them even when they hold (a maximum is an answer, not only a verdict)."""
    out = []
    for p in run["properties"]:
        m = p.get("maximum")
        if p["kind"] != "maximum" or m is None:
            continue
        value = str(m["value"]) if m["exact"] else f"at least {m['value']}"
        n = m["witness_transitions"]
        out.append((p["name"], f"{value} (a shortest witness takes {counted(n, 'transition')})"))
    return out


def possible_answers(run: dict[str, Any], alone: bool = False) -> list[tuple[dict[str, Any], str]]:
    """A run's `possible` properties as (property, its answer in words): what every format shows
    of them, since an answer is not a verdict (`limit_error possible, a shortest run takes 3
    transitions`); for a run checked `alone` (one configuration), how to find the smallest safe
    value of the property's `smallest_safe` param."""
    out = []
    for p in run["properties"]:
        if p["kind"] != "possible":
            continue
        if p.get("possible") is True:
            n = len(p["witness"]["steps"]) - 1 if p.get("witness") else None
            text = f"{p['name']} possible" + (f", a shortest run takes {counted(n, 'transition')}" if n is not None
                                               else "")
        elif p.get("possible") is False:
            text = f"{p['name']} impossible"
        else:
            text = f"{p['name']} undecided ({p['message'].removeprefix('not decided: ')})"
        param = p.get("smallest_safe")
        if alone and param is not None and param in run["params"] and p.get("possible") is not None:
            text += f" (one {param} checked: sweep it for the smallest safe value)"
        out.append((p, text))
    return out


def totals_text(report: dict[str, Any]) -> str:
    """`66 runs: 66 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved` (`1 run: ...`)."""
    c = counts(report["runs"])
    return (f"{counted(len(report['runs']), 'run')}: {c['proved']} proved, {c['as expected']} violated as expected, "
            f"{c['failed']} failed, {c['incomplete']} incomplete -> {report['result']}")


def counts(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Runs by gate meaning, as the text report's closing line counts them."""
    out = {"proved": 0, "as expected": 0, "failed": 0, "incomplete": 0}
    for r in runs:
        v = run_verdict(r)
        if v == "pass":
            out["as expected" if r.get("as_expected") else "proved"] += 1
        else:
            out["failed" if v == "fail" else "incomplete"] += 1
    return out
