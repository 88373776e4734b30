"""Test-only variants of the chapter-2 harness's `decide`, and adapters that bind them.

Nothing here ships. Each broken `decide` is the Python twin of a YAML mutant in
specs/mutants/; the bound explorer must catch it exactly as the checker catches the
mutant. The adapter runs `type(self).decide` inside haltproof.harness.loop's own `loop_step`, so a
subclass of LoopDemoAdapter that overrides `decide` puts that function under proof.

Specs name these adapters as `bind: broken_decides:Name` (the tests directory is on
sys.path while pytest runs).
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from haltproof.harness import loop
from haltproof.harness.loop_binding import STRATEGIES, LoopDemoAdapter

State = dict[str, Any]


# ------------------------------------------------------------------ broken twins of the YAML mutants

def decide_limit_first(state: State) -> str:
    """limit_before_observation.yaml: the step limit is checked before the observation."""
    if state["steps"] >= state["max_steps"]:
        return "limit"
    observation = state["observation"]
    if not observation["ok"]:
        if state["failures"] > state["max_retries"]:
            return "error"
    elif observation.get("search_complete", True):
        return "success" if len(observation["matches"]) == 1 else "needs_input"
    return "continue"


def decide_retry_past_last_step(state: State) -> str:
    """retry_past_last_step.yaml: a retryable failure continues before the limit is checked."""
    observation = state["observation"]
    if not observation["ok"]:
        if state["failures"] > state["max_retries"]:
            return "error"
        return "continue"                              # the mutant names this rule `retry`
    if observation.get("search_complete", True):
        return "success" if len(observation["matches"]) == 1 else "needs_input"
    if state["steps"] >= state["max_steps"]:
        return "limit"
    return "continue"


def decide_empty_search_continues(state: State) -> str:
    """empty_search_continues.yaml: zero matches on a complete search falls through."""
    observation = state["observation"]
    if not observation["ok"]:
        if state["failures"] > state["max_retries"]:
            return "error"
    elif observation.get("search_complete", True):
        n = len(observation["matches"])
        if n == 1:
            return "success"
        if n >= 2:
            return "needs_input"
    if state["steps"] >= state["max_steps"]:
        return "limit"
    return "continue"


def decide_reads_scenario(state: State) -> str:
    """decide_reads_scenario.yaml: a test shortcut peeks at the scenario label."""
    observation = state["observation"]
    if not observation["ok"]:
        if state["failures"] > state["max_retries"]:
            return "error"
    elif observation.get("search_complete", True):
        return "success" if len(observation["matches"]) == 1 else "needs_input"
    if state["scenario"] == "limit" and state["steps"] >= 2:
        return "limit"                                 # the mutant names this rule `scripted_limit`
    if state["steps"] >= state["max_steps"]:
        return "limit"
    return "continue"


class LimitFirst(LoopDemoAdapter):
    decide = staticmethod(decide_limit_first)


class RetryPastLastStep(LoopDemoAdapter):
    decide = staticmethod(decide_retry_past_last_step)


class EmptySearchContinues(LoopDemoAdapter):
    decide = staticmethod(decide_empty_search_continues)


class ReadsScenario(LoopDemoAdapter):
    decide = staticmethod(decide_reads_scenario)


# ------------------------------------------------------------------ written differently, deciding the same

_TABLE = {
    # observation class (and, for a failure, whether the retries are used up) -> decision;
    # a key that is absent or maps to None falls through to the step limit
    ("fail", True): "error",
    ("fail", False): None,
    ("one",): "success",
    ("zero",): "needs_input",
    ("many",): "needs_input",
}


def decide_by_table(state: State) -> str:
    """The same decision through a lookup table keyed by an observation class."""
    obs = state["observation"]
    if not obs["ok"]:
        key: tuple = ("fail", state["failures"] > state["max_retries"])
    elif obs.get("search_complete", True):
        key = ({0: "zero", 1: "one"}.get(len(obs["matches"]), "many"),)
    else:
        key = ("incomplete",)
    decision = _TABLE.get(key)
    if decision is not None:
        return decision
    return ("continue", "limit")[state["steps"] >= state["max_steps"]]


def decide_reordered(state: State) -> str:
    """The same decision with the early returns in another order."""
    obs = state["observation"]
    if obs["ok"] and obs.get("search_complete", True):
        return "needs_input" if len(obs["matches"]) != 1 else "success"
    at_limit = state["steps"] >= state["max_steps"]
    if obs["ok"]:
        return "limit" if at_limit else "continue"
    retries_left = state["max_retries"] - state["failures"]
    if retries_left < 0:
        return "error"
    return "limit" if at_limit else "continue"


class ByTable(LoopDemoAdapter):
    decide = staticmethod(decide_by_table)


class Reordered(LoopDemoAdapter):
    decide = staticmethod(decide_reordered)


# ------------------------------------------------------------------ code that misbehaves

def crashing_decide(state: State) -> str:
    """Raises KeyError as soon as one failure was counted."""
    if state["failures"] > 0:
        budget = {"retries": state["max_retries"]}
        return budget["retry_budget"]
    return loop.decide(state)


def crashing_late_decide(state: State) -> str:
    """Raises KeyError only from the second step on, once a failure was counted."""
    if state["steps"] >= 2 and state["failures"] > 0:
        return {"retries": state["max_retries"]}["retry_budget"]
    return loop.decide(state)


_calls = itertools.count()


def flaky_decide(state: State) -> str:
    """Remembers how often it was called: every other call turns a `continue` into `limit`."""
    decision = loop.decide(state)
    if decision == "continue" and next(_calls) % 2:
        return "limit"
    return decision


class Crashing(LoopDemoAdapter):
    decide = staticmethod(crashing_decide)


class CrashingLate(LoopDemoAdapter):
    decide = staticmethod(crashing_late_decide)


class Flaky(LoopDemoAdapter):
    decide = staticmethod(flaky_decide)


class MaybeDecision(LoopDemoAdapter):
    """abstract() reports a decision outside the spec's enum."""

    def abstract(self, concrete: State, params: dict[str, int]) -> dict[str, Any]:
        out = super().abstract(concrete, params)
        if out["decision"] == "needs_input":
            out["decision"] = "maybe"
        return out


