"""The text report for people, rendered from the `haltproof-report/1` dict like every format.

Quiet by default, verdict first: one line per run (spec x params: its verdict, states,
time), then the findings in full (every property that did not hold as the spec says, with
its shortest trace; why an incomplete run proves nothing), then the totals. `verbose`
gives the full listing: every property, bound, scenario and warning of every run, and the
sweep tables. `quiet` leaves only the totals line. The words for verdicts come from
findings.py (which asks check.judge), never from a second computation here.
"""

from __future__ import annotations

from typing import Any

from haltproof.explorer.chances import number
from haltproof.machine.text import counted, fraction_from_json, trace_table

from . import findings as F


def render_text(report: dict[str, Any], verbose: bool = False, quiet: bool = False) -> str:
    """The report as text: the run lines, findings and totals (see the module's docstring)."""
    runs: list[dict[str, Any]] = report["runs"]
    lines: list[str] = []
    if not quiet and verbose:
        for run in runs:
            lines += _run_block(run, full=True) + [""]
        for sweep in report.get("sweeps") or []:
            lines += _sweep_text(sweep)
    elif not quiet:
        lines += _run_lines(runs)
        found = [run for run in runs if F.run_verdict(run) != "pass"]
        if found:
            lines += ["", "findings:", ""]
            for run, same in _same_findings(found):
                block = _run_block(run, full=False)
                if same:
                    block.insert(1, f"  the same findings in {counted(len(same), 'more run')}: {_params_list(same)}")
                lines += block + [""]
        else:
            lines.append("")
        lines += _declaration_warnings(runs)
        lines += _answer_lines(runs)
        lines += _worst_case_lines(runs)
        lines += _smallest_safe_lines(report.get("sweeps") or [])
        lines += _limit_allows_lines(report.get("sweeps") or [])
        lines += _hidden_warnings(runs)
    lines.append(F.totals_text(report))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- default: one line a run

