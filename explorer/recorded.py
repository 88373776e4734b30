"""Recorded runs checked against a spec's explored graph, and the choices' observed frequencies.

A recorded run is followed through the runtime guard (haltproof.guard) built from the explored
graph of one param combination, so a recording is judged exactly as a live run would be: it
conforms, violates a safety property at step i, leaves the model at step i (an action, choice
or state the model does not have there), or stops at step i outside a terminal state.
Formats (docs/how-to/traces.md): JSONL, one run per line or one event per line, and OpenTelemetry
trace exports (OTLP JSON) whose spans carry the events: spans with haltproof's own attributes, or
plain GenAI semantic-convention spans (`chat`, `execute_tool`, ...) named events by a span map
(machine/spanmap.py: the spec's `spans:` or `--map FILE`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from haltproof.guard import Guard, GuardError
from haltproof.machine.spanmap import SpanMapError, SpanRule, span_rule

MAX_RUNS_BYTES = 512 * 1024 * 1024


class RecordingError(ValueError):
    """A recording that cannot be read or followed: named by file:line and the problem."""


@dataclass
class Recorded:
    """One recorded run: its id, where it was read, its initial state (some vars) and events."""

    run: str
    where: str                     # file:line of its first event
    init: dict[str, Any] | None
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """How one recorded run stands against the spec."""

    run: str
    status: str                    # conforms | violates | leaves_model | unfinished
    step: int | None = None
    properties: tuple[str, ...] = ()
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "status": self.status, "step": self.step, "properties": list(self.properties),
                "message": self.message}


# ------------------------------------------------------------------------------ reading

def read_runs(path: str | Path, rules: list[SpanRule] | None = None) -> list[Recorded]:
    """The runs of a JSONL file or an OpenTelemetry export (OTLP JSON); `rules` name the events
    among plain GenAI spans."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"{path}: cannot read the runs: {exc}") from None
    stripped = text.lstrip()
    runs: list[Recorded] | None = None
    if stripped.startswith("{") and '"resourceSpans"' in text[:4096]:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and "resourceSpans" in doc:
            runs = otlp_runs([doc], str(path), rules)
    if runs is None:
        runs = _jsonl_runs(text, str(path), rules)
    if not runs:
        raise RecordingError(_no_runs(path, text, rules))
    return runs


def _no_runs(path: Path, text: str, rules: list[SpanRule] | None) -> str:
    """Why a recording gives no run: nothing to check is never reported as every run conforming."""
    if '"resourceSpans"' not in text:
        return f"{path}: no runs recorded"
    if rules is None:
        return (f"{path}: no span carries {ACTION_ATTR}: plain GenAI spans are read through a span map "
                "(the spec's spans: or --map FILE, docs/how-to/traces.md)")
    return f"{path}: no span carries {ACTION_ATTR} or matches a rule of the span map"


def _jsonl_runs(text: str, name: str, rules: list[SpanRule] | None = None) -> list[Recorded]:
    runs: dict[str, Recorded] = {}
    otlp: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name}:{n}"
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise RecordingError(f"{where}: not JSON: {exc}") from None
        if not isinstance(item, dict):
            raise RecordingError(f"{where}: a line is a JSON object, got {type(item).__name__}")
        if "resourceSpans" in item:          # the OTLP file exporter writes one export request per line
            otlp.append(item)
            continue
        run_id = str(item.get("run", "")) if "run" in item else None
        if run_id is None:
            raise RecordingError(f"{where}: no \"run\": every line names its run")
        rec = runs.setdefault(run_id, Recorded(run_id, where, None))
        if "events" in item:
            if rec.events:
                raise RecordingError(f"{where}: run {run_id} is recorded twice")
            if not isinstance(item["events"], list):
                raise RecordingError(f"{where}: \"events\" is a list of events")
            rec.events = [_event(e, f"{where} (event {k})") for k, e in enumerate(item["events"], 1)]
            rec.init = _init(item, where)
        elif "init" in item and "action" not in item:
            rec.init = _init(item, where)
        else:
            rec.events.append(_event(item, where))
    if otlp:
        return list(runs.values()) + otlp_runs(otlp, name, rules)
    return list(runs.values())


def _init(item: dict[str, Any], where: str) -> dict[str, Any] | None:
    init = item.get("init")
    if init is not None and not isinstance(init, dict):
        raise RecordingError(f"{where}: \"init\" is an object of the spec's vars")
    return init


