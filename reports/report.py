"""The report model: one `haltproof-report/1` dict built from a check's RunResults.

It is the one input of every output format (reports/text.py, formats.py, ...), text
included; nothing here or there re-runs a check. Its keys are a contract: extend, never break.
Every text in it is `cleaned` once, here, so every format writes the same thing: a lone
surrogate as its escape `\\udc80`, a text past 10,000 characters cut (machine/text.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haltproof.machine.spec import CODE_BUILTINS, ParamValue, PropertyDecl, Spec, shown_path
from haltproof.machine.text import counted, encodable, report_text
from haltproof.properties.kinds import HOLDS, VIOLATED, PropertyResult

from haltproof.explorer.results import RunResult, RunVerdict

from .findings import run_verdict

SCHEMA = "haltproof-report/1"

EXIT_OK, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERNAL = 0, 1, 2, 3, 4


def version() -> str:
    from importlib import metadata      # about 50 ms to import; only reports that name the version need it
    try:
        return metadata.version("haltproof")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def overall(runs: list[RunResult]) -> tuple[RunVerdict, int]:
    """The gate's verdict and exit code: a failed run (1) beats an incomplete one (3) beats proved (0).
    No run at all proves nothing: incomplete, never "proved"."""
    if not runs:
        return "incomplete", EXIT_INCOMPLETE
    verdicts = {r.verdict for r in runs}
    if "fail" in verdicts:
        return "violated", EXIT_VIOLATED
    if "incomplete" in verdicts:
        return "incomplete", EXIT_INCOMPLETE
    return "proved", EXIT_OK


# ---------------------------------------------------------------- JSON

def to_json(runs: list[RunResult]) -> dict[str, Any]:
    result, code = overall(runs)
    report: dict[str, Any] = cleaned({"schema": SCHEMA, "tool": {"name": "haltproof", "version": version()},
                                      "result": result, "exit_code": code, "runs": [run_json(r) for r in runs],
                                      "sweeps": sweeps(runs)})
    return report


def cleaned(value: Any) -> Any:
    """`value` (plain JSON-shaped data) with every text as reports write it (`report_text`): the
    user's code and spec may hand any string to a report. Keys are only made encodable, never
    cut: two long names cut alike would become one key."""
    if isinstance(value, str):
        return report_text(value)
    if isinstance(value, dict):
        return {encodable(k) if isinstance(k, str) else k: cleaned(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [cleaned(v) for v in value]
        return tuple(items) if type(value) is tuple else items
    return value


def from_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The report of runs already in their JSON form (a check whose process was ended: what it
    had sent, cli/supervise.py), judged as `overall` judges RunResults; no sweep tables."""
    verdicts = {run_verdict(r) for r in runs}
    result, code = (("violated", EXIT_VIOLATED) if "fail" in verdicts
                    else ("incomplete", EXIT_INCOMPLETE) if "incomplete" in verdicts or not runs
                    else ("proved", EXIT_OK))
    report: dict[str, Any] = cleaned({"schema": SCHEMA, "tool": {"name": "haltproof", "version": version()},
                                      "result": result, "exit_code": code, "runs": runs, "sweeps": []})
    return report


