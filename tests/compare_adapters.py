"""Adapters for tests/machine/test_code_vs_spec.py: the retrying loop RETRYING, bound to code that
does what its stages do, and to code with exactly one field of one transition off.

Every comparison of the code with something (the spec's own stages, a second call, another
representative, another path) compares several fields: the rule and each var, by value and
by type. Each adapter here changes one of them alone on one transition (`Off`), so a test
can show that the comparison catches that field by itself. Nothing here ships.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haltproof.machine.binding import Adapter
from haltproof.machine.live import LiveAdapter

RETRYING = """\
machine: retrying
bind: compare_adapters:{adapter}
vars:
  tries: {{type: int, min: 0, max: 2, init: 0}}
  status: {{type: enum, values: [running, failed, done], init: running}}
  noted: {{type: bool, init: false}}
actions:
  call:
    when: status == running
    choose:
      tool: [ok, fail, flaky]
    do:
      - set: {{tries: tries + 1, noted: tool != ok}}
      - decide: status
        rules:
          - {{name: finished, when: tool == ok, then: done}}
          - {{name: retry, when: tries < 2, then: running}}
          - {{name: gave_up, then: failed}}
terminal: status != running
properties:
  stops:
    terminates: true
"""

# Each field of a transition's result, changed alone: the rule, a var's value, a var's type
# (1 == True == 1.0 in Python, but an int where the spec has a bool, or a float where it has
# an int, is another value). On `call` with tool=fail from the initial state the stages give
# tries=1 status=running noted=true, rule retry.
OFF: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "rule": ("rule", lambda r: "gave_up" if r != "gave_up" else "retry"),
    "tries": ("tries", lambda n: 0 if n else 2),
    "status": ("status", lambda s: "failed" if s != "failed" else "running"),
    "noted": ("noted", lambda b: not b),
    "noted_type": ("noted", int),          # true -> 1
    "tries_type": ("tries", float),        # 1 -> 1.0
}


def stages(state: dict[str, Any], tool: str) -> tuple[dict[str, Any], str]:
    """What RETRYING's own stages do on `call` (flaky is a fail to the spec)."""
    tries, noted = state["tries"] + 1, tool != "ok"
    if tool == "ok":
        return {"tries": tries, "status": "done", "noted": noted}, "finished"
    if tries < 2:
        return {"tries": tries, "status": "running", "noted": noted}, "retry"
    return {"tries": tries, "status": "failed", "noted": noted}, "gave_up"


def offset(state: dict[str, Any], rule: str, field: str) -> tuple[dict[str, Any], str]:
    """The result with one field (OFF) changed: the rule or one var."""
    name, change = OFF[field]
    if name == "rule":
        return state, change(rule)
    return {**state, name: change(state[name])}, rule


class Retrying(Adapter):
    """The state API: the code does what the stages do; `Off` subclasses change one field.

    `where(state, tool, calls)` says which call is changed: by default the first fail
    from the initial state, on every call (`calls` counts the calls of that transition)."""

    OFF = ""

    def __init__(self) -> None:
        self.calls: dict[tuple[Any, ...], int] = {}

    def where(self, state: dict[str, Any], tool: str, calls: int) -> bool:
        return state["tries"] == 0 and tool.startswith("fail")

    def concretize(self, state: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return dict(state)

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[dict[str, Any], str]:
        tool = choices["tool"]
        key = (*sorted(concrete.items()), tool)
        self.calls[key] = self.calls.get(key, 0) + 1
        new, rule = stages(concrete, "fail" if tool.startswith("fail") else tool)
        if self.OFF and self.where(concrete, tool, self.calls[key]):
            new, rule = offset(new, rule, self.OFF)
        return new, rule

    def abstract(self, concrete: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return dict(concrete)


class NoRule(Retrying):
    """Reports no rule at all: the spec's table names it."""

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return super().step(action, concrete, choices)[0], None


class SecondCall(Retrying):
    """Nondeterministic: the second call of the changed transition differs (`--determinism`)."""

    def where(self, state: dict[str, Any], tool: str, calls: int) -> bool:
        return super().where(state, tool, calls) and calls == 2


class Boom(Exception):
    """An exception RAISING declares an outcome of `call`: rule gave_up, status failed."""


RAISING = RETRYING.replace("    do:\n", "    raises:\n      - {{class: compare_adapters.Boom, rule: gave_up, "
                                         "set: {{status: failed}}}}\n    do:\n")


class SecondRaises(Retrying):
    """The second call of the first fail raises Boom, a declared outcome, where the first
    returned: what the exception stands for is the second call's result."""

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[dict[str, Any], str]:
        new, rule = super().step(action, concrete, choices)
        key = (*sorted(concrete.items()), choices["tool"])
        if self.where(concrete, choices["tool"], self.calls[key]) and self.calls[key] == 2:
            raise Boom("gave up")
        return new, rule


class OtherValue(Retrying):
    """Two concrete values of tool=fail (`representatives()`): the second behaves otherwise."""

    def representatives(self, action: str, choice: str, label: Any) -> list[Any]:
        return [label, f"{label}_again"] if label == "fail" else [label]

    def where(self, state: dict[str, Any], tool: str, calls: int) -> bool:
        return state["tries"] == 0 and tool == "fail_again"


class Run:
    """A live run of the retrying loop; it remembers the last tool, which the abstraction leaves out."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {"tries": 0, "status": "running", "noted": False}
        self.last = ""


class LiveRetrying(LiveAdapter):
    """The live API: the code does what the stages do; `Off` subclasses change one field
    on the first fail from the initial state."""

    OFF = ""
    copyable = True

    def where(self, run: Run, tool: str) -> bool:
        return run.state["tries"] == 0 and tool == "fail"

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Run:
        return Run()

    def step(self, live: Run, action: str, choices: dict[str, Any]) -> str:
        tool = choices["tool"]
        new, rule = stages(live.state, tool)
        if self.OFF and self.where(live, tool):
            new, rule = offset(new, rule, self.OFF)
        live.state, live.last = new, tool
        return rule

    def abstract(self, live: Run) -> dict[str, Any]:
        return dict(live.state)


class AfterFlaky(LiveRetrying):
    """Acts on the way the run came (`--paths`): after a flaky call, the next call's result
    has one field off. fail and flaky both lead to tries=1 status=running noted=true."""

    def where(self, run: Run, tool: str) -> bool:
        return run.last == "flaky"


class Restores(LiveRetrying):
    """Gives snapshot()/restore(); restoring the run after the first fail gets one var off."""

    copyable = False

    def where(self, run: Run, tool: str) -> bool:
        return False          # every step does what the stages do

    def snapshot(self, live: Run) -> tuple[dict[str, Any], str]:
        return dict(live.state), live.last

    def restore(self, snap: tuple[dict[str, Any], str]) -> Run:
        run = Run()
        run.state, run.last = dict(snap[0]), snap[1]
        if self.OFF and run.state["tries"] == 1:
            run.state = offset(run.state, "", self.OFF)[0]
        return run


def _named(base: type, field: str) -> type:
    return type(f"{base.__name__}_{field}", (base,), {"OFF": field, "__module__": __name__})


# One class per (way of binding, field): compare_adapters:Retrying_rule, SecondCall_tries, ...
for _base in (Retrying, NoRule, SecondCall, OtherValue, LiveRetrying, AfterFlaky, Restores):
    for _field in OFF:
        _cls = _named(_base, _field)
        globals()[_cls.__name__] = _cls