def _event(e: Any, where: str) -> dict[str, Any]:
    if not isinstance(e, dict) or not isinstance(e.get("action"), str):
        raise RecordingError(f"{where}: an event is an object with an \"action\"")
    if not isinstance(e.get("choices", {}), dict):
        raise RecordingError(f"{where}: \"choices\" is an object (choice name: value)")
    if "state" in e and not isinstance(e["state"], dict):
        raise RecordingError(f"{where}: \"state\" is an object of the spec's vars")
    return {"action": e["action"], "choices": dict(e.get("choices", {})), "state": e.get("state"), "where": where}


# ------------------------------------------------------------------------- OpenTelemetry

ACTION_ATTR = "haltproof.action"
CHOICE_PREFIX = "haltproof.choice."
RUN_ATTR = "haltproof.run"
CONVERSATION_ATTR = "gen_ai.conversation.id"      # the GenAI conventions' run id, where a span has it
ERROR = "error"             # a span map's pseudo-attribute: the span failed (status ERROR or error.type set)
STATUS_ERROR = (2, "STATUS_CODE_ERROR")


def read_span_map(path: str | Path) -> list[SpanRule]:
    """A span map file (JSON or YAML): a list of rules (machine/spanmap.py), tried in order; a
    span no rule matches is not an event."""
    import yaml
    name = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"{name}: cannot read the span map: {exc}") from None
    except yaml.YAMLError as exc:
        raise RecordingError(f"{name}: the span map is not YAML or JSON: {exc}") from None
    if not isinstance(data, list) or not data:
        raise RecordingError(f"{name}: a span map is a list of rules ({{when: {{...}}, action: A, choices: {{...}}}})")
    try:
        return [span_rule(r, f"{name}: rule {k}") for k, r in enumerate(data, 1)]
    except SpanMapError as exc:
        raise RecordingError(str(exc)) from None


def otlp_runs(docs: list[dict[str, Any]], name: str, rules: list[SpanRule] | None = None) -> list[Recorded]:
    """The runs of OTLP JSON export requests: one run per trace, its events in start-time order:
    the spans that carry `haltproof.action` (with `haltproof.choice.NAME` attributes), and the
    spans the first matching rule of `rules` names (plain GenAI spans)."""
    spans: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for d in docs:
        for rs in d.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    attrs = {a["key"]: _any_value(a.get("value", {})) for a in sp.get("attributes", [])}
                    attrs[ERROR] = sp.get("status", {}).get("code") in STATUS_ERROR or "error.type" in attrs
                    trace = str(sp.get("traceId", ""))
                    spans.setdefault(trace, []).append((int(sp.get("startTimeUnixNano", 0)), sp.get("name", ""), attrs))
    out: list[Recorded] = []
    for trace, items in spans.items():
        items.sort(key=lambda t: t[0])
        run_id = next((str(a[k]) for k in (RUN_ATTR, CONVERSATION_ATTR) for _, _, a in items if k in a), trace)
        rec = Recorded(run_id, f"{name} (trace {trace})", None)
        for _, span_name, attrs in items:
            event = _span_event(attrs, rules or [])
            if event is not None:
                rec.events.append({**event, "state": None, "where": f"{name} (trace {trace}, span {span_name})"})
        if rec.events:
            out.append(rec)
    return out


def _span_event(attrs: dict[str, Any], rules: list[SpanRule]) -> dict[str, Any] | None:
    """The event a span records: its haltproof attributes, else the first rule it matches."""
    if ACTION_ATTR in attrs:
        return {"action": str(attrs[ACTION_ATTR]),
                "choices": {k[len(CHOICE_PREFIX):]: v for k, v in attrs.items() if k.startswith(CHOICE_PREFIX)}}
    rule = next((r for r in rules if r.matches(attrs)), None)
    return None if rule is None else {"action": rule.action, "choices": dict(rule.choices)}


def _any_value(v: dict[str, Any]) -> Any:
    """An OTLP AnyValue as a Python value."""
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_any_value(x) for x in v["arrayValue"].get("values", [])]
    return None


# ----------------------------------------------------------------------------- checking

