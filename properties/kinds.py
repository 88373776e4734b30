"""Property kinds, their verdicts, and the counterexample traces they carry.

Verdicts: `holds` (proved over the whole explored space), `violated` (with a trace that
really happens), `unknown` (not decided: the exploration stopped early or hit a spec
error, so a "holds" would be a guess). A violation is evidence whatever else happened;
a "holds" is only ever claimed for a complete, well-defined exploration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from haltproof.machine.spec import DeclKind, ParamValue, PatternName

Status = Literal["holds", "violated", "unknown"]      # a property's verdict
"""A property's verdict: `holds`, `violated` or `unknown` (not decided within the bounds)."""
HOLDS: Final = "holds"
VIOLATED: Final = "violated"
UNKNOWN: Final = "unknown"

# What a property is: a declared kind, a pattern's name (absence ...), `possible` (a reachable
# property asked both ways) or `builtin` (domains, well_defined, bound_code, ...).
Kind = DeclKind | PatternName | Literal["builtin", "possible"]
"""What a property is: a declared kind, a pattern's name, `possible` or `builtin`."""

KIND_TEXT = {     # what "holds" means for each kind: the message of a holding property, and its rule text in SARIF
    "invariant": "true in every reachable state",
    "step_invariant": "true for every transition",
    "reachable": "some reachable state satisfies it",
    "terminates": "every run reaches a terminal state: no deadlock, no cycle among non-terminal states",
    "terminates_within": "every run ends within a bound on its transitions",
    "variant": "strictly increases on every non-terminal transition and stays within its bound",
    "independent": "no transition depends on the ignored vars",
    "probability": "the probability of reaching a state, over every policy, meets its bound",
    "expected": "the expected total of a measure until a terminal state, over every policy, meets its bound",
    "possible": "an answer either way: whether some reachable state satisfies it (never violated)",
    "maximum": "the exact maximum of an int expression over every reachable state, within at_most when declared",
    "absence": "no state in its scope satisfies it",
    "universality": "every state in its scope satisfies it",
    "precedence": "in its scope, no effect state comes before a cause state",
    "bounded_existence": "in its scope, it holds in at most the bound of separate stretches of states",
    "existence": "in its scope, every maximal run reaches a state that satisfies it",
    "response": "in its scope, every trigger state is followed (or met) by a response state on every maximal run",
}
BUILTIN_TEXT = {  # the same for the built-in properties
    "domains": "every variable stays inside its declared domain (never clamped or wrapped)",
    "well_defined": "every expression evaluates and every decide table has a matching rule",
    "bound_code": "the bound code ran on every reachable state and choice, deterministically",
    "code_matches_spec": "the bound code and the spec's own stages agree on every reachable transition",
    "declared_unreachable": "nothing the spec declares unreachable for these params (unreachable_when) is reached",
}


@dataclass
class Step:
    state: dict[str, Any]
    action: str | None = None
    choices: dict[str, Any] = field(default_factory=dict)
    rule: str | None = None
    depth: int = 0          # a sub-agent's step: how deep it is nested under the step that called it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "action": self.action, "choices": self.choices,
                               "rule": self.rule}
        if self.depth:
            out["depth"] = self.depth
        return out


@dataclass
class Trace:
    """A path from an initial state; a lasso when its tail loops back to `loop_start`."""

    steps: list[Step]
    kind: str = "path"
    loop_start: int | None = None

    def to_json(self, params: Mapping[str, ParamValue] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "loop_start": self.loop_start,
                               "steps": [s.to_json() for s in self.steps]}
        if params is not None:
            out["params"] = dict(params)
        return out

    def __len__(self) -> int:
        """The number of transitions (steps after the initial state)."""
        return len(self.steps) - 1

    def __bool__(self) -> bool:
        """A trace is always something, even one of zero transitions (a bad initial state)."""
        return True


@dataclass
class Subject:
    """What a finding is about beyond its trace, at the trace's end: the check that failed to
    evaluate there (`well_defined`, `bound_code`), or whose outcome differs between the two
    traces (`independent`). A regression test (explorer/regress.py) re-judges exactly that."""

    check: str                  # terminal | guard | action | property | count | measure | fairness
    name: str | None = None     # the action, property or measure
    choices: dict[str, Any] | None = None     # an action's choices

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check}
        if self.name is not None:
            out["name"] = self.name
        if self.choices is not None:
            out["choices"] = dict(self.choices)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Subject:
        return cls(data["check"], data.get("name"), data.get("choices"))


@dataclass
class LikeliestRun:
    """The most probable run to a violated probability's bad outcome under its witness policy:
    `goal` says what it reaches, `odds` each step's exact probability (fraction text), and
    `probability` their product (fraction text), `value` as a float."""

    goal: str
    trace: Trace
    odds: list[str]
    probability: str
    value: float

    def to_json(self, params: Mapping[str, ParamValue] | None = None) -> dict[str, Any]:
        return {"goal": self.goal, "probability": self.probability, "value": self.value,
                "odds": list(self.odds), "trace": self.trace.to_json(params)}


@dataclass
class PropertyResult:
    """One property's verdict on one run: `status` is `holds` only for a complete, well-defined
    exploration; a `violated` one carries its `trace` (a counterexample that really happens)."""

    name: str
    kind: Kind
    status: Status
    message: str
    trace: Trace | None = None
    other_trace: Trace | None = None      # independence: the second transition
    witness: Trace | None = None          # reachable: a shortest run reaching it
    expected: bool | None = None          # set when the spec declares expect
    line: int | None = None
    description: str = ""
    file: str | None = None               # the file `line` is in, when not the spec's
    subject: Subject | None = None        # what failed or differs at the trace's end (see Subject)
    value: dict[str, Any] | None = None   # probability / expected: {"value": {min, max}, "exact": {min, max}}
    policy: list[dict[str, Any]] | None = None   # their witness policy: its decision in each state of the trace
    likeliest: LikeliestRun | None = None  # a violated probability: the most probable run to the bad outcome
    decide_table: dict[str, Any] | None = None   # their witness policy as rows of var values -> decision
    sensitivity: dict[str, Any] | None = None    # a probability: its derivative along each weight (answers.py)
    fairness: list[str] | None = None     # a liveness check: the fairness assumptions its verdict relies on
