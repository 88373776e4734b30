"""The report: one `haltproof-report/1` result, rendered as JSON or as text for people.

Every output format is built from the same RunResult list; nothing here re-runs a check.
"""

from __future__ import annotations

from typing import Any

from haltproof.machine.spec import shown_path
from haltproof.properties.kinds import HOLDS, UNKNOWN, VIOLATED, PropertyResult, Trace

from haltproof.explorer.check import BOUND_OPTION, RunResult
from haltproof.explorer.outcomes import table_text

SCHEMA = "haltproof-report/1"

EXIT_OK, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERNAL = 0, 1, 2, 3, 4


def version() -> str:
    from importlib import metadata      # about 50 ms to import; only reports that name the version need it
    try:
        return metadata.version("haltproof")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def overall(runs: list[RunResult]) -> tuple[str, int]:
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
    return {"schema": SCHEMA, "tool": {"name": "haltproof", "version": version()},
            "result": result, "exit_code": code, "runs": [_run_json(r) for r in runs],
            "sweeps": sweeps(runs)}


def _run_json(r: RunResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "spec": shown_path(r.spec.path), "machine": r.spec.name, "params": r.params,
        "explored": r.explored, "engine": r.engine,
        "result": r.result, "stats": r.stats,
        "properties": [_prop_json(p, r.params) for p in r.properties],
        "coverage": r.coverage, "warnings": r.warnings,
        "scenarios": [{"name": s.name, "status": "passed" if s.ok else "failed",
                       "message": s.message, "steps": s.steps} for s in r.scenarios],
    }
    out["bounds"] = {name: {"value": b["value"], "exact": b["exact"], "message": b["message"],
                            "witness": b["witness"].to_json(r.params) if b["witness"] is not None else None}
                     for name, b in r.bounds.items()}
    if r.outcomes is not None:
        out["outcomes"] = r.outcomes
    out["source"] = _source(r)
    out["warning_details"] = [n.to_json() for n in r.notices]
    if r.stopped_by:
        out["stopped_by"] = r.stopped_by
    if r.stop_reason:
        out["stop_reason"] = r.stop_reason
    if r.as_expected is not None:
        out["as_expected"] = r.as_expected
    return out


def _source(r: RunResult) -> dict[str, Any]:
    """Where things are declared in the spec file, so CI annotations can point at lines.
    `files` (only when some are) names the file of each declared elsewhere: a Python model's
    base class may be in another module than the subclass the spec's path is."""
    spec = r.spec
    rules = {a.name: {rule.name: rule.line for rule in a.decide.rules} for a in spec.actions if a.decide}
    out = {"file": shown_path(spec.path),
           "actions": {a.name: a.line for a in spec.actions},
           "rules": rules,
           "properties": {p.name: p.line for p in spec.properties},
           "vars": {v.name: v.line for v in spec.vars},
           "terminal": spec.terminal.line if spec.terminal is not None else None,
           "scenarios": {sc.name: sc.line for sc in spec.scenarios}}
    files = _elsewhere(spec)
    if files:
        out["files"] = files
    return out


def _elsewhere(spec: Any) -> dict[str, Any]:
    """The declarations written in another file than the spec's, by kind, with their file."""
    def shown(decls: list) -> dict[str, str]:
        return {d.name: shown_path(d.file) for d in decls if d.file}
    out: dict[str, Any] = {"actions": shown(spec.actions), "properties": shown(spec.properties),
                           "rules": {a.name: shown(a.decide.rules) for a in spec.actions
                                     if a.decide and shown(a.decide.rules)}}
    if spec.terminal is not None and spec.terminal.file:
        out["terminal"] = shown_path(spec.terminal.file)
    return {k: v for k, v in out.items() if v}


def _prop_json(p: PropertyResult, params: dict[str, int]) -> dict[str, Any]:
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
    if p.expected is not None:
        out["expected"] = p.expected
    return out


# ---------------------------------------------------------------- text

