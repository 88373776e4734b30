"""Traces in the Informal Trace Format (ITF), the JSON trace format of Apalache and Quint.

ITF (Apalache ADR-015) is a JSON object::

    {"#meta": {...}, "vars": ["x", ...], "states": [{"#meta": {"index": 0}, "x": ...}, ...],
     "loop": 2}

Values: a bool is a JSON bool, a string a JSON string, an integer `{"#bigint": "42"}`
(plain JSON integers are accepted on input), a list a JSON array, a record a JSON object,
and `#tup`, `#set`, `#map`, `#unserializable` wrap the other forms. `loop`, when present,
is the index of the state where the lasso's loop starts; the loop ends in the last state.

haltproof keeps everything a replay needs:

- each state's `#meta` holds `index`, and for every state after the first the `action`
  that reached it, its `choices` (plain JSON, as in the JSON report) and the decide
  `rule` that fired (null when the action has no decide stage), and for a sub-agent's step
  (a spec's `agents:`) its `depth` under the step that called it;
- the trace's `#meta` holds `format`, `format-description`, `source` (the spec file),
  `machine`, `params` (a name -> value object: haltproof's params are values, not the
  names ITF's top-level `params` field lists), `kind` (`path` | `lasso`) and
  `loop_start`, plus `property` and `role` (`trace`, `other_trace` or `witness`) when known,
  and `varTypes` in Apalache's notation (`Int`, `Str`, `Bool`).

A lasso is written with ITF's own top-level `loop` too: haltproof's lasso ends in a
state equal to `steps[loop_start]`, which is exactly "the loop starts at state `loop`
and ends in the last state".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haltproof.machine.spec import Spec, shown_path

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
_VAR_TYPES = {"int": "Int", "enum": "Str", "bool": "Bool"}


class ITFError(ValueError):
    """An ITF document that is not a trace haltproof can read."""


# ---------------------------------------------------------------- values

def encode_value(value: Any) -> Any:
    """A Python value as an ITF expression."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return {"#set": [encode_value(v) for v in sorted(value, key=repr)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("#") for k in value):
            return {k: encode_value(v) for k, v in value.items()}
        return {"#map": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    return {"#unserializable": repr(value)}


def decode_value(expr: Any, where: str) -> Any:
    """An ITF expression as a Python value; `where` names it in errors."""
    if isinstance(expr, (bool, str)):
        return expr
    if isinstance(expr, int):
        return expr
    if isinstance(expr, float):
        raise ITFError(f"{where}: {expr!r} is not an ITF value (integers are written as "
                       "JSON integers or {\"#bigint\": \"...\"})")
    if isinstance(expr, list):
        return [decode_value(v, where) for v in expr]
    if expr is None:
        raise ITFError(f"{where}: null is not an ITF value")
    if isinstance(expr, dict):
        if "#bigint" in expr:
            text = expr["#bigint"]
            if len(expr) != 1 or not isinstance(text, str):
                raise ITFError(f"{where}: a #bigint must be the only key and hold a string")
            try:
                return int(text, 10)
            except ValueError:
                raise ITFError(f"{where}: #bigint {text!r} is not an integer") from None
        if "#tup" in expr or "#set" in expr:
            key = "#tup" if "#tup" in expr else "#set"
            if not isinstance(expr[key], list):
                raise ITFError(f"{where}: {key} must hold a list")
            return [decode_value(v, where) for v in expr[key]]
        if "#map" in expr:
            pairs = expr["#map"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise ITFError(f"{where}: #map must hold a list of [key, value] pairs")
            return {_hashable(decode_value(k, where)): decode_value(v, where) for k, v in pairs}
        if "#unserializable" in expr:
            return None if expr["#unserializable"] == "None" else dict(expr)
        return {k: decode_value(v, f"{where}.{k}") for k, v in expr.items() if k != "#meta"}
    raise ITFError(f"{where}: {expr!r} is not an ITF value")


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


# ---------------------------------------------------------------- traces

def spec_info(spec: Spec, **extra: Any) -> dict[str, Any]:
    """What trace_to_itf needs to know about a spec: its file, machine name, vars and their types."""
    shown = [v for v in spec.vars if v.monitor is None]     # a property monitor is in no trace
    info = {"source": shown_path(spec.path), "machine": spec.name,
            "vars": [v.name for v in shown],
            "varTypes": {v.name: _VAR_TYPES.get(v.kind, "Str") for v in shown}}
    info.update(extra)
    return info


def trace_to_itf(trace_json: dict[str, Any], spec_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """A trace as the JSON report prints it (`kind`, `loop_start`, `steps`, `params`) as ITF.

    `spec_info` (optional keys): `source`, `machine`, `vars` (their order), `varTypes`,
    `params` (used when the trace records none), `property`, `role`."""
    info = dict(spec_info or {})
    steps = trace_json["steps"]
    names = list(info.get("vars") or (steps[0]["state"] if steps else []))
    for st in steps:                                 # a var the spec does not list still goes out
        for k in st["state"]:
            if k not in names:
                names.append(k)
    kind = trace_json.get("kind", "path")
    loop_start = trace_json.get("loop_start")
    params = trace_json.get("params", info.get("params"))
    meta: dict[str, Any] = {"format": "ITF", "format-description": FORMAT_DESCRIPTION,
                            "description": _description(info, kind)}
    for key in ("source", "machine", "property", "role"):
        if info.get(key) is not None:
            meta[key] = info[key]
    meta["params"] = dict(params) if params is not None else None
    meta["kind"] = kind
    meta["loop_start"] = loop_start
    if info.get("varTypes"):
        meta["varTypes"] = {k: v for k, v in info["varTypes"].items() if k in names}
    states = []
    for n, st in enumerate(steps):
        smeta: dict[str, Any] = {"index": n}
        if n > 0:
            smeta.update(action=st.get("action"), choices=dict(st.get("choices") or {}),
                         rule=st.get("rule"))
            if st.get("depth"):
                smeta["depth"] = st["depth"]
        state: dict[str, Any] = {"#meta": smeta}
        for k in names:
            if k in st["state"]:
                state[k] = encode_value(st["state"][k])
        states.append(state)
    out: dict[str, Any] = {"#meta": meta, "vars": names, "states": states}
    if kind == "lasso" and loop_start is not None:
        out["loop"] = loop_start
    return out


def _description(info: dict[str, Any], kind: str) -> str:
    what = {"witness": "a shortest run reaching", "other_trace": "the second run of the violation of"}
    role = info.get("role", "trace")
    prop = info.get("property")
    text = f"{what.get(role, 'a counterexample to')} {prop}" if prop else f"a haltproof {kind}"
    if info.get("machine"):
        text += f" in {info['machine']}"
    return f"{text}, written by haltproof"


def is_itf(data: Any) -> bool:
    """True for an object shaped like an ITF trace (`states`, with `vars` or `#meta`)."""
    return isinstance(data, dict) and "states" in data and ("vars" in data or "#meta" in data) \
        and "steps" not in data


def itf_to_trace(itf: dict[str, Any]) -> dict[str, Any]:
    """An ITF trace as haltproof's JSON trace (`kind`, `loop_start`, `steps`, and `params` when known).

    Raises ITFError with a message naming the state and the field that is wrong."""
    if not isinstance(itf, dict):
        raise ITFError("an ITF trace is a JSON object")
    meta = itf.get("#meta", {})
    if not isinstance(meta, dict):
        raise ITFError("'#meta' must be an object")
    names = itf.get("vars")
    if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
        raise ITFError("'vars' must be a list of variable names")
    states = itf.get("states")
    if not isinstance(states, list) or not states:
        raise ITFError("'states' must be a non-empty list of states")
    steps: list[dict[str, Any]] = []
    for n, st in enumerate(states):
        if not isinstance(st, dict):
            raise ITFError(f"state {n} is not an object")
        smeta = st.get("#meta", {})
        if not isinstance(smeta, dict):
            raise ITFError(f"state {n}: '#meta' must be an object")
        missing = [v for v in names if v not in st]
        if missing:
            raise ITFError(f"state {n} has no value for var {missing[0]!r} (every state must set "
                           "every name in 'vars')")
        state = {v: decode_value(st[v], f"state {n}, var {v}") for v in names}
        if n == 0:
            steps.append({"state": state, "action": None, "choices": {}, "rule": None})
            continue
        action = smeta.get("action")
        if not isinstance(action, str):
            raise ITFError(f"state {n} names no action: haltproof keeps it in the state's "
                           "'#meta.action'")
        choices = smeta.get("choices") or {}
        if not isinstance(choices, dict):
            raise ITFError(f"state {n}: '#meta.choices' must be an object")
        choices = {k: decode_value(v, f"state {n}, choice {k}") for k, v in choices.items()}
        step: dict[str, Any] = {"state": state, "action": action, "choices": choices}
        if "rule" in smeta:        # a trace of another tool may record none: nothing to compare
            rule = step["rule"] = smeta["rule"]
            if rule is not None and not isinstance(rule, str):
                raise ITFError(f"state {n}: '#meta.rule' must be a string or null")
        depth = smeta.get("depth")
        if depth is not None:
            if type(depth) is not int or depth < 1:
                raise ITFError(f"state {n}: '#meta.depth' must be an integer of 1 or more")
            step["depth"] = depth
        steps.append(step)
    loop = itf.get("loop", meta.get("loop_start"))
    if loop is not None:
        if isinstance(loop, dict):
            loop = decode_value(loop, "loop")
        if not isinstance(loop, int) or isinstance(loop, bool) or not 0 <= loop < len(steps):
            raise ITFError(f"'loop' must be the index of a state (0..{len(steps) - 1}), got {loop!r}")
    out: dict[str, Any] = {"kind": "lasso" if loop is not None else "path", "loop_start": loop,
                           "steps": steps}
    params = meta.get("params")
    if params is not None:
        if not isinstance(params, dict):
            raise ITFError("'#meta.params' must be an object of param values")
        out["params"] = {k: decode_value(v, f"param {k}") for k, v in params.items()}
    elif isinstance(itf.get("params"), list):     # ITF's own form: names set in the first state
        first = states[0]
        out["params"] = {k: decode_value(first[k], f"param {k}") for k in itf["params"]
                         if isinstance(k, str) and k in first}
    return out


# ---------------------------------------------------------------- reports

TRACE_KEYS = ("trace", "other_trace", "witness")


def report_with_itf_traces(report: dict[str, Any], specs: Sequence[Spec]) -> dict[str, Any]:
    """A copy of a `haltproof-report/1` dict whose traces (`trace`, `other_trace`, `witness`)
    are ITF documents; `specs[i]` is the Spec of `report["runs"][i]`. Keys are kept."""
    out = dict(report)
    out["trace_format"] = "itf"
    runs = []
    for run, spec in zip(report["runs"], specs):
        run = dict(run)
        props = []
        for p in run.get("properties", []):
            p = dict(p)
            for key in TRACE_KEYS:
                if p.get(key):
                    p[key] = trace_to_itf(p[key], spec_info(spec, property=p.get("name"), role=key,
                                                             params=run.get("params")))
            props.append(p)
        run["properties"] = props
        runs.append(run)
    out["runs"] = runs
    return out