def run_json(r: RunResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "spec": shown_path(r.spec_path), "machine": r.machine, "params": r.params,
        "explored": r.explored, "engine": r.engine,
        "result": r.result, "stats": r.stats,
        "properties": [_with_decl(_prop_json(p, r.params), r._spec) for p in r.properties],
        "coverage": r.coverage, "warnings": r.warnings,
        "scenarios": [{"name": s.name, "status": "passed" if s.ok else "failed",
                       "message": s.message, "steps": s.steps} for s in r.scenarios],
    }
    out["bounds"] = {name: {"value": b["value"], "exact": b["exact"], "message": b["message"],
                            "witness": b["witness"].to_json(r.params) if b["witness"] is not None else None}
                     for name, b in r.bounds.items()}
    if r.odds is not None:
        out["outcomes"] = r.odds
    out["source"] = _source(r)
    out["warning_details"] = [n.to_json() for n in r.notices]
    if r.stopped_by:
        out["stopped_by"] = r.stopped_by
    if r.stop_reason:
        out["stop_reason"] = r.stop_reason
    if r.stopped_after_exploration:       # explored in full: a bound stopped an analysis after it
        out["stopped_after_exploration"] = True
    if r.as_expected is not None:
        out["as_expected"] = r.as_expected
    if r.binding is not None:
        out["binding"] = r.binding
    if r.determinism is not None:
        out["determinism"] = r.determinism
    if r.representatives is not None:
        out["representatives"] = r.representatives
    if r._spec.bind and r.explored == "model":      # --model: say the code did not run, and what that leaves out
        out["code_not_run"] = {"bind": r._spec.bind,
                               "not_checked": [n for n in r._spec.builtins if n in CODE_BUILTINS],
                               "by": r.stages_by}
    return out


def _source(r: RunResult) -> dict[str, Any]:
    """Where things are declared in the spec file, so CI annotations can point at lines.
    `files` (only when some are) names the file of each declared elsewhere: a Python model's
    base class may be in another module than the subclass the spec's path is."""
    spec = r._spec
    rules = {a.name: {rule.name: rule.line for rule in a.decide.rules} for a in spec.actions if a.decide}
    out = {"file": shown_path(spec.path),
           "actions": {a.name: a.line for a in spec.actions},
           "rules": rules,
           "properties": {p.name: p.line for p in spec.properties},
           # a property monitor is no var of the user's; a sub-agent's is declared in its own file
           "vars": {v.name: v.line for v in spec.vars if v.monitor is None and v.file is None},
           "terminal": spec.terminal.line if spec.terminal is not None else None,
           "scenarios": {sc.name: sc.line for sc in spec.scenarios}}
    files = _elsewhere(spec)
    if files:
        out["files"] = files
    return out


def _elsewhere(spec: Any) -> dict[str, Any]:
    """The declarations written in another file than the spec's, by kind, with their file."""
    def shown(decls: list[Any]) -> dict[str, str]:
        return {d.name: shown_path(d.file) for d in decls if d.file}
    out: dict[str, Any] = {"actions": shown(spec.actions), "properties": shown(spec.properties),
                           "rules": {a.name: shown(a.decide.rules) for a in spec.actions
                                     if a.decide and shown(a.decide.rules)}}
    if spec.terminal is not None and spec.terminal.file:
        out["terminal"] = shown_path(spec.terminal.file)
    return {k: v for k, v in out.items() if v}


def _prop_json(p: PropertyResult, params: Mapping[str, ParamValue]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "kind": p.kind, "status": p.status, "message": p.message,
                           "trace": p.trace.to_json(params) if p.trace is not None else None}
    if p.line is not None:
        out["line"] = p.line
    if p.file is not None:
        out["file"] = shown_path(p.file)
    if p.description:
        out["description"] = p.description
    if p.other_trace is not None:
        out["other_trace"] = p.other_trace.to_json(params)
    if p.witness is not None:
        out["witness"] = p.witness.to_json(params)
    if p.value is not None:
        out.update(p.value)
    if p.policy is not None:
        out["policy"] = p.policy
    if p.likeliest is not None:
        out["most_probable_run"] = p.likeliest.to_json(params)
    if p.decide_table is not None:
        out["decide_table"] = p.decide_table
    if p.sensitivity is not None:
        out["sensitivity"] = p.sensitivity
    if p.fairness is not None:
        out["fairness"] = p.fairness
    if p.expected is not None:
        out["expected"] = p.expected
    return out