def _run_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Each run on one line, the verdict first and aligned: `proved  spec [machine] K=1: ...`."""
    words = [F.run_result_stop_text(run) for run in runs]
    width = max(map(len, words), default=0)
    return [f"{word:<{width}}  {_run_line(run)}" for word, run in zip(words, runs)]


def _same_findings(runs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The runs with findings, each with the later runs of its spec whose findings are the same
    (an error of the user's code that every param combination meets): those are printed once,
    with a count, instead of once per run."""
    groups: dict[tuple[Any, ...], tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for run in runs:
        key = (run["spec"], F.run_result_stop_text(run), _findings_key(run))
        if key in groups:
            groups[key][1].append(run)
        else:
            groups[key] = (run, [])
    return list(groups.values())


def _params_list(runs: list[dict[str, Any]]) -> str:
    """Several runs' params in few words: `recursion_limit = 5, 6, 7` when only that param
    differs between them, else each run's `K=1 R=2`, `;`-separated."""
    names = list(runs[0]["params"])
    varying = [n for n in names if len({repr(r["params"].get(n)) for r in runs}) > 1]
    if len(runs) > 1 and len(varying) == 1 and all(list(r["params"]) == names for r in runs):
        fixed = {n: v for n, v in runs[0]["params"].items() if n != varying[0]}
        return ((F.params_text(fixed) + " ") if fixed else "") + f"{varying[0]} = " + ", ".join(
            str(r["params"][varying[0]]) for r in runs)
    return "; ".join(F.params_text(r["params"]) for r in runs)


def _findings_key(run: dict[str, Any]) -> tuple[Any, ...]:
    """What a run's findings say, without what differs between two meetings of the same error
    (a traceback's task ids, the params): each shown property's status and message (a built-in
    finding's first line: the error itself), and its trace."""
    shown = [p for p in run["properties"] if _is_finding(p)]
    return tuple((p["name"], p["status"], p["message"].partition("\n")[0] if p["kind"] == "builtin" else p["message"],
                  F.trace_text(p)) for p in shown)


def _declaration_warnings(runs: list[dict[str, Any]]) -> list[str]:
    """What a declaration's expansion warns about (a scripted outcome that changes what the
    user's code means), at the declaration's lines, once per spec: never hidden behind --verbose."""
    seen: dict[str, None] = {}
    for run in runs:
        for w in F.warnings_with_lines(run):
            if w.get("kind") == "declaration":
                seen[f"  {run['spec']}:{w['line']}: {w['message']}"] = None
    return ["warnings:", *seen, ""] if seen else []


def _answer_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The `possible` properties' answers (the limit error: possible or not), a line per run; for
    a check of one configuration, each possible one's shortest run with its steps."""
    lines = []
    said: dict[tuple[str, str], list[dict[str, Any]]] = {}     # runs of a spec with the same answers: one line
    for run in runs:
        answers = F.possible_answers(run, alone=len(runs) == 1)
        if answers:
            said.setdefault((run["spec"], "; ".join(text for _, text in answers)), []).append(run)
    for (spec, text), alike in said.items():
        where = F.params_text(alike[0]["params"]) if len(alike) == 1 else _params_list(alike)
        lines.append(f"  {spec} {where}: {text}")
        if len(runs) == 1:
            for p, _ in F.possible_answers(alike[0]):
                if p.get("witness"):
                    lines += [f"    {p['name']}, a shortest run:"]
                    lines += ["      " + row for row in trace_table(p["witness"])]
    return ["answers:", *lines, ""] if lines else []


def _worst_case_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The `maximum` properties' values, a line per run that has any (see findings.worst_cases)."""
    lines = [f"  {run['spec']} {F.params_text(run['params'])}: "
             + "; ".join(f"{name} {text}" for name, text in F.worst_cases(run))
             for run in runs if F.worst_cases(run)]
    return ["worst cases:", *lines, ""] if lines else []


def _smallest_safe_lines(sweeps: list[dict[str, Any]]) -> list[str]:
    """Each sweep's `smallest_safe` summaries (report.smallest_safe), a line each."""
    lines = [f"  {sweep['spec']}" + (f" {F.params_text(row['others'])}" if row["others"] else "")
             + f": {row['message']}" for sweep in sweeps for row in sweep.get("smallest_safe", [])]
    return ["smallest safe values:", *lines, ""] if lines else []


def _limit_allows_lines(sweeps: list[dict[str, Any]]) -> list[str]:
    """Each sweep's `limit_allows` summaries (report.limit_allows), a line each."""
    lines = [f"  {sweep['spec']}" + (f" {F.params_text(row['others'])}" if row["others"] else "")
             + f" {row['property']}: {row['message']}" for sweep in sweeps for row in sweep.get("limit_allows", [])]
    return ["what the limits allow:", *lines, ""] if lines else []


def _run_line(run: dict[str, Any]) -> str:
    stats = run["stats"]
    out = f"{run['spec']} [{run['machine']}]"
    if run["params"]:
        out += f" {F.params_text(run['params'])}"
    out += f": {stats['states']:,} states, {stats['seconds']:.2f} s"
    if run.get("explored", "model") != "model":
        out += ", checked the bound code"
        if run.get("binding"):
            out += f" ({run['binding']} binding)"
        if run.get("determinism"):
            out += f", {determinism_text(run['determinism'])}"
    elif run.get("code_not_run"):
        out += f", the spec's stages only ({run['code_not_run'].get('by', '--model')}: the bound code did not run)"
    expected = [p["name"] for p in run["properties"] if p.get("expected") is True and p["status"] == "violated"]
    if expected and F.run_verdict(run) == "pass":
        out += f" ({', '.join(expected)})"
    if run["warnings"]:
        count = len(run["warnings"])
        out += f", {counted(count, 'warning')}"
    relied = list(dict.fromkeys(f for p in F.under_fairness(run) for f in p["fairness"]))
    if relied:                  # a proof that holds only on fair runs says so on its one line
        out += f"; under fairness: {', '.join(relied)}"
    return out


def _is_finding(prop: dict[str, Any]) -> bool:
    """A property result the default listing shows in full: anything but what the spec says
    (holding, or violated as its `expect:` declares)."""
    return F.outcome(prop) not in (F.PASS, F.EXPECTED)


def _stopped_left_it(prop: dict[str, Any]) -> bool:
    """An unknown the bound that stopped the run explains (and that no `expect:` is about)."""
    return prop["status"] == "unknown" and prop.get("expected") is not False


def _hidden_warnings(runs: list[dict[str, Any]]) -> list[str]:
    """Where the default listing leaves warnings out, a line saying how many and how to see them
    (a declaration's own warnings are shown: see _declaration_warnings)."""
    hidden = [[w for w in F.warnings_with_lines(run) if w.get("kind") != "declaration"] for run in runs]
    count = sum(len(h) for h in hidden)
    if not count:
        return []
    with_some = sum(1 for h in hidden if h)
    return [f"{counted(count, 'warning')} in {counted(with_some, 'run')} "
            "(vacuity: parts of a spec that never matter): --verbose lists them"]


# ---------------------------------------------------------------- a run in full

def determinism_text(d: dict[str, Any], full: bool = False) -> str:
    """How a bound run checked that its code is deterministic, and what that cost (`full`:
    also which transitions ran twice, and why this mode)."""
    if d["mode"] == "off":
        return "determinism off: nondeterminism was not checked" + (f" ({d['why']})" if full else "")
    how = ("every transition" if d["mode"] == "full" else "each state's first transition") + " run twice; "
    calls = f"{d['extra_calls']:,} extra code call{'s' if d['extra_calls'] != 1 else ''}"
    return (f"determinism {d['mode']} ({how if full else ''}{calls}, {d['seconds']:.2f} s"
            + (f"; {d['why']})" if full else ")"))


def _not_run_text(not_run: dict[str, Any]) -> str:
    """What a --model run of a bound spec explored, and what it therefore did not check."""
    return (f"explored the spec's own stages; the bound code {not_run['bind']} did not run, so "
            f"{' and '.join(not_run['not_checked'])} {'were' if len(not_run['not_checked']) > 1 else 'was'} "
            "not checked")


def _run_block(run: dict[str, Any], full: bool) -> list[str]:
    """A run's head, verdict and stats, then its property results with their traces: in
    full every one, and its bounds, scenarios and warnings; else only the findings."""
    stats = run["stats"]
    head = f"{run['spec']}  [{run['machine']}]  {F.params_text(run['params'])}"
    if run.get("explored", "model") != "model":
        head += f"  (checked the bound {run['explored']})"
    if run.get("binding"):
        head += f"  [binding: {run['binding']}]"
    if run.get("determinism"):
        head += f"  [{determinism_text(run['determinism'], full=True)}]"
    if run.get("code_not_run"):
        head += f"  ({run['code_not_run'].get('by', '--model')}: {_not_run_text(run['code_not_run'])})"
    lines = [head, f"  {F.run_result_stop_text(run)}: {stats['states']:,} states, "
                   f"{stats['transitions']:,} transitions, {stats['terminal_states']:,} terminal, "
                   f"depth {stats['max_depth']}, {stats['seconds']:.2f} s"]
    if run.get("stop_reason"):
        lines.append(f"  {run['stop_reason']}")
    for action, choices in (run.get("representatives") or {}).items():
        for choice, counts in choices.items():
            lines.append(f"  concrete values per class of {action} {choice}: "
                         + ", ".join(f"{label} {n}" for label, n in counts.items()))
    props = [p for p in run["properties"] if full or _is_finding(p)]
    undecided = [] if full or not run.get("stopped_by") else [p for p in props if _stopped_left_it(p)]
    props = [p for p in props if p not in undecided]
    width = max((len(p["name"]) for p in props), default=0)
    if undecided:               # the bound is the finding; its every unknown says the same
        count = len(undecided)
        stopped = "analyses after the exploration" if run.get("stopped_after_exploration") else "exploration"
        lines.append(f"  {'unknown':<9} {count} propert{'y' if count == 1 else 'ies'}, not decided as the "
                     f"{stopped} stopped (--verbose lists them)")
    for p in props:
        lines.append(f"  {F.status_text(p):<9} {p['name']:<{width}}  {p['message']}")
        if p["status"] == "violated" and p.get("trace") is not None:
            lines += ["      " + row for row in F.trace_text(p).splitlines()]
        if full and p["kind"] == "possible" and p.get("witness"):
            lines += ["      " + row for row in trace_table(p["witness"])]
        if p["status"] == "violated" and p.get("policy"):
            lines.append("      witness policy: " + "; ".join(F.decision_text(d) for d in p["policy"]))
        if p["status"] == "violated" and p.get("most_probable_run"):
            lines += ["      " + row for row in F.likeliest_lines(p["most_probable_run"])]
        if p["status"] == "violated" and p.get("decide_table"):
            lines += ["      " + row for row in F.decide_lines(p["decide_table"])]
        if p.get("sensitivity"):
            lines += ["      " + row for row in F.sensitivity_lines(p["sensitivity"])]
    if full and run.get("bounds"):
        lines.append("  bounds: " + ", ".join(f"{name} {b['message']}" for name, b in run["bounds"].items()))
    if full and run.get("outcomes"):
        lines += outcome_lines(run["outcomes"])
    scenarios = run.get("scenarios") or []
    lines += [f"  FAILED    scenario {sc['name']}: {sc['message']}" for sc in scenarios if sc["status"] != "passed"]
    if full and scenarios and all(sc["status"] == "passed" for sc in scenarios):
        lines.append(f"  scenarios: {len(scenarios)} passed ({', '.join(sc['name'] for sc in scenarios)})")
    if full:
        lines += [f"  warning: {warning}" for warning in run["warnings"]]
    return lines


def outcome_lines(table: dict[str, Any]) -> list[str]:
    """A weighted spec's outcome table: each way a run ends and each expected total, min..max."""
    if "message" in table:
        return [f"  outcomes: {table['message']}"]
    rows = outcome_rows(table)
    ends = [(name, span) for name, span in rows if not name.startswith("expected ")]
    lines = ["  outcomes (probability, min..max over policies):"]
    lines += [f"    {name:<20} {span}" for name, span in ends]
    lines.append("  expected until a terminal state:")
    lines += [f"    {name.removeprefix('expected '):<20} {span}" for name, span in rows[len(ends):]]
    return lines


def outcome_rows(table: dict[str, Any]) -> list[tuple[str, str]]:
    """The outcome table as (what, min..max) rows: each end, then `expected MEASURE`."""
    rows = [(name, _span(v)) for name, v in table["ends"].items()]
    rows += [(f"expected {name}", v["message"] if "message" in v else _span(v))
             for name, v in table["expected"].items()]
    return rows


def _iterated(a: float | None, b: float | None) -> str:
    """One side of an iterated row: `infinite`, a point, `[lo, hi]`, or `about x (within w)`
    when the interval is narrower than the digits shown."""
    if a is None or b is None:
        return "infinite"
    if a == b:
        return f"{a:.12g}"
    if f"{a:.12g}" == f"{b:.12g}":
        return f"about {(a + b) / 2:.12g} (within {b - a:.2g})"
    return f"[{a:.12g}, {b:.12g}]"


def _span(v: dict[str, Any]) -> str:
    if "exact" not in v:                # a side solved by interval iteration: its interval (an exact one a point)
        lo, hi = (_iterated(a, b) for a, b in (v["interval"]["min"], v["interval"]["max"]))
        return lo if lo == hi else f"{lo} .. {hi}"
    lo, hi = (number(None if x == "inf" else fraction_from_json(x)) for x in (v["exact"]["min"], v["exact"]["max"]))
    return lo if lo == hi else f"{lo} .. {hi}"


# ---------------------------------------------------------------- sweeps (verbose)

def _sweep_text(sweep: dict[str, Any]) -> list[str]:
    """A spec's verdict per params: a table over two params, else a line per combination;
    then where each violated property first fails."""
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
        lines += [f"  {F.params_text(c['params'])}: {c['verdict']}" for c in sweep["runs"]]
    for name, info in sweep["first_failures"].items():
        note = " (as expected)" if info["expected"] else ""
        lines.append(f"  {name} first fails at {F.params_text(info['params'])}{note}")
    lines += [f"  smallest safe{' at ' + F.params_text(row['others']) if row['others'] else ''}: {row['message']}"
              for row in sweep.get("smallest_safe", [])]
    lines += [f"  {row['property']}{' at ' + F.params_text(row['others']) if row['others'] else ''}: {row['message']}"
              for row in sweep.get("limit_allows", [])]
    lines.append("")
    return lines