def _v(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _params_text(params: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "(no params)"


def to_text(runs: list[RunResult], quiet: bool = False) -> str:
    lines: list[str] = []
    w = lines.append
    for r in ([] if quiet else runs):
        head = f"{shown_path(r.spec.path)}  [{r.spec.name}]  {_params_text(r.params)}"
        if r.explored != "model":
            head += f"  (checked the bound {r.explored})"
        w(head)
        s = r.stats
        verdict = r.result
        if r.as_expected is True:
            verdict = "violated as expected"
        elif r.as_expected is False:
            verdict = f"{r.result}, NOT as expected"
        stop = f" (stopped at {BOUND_OPTION[r.stopped_by]})" if r.stopped_by else ""
        w(f"  {verdict}{stop}: {s['states']:,} states, {s['transitions']:,} transitions, "
          f"{s['terminal_states']:,} terminal, depth {s['max_depth']}, {s['seconds']:.2f} s")
        if r.stop_reason:
            w(f"  {r.stop_reason}")
        width = max(len(p.name) for p in r.properties)
        for p in r.properties:
            status = {HOLDS: "holds", VIOLATED: "VIOLATED", UNKNOWN: "unknown"}[p.status]
            if p.expected is True and p.status == VIOLATED:
                status = "violated as expected"
            elif p.expected is False:
                status += " (NOT as expected)"
            w(f"  {status:<9} {p.name:<{width}}  {p.message}")
            if p.status == VIOLATED and p.trace is not None:
                lines.extend("      " + t for t in trace_table(p.trace))
                if p.other_trace is not None:
                    w("      ... while this run, equal up to the ignored vars, does differently:")
                    lines.extend("      " + t for t in trace_table(p.other_trace))
            if p.status == VIOLATED and p.policy:
                w("      witness policy: " + "; ".join(_decision_text(d) for d in p.policy))
        if r.bounds:
            w("  bounds: " + ", ".join(f"{name} {b['message']}" for name, b in r.bounds.items()))
        if r.outcomes is not None:
            lines.extend(table_text(r.outcomes))
        for sc in r.scenarios:
            if not sc.ok:
                w(f"  FAILED    scenario {sc.name}: {sc.message}")
        if r.scenarios and all(sc.ok for sc in r.scenarios):
            w(f"  scenarios: {len(r.scenarios)} passed ({', '.join(sc.name for sc in r.scenarios)})")
        for warning in r.warnings:
            w(f"  warning: {warning}")
        w("")
    if not quiet:
        for sweep in sweeps(runs):
            lines.extend(_sweep_text(sweep))
    result, code = overall(runs)
    counts = {"proved": 0, "as expected": 0, "violated": 0, "incomplete": 0}
    for r in runs:
        if r.verdict == "pass":
            counts["as expected" if r.as_expected else "proved"] += 1
        else:
            counts["violated" if r.verdict == "fail" else "incomplete"] += 1
    w(f"{len(runs)} runs: {counts['proved']} proved, {counts['as expected']} violated as expected, "
      f"{counts['violated']} failed, {counts['incomplete']} incomplete -> {result}")
    return "\n".join(lines) + "\n"


def _decision_text(d: dict[str, Any]) -> str:
    """A witness policy's decision in one state: `step tool=guess`."""
    return " ".join([d["action"], *(f"{k}={_v(v)}" for k, v in d["choices"].items())])


_VERDICT_WORD = {"pass": "proved", "fail": "FAILED", "incomplete": "incomplete"}


def _cell_word(r: RunResult) -> str:
    return "as expected" if r.as_expected else _VERDICT_WORD[r.verdict]


def sweeps(runs: list[RunResult]) -> list[dict[str, Any]]:
    """Per spec with several runs: its verdict per params, and where each violated property
    first fails (the smallest params, in the order the spec declares them)."""
    by_spec: dict[str, list[RunResult]] = {}
    for r in runs:
        by_spec.setdefault(shown_path(r.spec.path), []).append(r)
    out = []
    for path, group in by_spec.items():
        if len(group) < 2:
            continue
        first: dict[str, dict[str, Any]] = {}
        for r in sorted(group, key=lambda r: tuple(r.params.values())):
            for p in r.properties:
                if p.status == VIOLATED and p.name not in first:
                    first[p.name] = {"params": r.params, "expected": bool(p.expected)}
        out.append({"spec": path, "params": list(group[0].params),
                    "runs": [{"params": r.params, "verdict": _cell_word(r)} for r in group],
                    "first_failures": first})
    return out


def _sweep_text(sweep: dict[str, Any]) -> list[str]:
    names = sweep["params"]
    lines = [f"sweep of {sweep['spec']}:"]
    cells = {tuple(c["params"].values()): c["verdict"] for c in sweep["runs"]}
    if len(names) == 2:
        rows = sorted({k[0] for k in cells})
        cols = sorted({k[1] for k in cells})
        head = [f"{names[0]} \\ {names[1]}"] + [str(c) for c in cols]
        table = [head] + [[str(r)] + [cells.get((r, c), "-") for c in cols] for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        lines += ["  " + "  ".join(x.ljust(wd) for x, wd in zip(row, widths)).rstrip() for row in table]
    else:
        for c in sweep["runs"]:
            lines.append(f"  {_params_text(c['params'])}: {c['verdict']}")
    for name, info in sweep["first_failures"].items():
        note = " (as expected)" if info["expected"] else ""
        lines.append(f"  {name} first fails at {_params_text(info['params'])}{note}")
    lines.append("")
    return lines


def trace_table(trace: Trace) -> list[str]:
    """A counterexample as rows: step, action, choices, rule fired, the vars that changed."""
    rows = [("step", "action", "choices", "rule", "state (changes)")]
    prev: dict[str, Any] | None = None
    for n, st in enumerate(trace.steps):
        if prev is None:
            change = " ".join(f"{k}={_v(v)}" for k, v in st.state.items())
        else:
            change = " ".join(f"{k}={_v(v)}" for k, v in st.state.items() if prev.get(k) != v) or "(no change)"
        mark = ""
        if trace.kind == "lasso" and n == trace.loop_start:
            mark = "  <- loop starts"
        if trace.kind == "lasso" and n == len(trace.steps) - 1:
            mark = f"  -> back to step {trace.loop_start}"
        choices = " ".join(f"{k}={_v(v)}" for k, v in st.choices.items())
        rows.append((str(n), st.action or "(initial)", choices, st.rule or "", change + mark))
        prev = st.state
    widths = [max(len(row[c]) for row in rows) for c in range(4)]
    return ["  ".join(row[c].ljust(widths[c]) for c in range(4)) + "  " + row[4] for row in rows]