def _with_decl(out: dict[str, Any], spec: Spec) -> dict[str, Any]:
    """A property's result with what its declaration adds for readers: its `smallest_safe` param."""
    decl = next((d for d in spec.properties if d.name == out["name"]), None)
    if decl is not None and decl.smallest_safe:
        out["smallest_safe"] = decl.smallest_safe
    return out


_VERDICT_WORD = {"pass": "proved", "fail": "FAILED", "incomplete": "incomplete"}


def _cell_word(r: RunResult) -> str:
    return "as expected" if r.as_expected else _VERDICT_WORD[r.verdict]


def sweeps(runs: list[RunResult]) -> list[dict[str, Any]]:
    """Per spec with several runs: its verdict per params, and where each violated property
    first fails (the smallest params, in the order the spec declares them)."""
    by_spec: dict[str, list[RunResult]] = {}
    for r in runs:
        by_spec.setdefault(shown_path(r.spec_path), []).append(r)
    out = []
    for path, group in by_spec.items():
        if len(group) < 2:
            continue
        first: dict[str, dict[str, Any]] = {}
        for r in sorted(group, key=lambda r: tuple(r.params.values())):
            for p in r.properties:
                if p.status == VIOLATED and p.name not in first:
                    first[p.name] = {"params": r.params, "expected": bool(p.expected)}
        entry: dict[str, Any] = {"spec": path, "params": list(group[0].params),
                                 "runs": [{"params": r.params, "verdict": _cell_word(r)} for r in group],
                                 "first_failures": first}
        safe = [row for decl in group[0]._spec.properties if decl.smallest_safe
                for row in smallest_safe(decl, group)]
        if safe:
            entry["smallest_safe"] = safe
        allows = [row for decl in group[0]._spec.properties if decl.kind == "maximum" and decl.limit
                  for row in limit_allows(decl, group)]
        if allows:
            entry["limit_allows"] = allows
        out.append(entry)
    return out


def _safe(p: PropertyResult) -> bool | None:
    """Whether a property's result is its safe side: a `reachable` or `possible` one is safe
    where nothing reaches it, any other where it holds; None where it was not decided."""
    if p.kind == "reachable":
        return {VIOLATED: True, HOLDS: False}.get(p.status)
    if p.kind == "possible":
        return None if p.value is None else not p.value["possible"]
    return {HOLDS: True, VIOLATED: False}.get(p.status)


def smallest_safe(decl: PropertyDecl, group: list[RunResult]) -> list[dict[str, Any]]:
    """Per combination of the other params: the smallest swept value of the property's
    `smallest_safe` param from which it is safe at every larger swept value (None when it is
    not safe at the largest), with the values where it was unsafe or undecided."""
    param = decl.smallest_safe
    assert param is not None, "only asked for properties that declare it"
    meaning = "unreachable" if decl.kind == "reachable" else "holds"
    rows: dict[tuple[tuple[str, Any], ...], list[tuple[int, bool | None]]] = {}
    why: dict[tuple[tuple[str, Any], ...], dict[int, str]] = {}
    for r in group:
        found = [p for p in r.properties if p.name == decl.name]
        if not found:           # not judged here (its `when`, or --property): no claim either way
            continue
        others = tuple((k, v) for k, v in r.params.items() if k != param)
        rows.setdefault(others, []).append((int(r.params[param]), _safe(found[0])))
        why.setdefault(others, {})[int(r.params[param])] = _undecided_because(r, found[0])
    out = []
    for others, values in rows.items():
        values.sort()
        start: int | None = None
        for value, safe in reversed(values):
            if safe is not True:
                break
            start = value
        swept = [v for v, _ in values]
        out.append({"property": decl.name, "param": param, "safe_means": meaning, "others": dict(others),
                    "value": start, "swept": swept,
                    "unsafe_at": [v for v, safe in values if safe is False],
                    "undecided_at": [v for v, safe in values if safe is None],
                    "message": _safe_text(decl.name, param, meaning, start, values, why[others])})
    return out


