"""What a check finds: the run and scenario records, and the one place a run's result and
its meaning for the gate are decided (`judge`), for the records and the JSON readers alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from haltproof.machine.spec import ParamValue, Spec
from haltproof.machine.trust import MODEL
from haltproof.properties.vacuity import Notice
from haltproof.properties.kinds import UNKNOWN, VIOLATED, PropertyResult

from .engine import Exploration




@dataclass(frozen=True)
class ScenarioResult:
    """One scenario replayed on a run: whether it went as the spec says, and how far."""

    name: str
    ok: bool
    message: str
    steps: int


RunVerdict = Literal["proved", "violated", "incomplete"]     # a run's result, as the exit code says it


Gate = Literal["pass", "fail", "incomplete"]                 # what a run means for the gate, `expect` counted


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """One run: one param combination of a spec, explored once, each property judged. `result`
    and `verdict` are decided by `judge` from the run's own findings; `property(name)` reads
    one property's result. The fields starting with `_` are the reports' own (the loaded spec,
    the explored graph of a small run), not part of the API."""

    params: Mapping[str, ParamValue]     # the combination: NAME -> its value
    stats: dict[str, Any]                # states, transitions, terminal_states, max_depth, seconds
    properties: list[PropertyResult]
    coverage: dict[str, dict[str, int]]
    notices: list[Notice]                # vacuity warnings (empty when the exploration was partial)
    scenarios: list[ScenarioResult]
    stopped_by: str | None               # the bound that stopped the exploration (max_states, timeout, ...)
    as_expected: bool | None             # None when the spec declares no expectation
    explored: str = "model"              # "model", or "code: module:Name" for a bound spec
    bounds: dict[str, dict[str, Any]] = field(default_factory=dict)   # worst cases, see worst_cases
    engine: str = "scalar"               # which engine explored it
    stop_reason: str | None = None       # why it is incomplete, in words: "stopped at N states: ..."
    binding: str | None = None           # bound code: how it reached each state (state | snapshot | replay)
    determinism: dict[str, Any] | None = None   # bound code: how determinism was checked, and its cost
    representatives: dict[str, dict[str, dict[str, int]]] | None = None   # bound: concrete values per class
    odds: dict[str, Any] | None = None   # a spec with weights: how runs end, how likely (explorer/chances.py)
    stages_by: str = MODEL               # a bound spec on its own stages: the option that asked (--model, --no-code)
    stopped_after_exploration: bool = False   # explored in full, and then a bound stopped an analysis
    _spec: Spec = field(repr=False)      # the loaded spec, for the reports
    _exploration: Exploration | None = field(default=None, repr=False)   # small complete runs: to draw their graph

    @property
    def spec_path(self) -> str:
        """The spec's file (a Python model: its module's file)."""
        return self._spec.path

    @property
    def machine(self) -> str:
        """The machine's name, as the spec declares it."""
        return self._spec.name

    @property
    def warnings(self) -> list[str]:
        return [n.message for n in self.notices]

    @property
    def result(self) -> RunVerdict:
        """proved | violated | incomplete, decided by `judge` from the run's own findings."""
        return self._judged()[0]

    @property
    def verdict(self) -> Gate:
        """What this run means for the gate: pass, fail, or incomplete (see `judge`)."""
        return self._judged()[1]

    def _judged(self) -> tuple[RunVerdict, Gate]:
        return judge([(p.kind, p.status, p.expected) for p in self.properties],
                     [s.ok for s in self.scenarios], self.stopped_by, self.as_expected)

    def property(self, name: str) -> PropertyResult:
        """The result of the property called `name`; KeyError naming the judged ones when none is."""
        for p in self.properties:
            if p.name == name:
                return p
        raise KeyError(f"this run judged no property {name!r} (it judged: "
                       f"{', '.join(p.name for p in self.properties) or 'none'})")


def unsettled(properties: Sequence[tuple[str, str]], stopped_by: str | None) -> bool:
    """Whether a run leaves something undecided that no finding explains, from its bound and
    each property's (kind, status): a bound stopped it, or the exploration was complete but
    a property is still unknown (a count that failed only when judged, say) while no
    built-in property (domains, well_defined, bound_code) is violated. A violated built-in
    is the spec's or the code's own error, and it explains every property it left unknown."""
    if stopped_by is not None:
        return True
    return (any(status == UNKNOWN for _, status in properties)
            and not any(kind == "builtin" and status == VIOLATED for kind, status in properties))


def judge(properties: Sequence[tuple[str, str, bool | None]], scenarios_ok: Sequence[bool],
          stopped_by: str | None, as_expected: bool | None) -> tuple[RunVerdict, Gate]:
    """A run's result (proved | violated | incomplete) and what it means for the gate (pass |
    fail | incomplete), from each property's (kind, status, expected), whether each scenario
    passed, the bound that stopped it and its `expect` outcome. The one place both are
    decided: RunResult asks it, and so do the readers of the JSON report (findings.py).

    A violated property or a failed scenario is violated; otherwise anything `unsettled`
    is incomplete: a run with a property left unknown is never proved. Without `expect`,
    proved passes and violated fails. With it, the run passes only when its findings are
    exactly the expected ones and nothing is unsettled; an unexpected violation or a failed
    scenario fails even if the exploration stopped early; otherwise an unsettled run is
    incomplete, and a settled one whose expected violation did not happen fails."""
    left_open = unsettled([(kind, status) for kind, status, _ in properties], stopped_by)
    result: RunVerdict
    if any(status == VIOLATED for _, status, _ in properties) or not all(scenarios_ok):
        result = "violated"
    else:
        result = "incomplete" if left_open else "proved"
    if as_expected is None:
        gate: dict[RunVerdict, Gate] = {"proved": "pass", "violated": "fail", "incomplete": "incomplete"}
        return result, gate[result]
    if as_expected and not left_open:
        return result, "pass"
    unexpected = any(expected is False and status == VIOLATED for _, status, expected in properties)
    if unexpected or not all(scenarios_ok) or not left_open:
        return result, "fail"
    return result, "incomplete"