def check_run(guard: Guard, rec: Recorded) -> tuple[Outcome, list[tuple[str, dict[str, Any]]]]:
    """Follow one recorded run through the guard: its outcome, and the transitions followed
    inside the model (action, the choices the graph's transition made), for the fit."""
    taken: list[tuple[str, dict[str, Any]]] = []
    try:
        start = guard.start(rec.init)
    except GuardError as exc:
        raise RecordingError(f"{rec.where}: run {rec.run}: {exc}") from None
    if start.escape:
        return Outcome(rec.run, "leaves_model", 0, message=start.reason), taken
    for i, ev in enumerate(rec.events, 1):
        try:
            before = guard.before(ev["action"], ev["choices"])
            if before.verdict == "deny" and not before.violated and not before.doomed:
                return Outcome(rec.run, "leaves_model", i, message=before.reason), taken
            after = guard.after(ev["state"])
        except GuardError as exc:
            raise RecordingError(f"{ev['where']}: run {rec.run}: {exc}") from None
        if after.escape:
            return Outcome(rec.run, "leaves_model", i, message=after.reason), taken
        taken.append((after.action or ev["action"], dict(after.choices)))
        if after.violated:
            return Outcome(rec.run, "violates", i, after.violated, after.reason), taken
    end = guard.end()
    if end.verdict != "allow":
        return Outcome(rec.run, "unfinished", len(rec.events), message=end.reason), taken
    return Outcome(rec.run, "conforms"), taken


# -------------------------------------------------------------------------------- fitting

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


THIN = 30          # fewer observations of a choice than this: the interval is wide, say so


def fit_counts(guard: Guard, followed: list[list[tuple[str, dict[str, Any]]]]
               ) -> dict[str, dict[str, dict[Any, int]]]:
    """Per action and choice, how often each value was observed (every value listed, 0 too)."""
    counts: dict[str, dict[str, dict[Any, int]]] = {}
    for a in guard.table["actions"]:
        values: dict[str, dict[Any, int]] = {c: {} for c in a["choices"]}
        for combo in a["combos"]:
            for c, v in combo.items():
                values[c].setdefault(v, 0)
        counts[a["name"]] = values
    for run in followed:
        for action, choices in run:
            for c, v in choices.items():
                counts[action][c][v] += 1
    return counts


def probabilities_block(counts: dict[str, dict[str, dict[Any, int]]], source: str) -> str:
    """The observed frequencies as a `probabilities:` block (exact fractions that sum to 1),
    each value commented with its Wilson 95% interval and count; thin data said so."""
    lines = [f"# fitted by `haltproof traces` from {source}: observed frequency of each choice value,",
             "# with its Wilson 95% interval and the count it rests on",
             "probabilities:"]
    for action, choices in counts.items():
        seen = {c: vs for c, vs in choices.items() if sum(vs.values()) > 0}
        if not seen:
            continue
        lines.append(f"  {action}:")
        for c, vs in seen.items():
            n = sum(vs.values())
            note = f"  # thin: only {n} observations" if n < THIN else ""
            lines.append(f"    {c}:{note}" if note else f"    {c}:  # {n} observations")
            for v, k in vs.items():
                lo, hi = wilson(k, n)
                weight = Fraction(k, n)
                lines.append(f"      {_yaml_key(v)}: '{weight.numerator}/{weight.denominator}'"
                             f"  # {k / n:.3f} [{lo:.3f}, {hi:.3f}], {k} of {n}"
                             + ("; never observed" if k == 0 else ""))
    return "\n".join(lines) + "\n"


def _yaml_key(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def summary_table(outcomes: list[Outcome]) -> str:
    """The summary: how many runs conform, and every deviation with its step."""
    total = len(outcomes)
    by: dict[str, int] = {}
    for o in outcomes:
        by[o.status] = by.get(o.status, 0) + 1
    lines = [f"{total} runs: " + ", ".join(f"{by.get(s, 0)} {s.replace('_', ' ')}"
                                            for s in ("conforms", "violates", "leaves_model", "unfinished"))]
    for o in outcomes:
        if o.status == "conforms":
            continue
        what = {"violates": f"violates {', '.join(o.properties)}", "leaves_model": "leaves the model",
                "unfinished": "stops outside a terminal state"}[o.status]
        lines.append(f"  run {o.run}: {what} at step {o.step}: {o.message}")
    return "\n".join(lines) + "\n"