def _undecided_because(r: RunResult, p: PropertyResult) -> str:
    """Why a run left a property undecided, in words: the built-in finding that cut its
    exploration short (the user's code raised, say: its first line), else the bound that stopped it."""
    broken = next((b for b in r.properties if b.kind == "builtin" and b.status == VIOLATED), None)
    if broken is not None:
        return f"{broken.name}: {broken.message.partition(chr(10))[0]}"
    return r.stop_reason or p.message


def limit_allows(decl: PropertyDecl, group: list[RunResult]) -> list[dict[str, Any]]:
    """Per combination of the other params: what each swept value of a `maximum` property's
    `limit` param allows, its exact maximum there (None where it was not decided: never a guess)."""
    param = decl.limit
    assert param is not None, "only asked for maximum properties that declare a limit"
    rows: dict[tuple[tuple[str, Any], ...], list[tuple[int, int | None]]] = {}
    for r in group:
        found = [p for p in r.properties if p.name == decl.name]
        if not found:           # not judged here (its `when`, or --property): no claim either way
            continue
        others = tuple((k, v) for k, v in r.params.items() if k != param)
        rows.setdefault(others, []).append((int(r.params[param]), _exact_maximum(found[0])))
    out = []
    for others, values in rows.items():
        values.sort()
        out.append({"property": decl.name, "param": param, "of": decl.measure, "others": dict(others),
                    "limits": [v for v, _ in values], "maxima": [m for _, m in values],
                    "message": _allows_text(decl.measure, param, values)})
    return out


def _exact_maximum(p: PropertyResult) -> int | None:
    """A `maximum` result's value when it is exact, else None (an exploration that stopped early,
    or an expression that failed, knows no maximum)."""
    found = (p.value or {}).get("maximum")
    return found["value"] if found is not None and found["exact"] else None


def _allows_text(measure: str, param: str, values: list[tuple[int, int | None]]) -> str:
    """`max_turns = 1, 2, 3 allows at most 2, 4, 6 tool_runs`; `unknown` where not decided."""
    limits = ", ".join(str(v) for v, _ in values)
    maxima = ", ".join("unknown" if m is None else str(m) for _, m in values)
    text = f"{param} = {limits} allows at most {maxima} {measure}"
    unknown = [str(v) for v, m in values if m is None]
    if unknown:
        text += f" (not decided at {param} = {', '.join(unknown)})"
    return text


def _safe_text(name: str, param: str, meaning: str, start: int | None, values: list[tuple[int, bool | None]],
               why: dict[int, str]) -> str:
    """The smallest safe value in words: `can_hit_the_limit unreachable from recursion_limit=5 on`;
    where the largest swept value is undecided, that it is not known, and why (never "no safe value")."""
    lo, hi = values[0][0], values[-1][0]
    swept = f"{lo}..{hi}" if lo != hi else f"{lo} only"
    unsafe = {"holds": "violated", "unreachable": "reachable"}[meaning]
    if start is None:
        if all(safe is False for _, safe in values):
            return f"{name} {unsafe} at every swept {param} ({swept}): no safe value"
        if values[-1][1] is False:
            return f"{name} {unsafe} at {param}={hi}, the largest swept ({swept}): no safe value"
        undecided = [v for v, safe in values if safe is None]
        where = (f"at every swept {param} ({swept})" if len(undecided) == len(values)
                 else f"at {param}={hi}, the largest swept ({swept})")
        because = list(dict.fromkeys(why[v] for v in undecided))
        return (f"{name} undecided {where}, so the smallest safe value is not known: {because[0]}"
                + (f" (and {counted(len(because) - 1, 'other reason')})" if len(because) > 1 else ""))
    if start == lo:
        return f"{name} {meaning} at every swept {param} ({swept})"
    below, safe = max((v, safe) for v, safe in values if v < start)
    return (f"{name} {meaning} from {param}={start} on (swept {swept}; "
            f"{unsafe if safe is False else 'not decided'} at {param}={below})")