class StepsAsText(LoopDemoAdapter):
    """abstract() reports steps as a str."""

    def abstract(self, concrete: State, params: dict[str, int]) -> dict[str, Any]:
        out = super().abstract(concrete, params)
        out["steps"] = str(out["steps"])
        return out


class ObservationAsDict(LoopDemoAdapter):
    """abstract() forgets to classify: it reports the concrete observation dict itself."""

    def abstract(self, concrete: State, params: dict[str, int]) -> dict[str, Any]:
        out = super().abstract(concrete, params)
        out["observation"] = concrete["observation"]
        return out


class MissingVar(LoopDemoAdapter):
    """abstract() forgets the failures counter."""

    def abstract(self, concrete: State, params: dict[str, int]) -> dict[str, Any]:
        out = super().abstract(concrete, params)
        del out["failures"]
        return out


class UnknownRule(LoopDemoAdapter):
    """step() reports a rule the spec's decide table does not have."""

    def step(self, action: str, concrete: State, choices: dict[str, Any]) -> tuple[State, str]:
        concrete, rule = super().step(action, concrete, choices)
        return concrete, ("retry" if rule == "continue" else rule)


# ------------------------------------------------------------------ adapters that fail to bind

class InitRaises(LoopDemoAdapter):
    def __init__(self) -> None:
        raise RuntimeError("no config for the adapter")


class NoStep:
    """Has everything but step()."""

    def concretize(self, state: State, params: dict[str, int]) -> State:
        return dict(state)

    def abstract(self, concrete: State, params: dict[str, int]) -> dict[str, Any]:
        return dict(concrete)


# ------------------------------------------------------------------ recording (to see which machine ran)

CALLS: list[str] = []


def recording_decide(state: State) -> str:
    CALLS.append(loop.decide(state))
    return CALLS[-1]


class Recording(LoopDemoAdapter):
    decide = staticmethod(recording_decide)


# ------------------------------------------------------------------ abstractions that lump classes together

_ids = st.text(min_size=1, max_size=12)
_LUMPED = dict(STRATEGIES)
_LUMPED["one_match"] = st.fixed_dictionaries(                                  # "some matches"
    {"ok": st.just(True), "matches": st.lists(_ids, min_size=1, max_size=6)},
    optional={"search_complete": st.just(True)})


class SomeMatches(LoopDemoAdapter):
    """The class one_match is drawn as "some matches": lists of any length >= 1."""

    def strategy(self, action: str, choice: str, label: Any) -> st.SearchStrategy:
        return _LUMPED[label]


_FAILED_SOMETIMES_OK = st.fixed_dictionaries({"ok": st.booleans(), "error": st.just("unavailable"),
                                              "matches": st.lists(st.just("task-003"), max_size=2)})


class FailedSometimesOk(LoopDemoAdapter):
    """The class failed sometimes carries ok true."""

    def strategy(self, action: str, choice: str, label: Any) -> st.SearchStrategy:
        return _FAILED_SOMETIMES_OK if label == "failed" else STRATEGIES[label]


_ZERO_OR_MANY = st.fixed_dictionaries({"ok": st.just(True),
                                       "matches": st.lists(st.just("task-003"), max_size=4).filter(
                                           lambda ms: len(ms) != 1)})


class ZeroOrMany(LoopDemoAdapter):
    """The class zero_matches is drawn as "not exactly one": the same decision (needs_input),
    but the code's observation is many_matches where the spec says zero_matches."""

    def strategy(self, action: str, choice: str, label: Any) -> st.SearchStrategy:
        return _ZERO_OR_MANY if label == "zero_matches" else STRATEGIES[label]
