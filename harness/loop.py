"""The chapter-2 loop (seed S1, "Dezhurny"): step = action; deciding follows the observation.

One run is repeated steps: choose an action, execute it, record the observation, decide.
Deciding is not a step. `decide` reads only the last observation, the counters and the
limits, never the scenario name (only the scripted environment reads that).

Run a scenario and print the seed's five-line step format:

    python -m haltproof.harness.loop --scenario permanent_error
    python -m haltproof.harness.loop --scenario limit --policy my_stop_policy.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from haltproof.machine import strict_json
from haltproof.machine.inputs import TooLarge, check_number, read_bounded

MAX_STEPS = 5
MAX_RETRIES = 1
STEPS_RANGE = (1, 5)        # the course's limits: 1 <= max_steps <= 5
RETRIES_RANGE = (0, 1)      # and 0 <= max_retries <= 1
TERMINALS = ("success", "needs_input", "error", "limit")
MAX_POLICY_BYTES = 1024 * 1024    # the bundled one is 41 bytes (docs/how-to/binding.md)

State = dict[str, Any]
Observation = dict[str, Any]


class StopPolicyError(ValueError):
    """The stop policy (its file or its values) is not usable."""


LIMITS = {"max_steps": STEPS_RANGE, "max_retries": RETRIES_RANGE}


def check_limit(field: str, value: Any) -> int:
    """`value` if it is an int in the field's range; else StopPolicyError naming the field
    and the range (a bool or a float is not a count)."""
    lo, hi = LIMITS[field]
    try:
        return check_number(value, field, int, least=lo, most=hi)
    except ValueError as exc:
        raise StopPolicyError(str(exc)) from None


def check_limits(max_steps: Any, max_retries: Any) -> None:
    """Raise StopPolicyError naming the field and its allowed range."""
    check_limit("max_steps", max_steps)
    check_limit("max_retries", max_retries)


def load_stop_policy(path: str | Path | None = None) -> dict[str, int]:
    """Read `02_stop_policy.json` (the bundled one by default): max_steps and max_retries."""
    if path is None:
        text = resources.files("harness").joinpath("02_stop_policy.json").read_text(encoding="utf-8")
        shown = "02_stop_policy.json"
    else:
        shown = str(path)
        try:
            text = read_bounded(path, MAX_POLICY_BYTES, "a stop policy")
        except TooLarge as exc:
            raise StopPolicyError(f"{shown}: {exc}") from None
        except OSError as exc:
            raise StopPolicyError(f"{shown}: cannot read the stop policy: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise StopPolicyError(f"{shown}: the stop policy is not UTF-8 text (byte {exc.start})") from None
    try:
        data = strict_json.loads(text)
    except json.JSONDecodeError as exc:
        raise StopPolicyError(f"{shown}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except strict_json.DuplicateKeyError as exc:
        raise StopPolicyError(f"{shown}: {exc}") from None
    if not isinstance(data, dict):
        raise StopPolicyError(f"{shown}: the stop policy must be a JSON object with max_steps and max_retries")
    unknown = sorted(set(data) - {"max_steps", "max_retries"})
    if unknown:
        raise StopPolicyError(f"{shown}: unknown field {unknown[0]!r} (allowed: max_steps, max_retries)")
    for field in ("max_steps", "max_retries"):
        if field not in data:
            raise StopPolicyError(f"{shown}: missing field {field!r}")
    try:
        check_limits(data["max_steps"], data["max_retries"])
    except StopPolicyError as exc:
        raise StopPolicyError(f"{shown}: {exc}") from None
    return {"max_steps": data["max_steps"], "max_retries": data["max_retries"]}


def new_state(scenario: str = "one_match", max_steps: int = MAX_STEPS,
              max_retries: int = MAX_RETRIES) -> State:
    check_limits(max_steps, max_retries)
    return {"phase": "start", "steps": 0, "failures": 0, "done": False, "terminal": None,
            "max_steps": max_steps, "max_retries": max_retries, "observation": None,
            "scenario": scenario}


def planner_stub(state: State) -> dict[str, str]:
    return {"name": "read_task_cards"}


def update_state(state: State, observation: Observation) -> None:
    state["observation"] = observation
    state["steps"] += 1
    if not observation["ok"]:
        state["failures"] += 1
    state["phase"] = "observed"


def decide(state: State) -> str:
    observation = state["observation"]
    if not observation["ok"]:
        if state["failures"] > state["max_retries"]:
            return "error"
    else:
        if observation.get("search_complete", True):
            matches = observation["matches"]
            if len(matches) == 1:
                return "success"
            return "needs_input"
    if state["steps"] >= state["max_steps"]:
        return "limit"
    return "continue"


def loop_step(state: State, observation: Observation,
              decide: Callable[[State], str] = decide) -> str:
    """One pass after the action ran: record the observation, decide, maybe stop."""
    update_state(state, observation)
    decision = decide(state)
    state["done"] = decision != "continue"
    if state["done"]:
        state["terminal"] = decision
    return decision


# ---------------------------------------------------------------- the scripted environment

UNAVAILABLE = "error: the task cards are unavailable"
SCENARIOS: dict[str, list[Observation]] = {
    # Each script is served step by step; past its end the last observation repeats.
    "one_match": [{"ok": True, "matches": ["task-003"]}],
    "two_matches": [{"ok": True, "matches": ["task-003", "task-003-copy"]}],
    "temporary_error": [{"ok": False, "error": UNAVAILABLE}, {"ok": True, "matches": ["task-003"]}],
    "permanent_error": [{"ok": False, "error": UNAVAILABLE}],
    "limit": [{"ok": True, "matches": [f"candidate-00{n}"], "search_complete": False, "next_page": n + 1}
              for n in range(1, 6)],
    "missing_file": [{"ok": False, "error": "error: task_cards.json not found"}],
    "no_matches": [{"ok": True, "matches": [], "search_complete": True}],
}


def perform_action(action: dict[str, str], state: State) -> Observation:
    """The environment: the scenario's observation for this step (it alone reads the name)."""
    script = SCENARIOS[state["scenario"]]
    return dict(script[min(state["steps"], len(script) - 1)])


def run_loop(scenario: str = "one_match", max_steps: int = MAX_STEPS,
             max_retries: int = MAX_RETRIES) -> dict[str, Any]:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    state = new_state(scenario, max_steps, max_retries)
    events = []
    while not state["done"]:
        action = planner_stub(state)
        observation = perform_action(action, state)
        decision = loop_step(state, observation)
        events.append({"step": state["steps"], "state": state["phase"], "action": action,
                       "observation": observation, "decision": decision})
    return {"terminal": state["terminal"], "state": state, "events": events}


def format_events(events: list[dict[str, Any]]) -> str:
    """The seed's five-line format, one block per step."""
    lines = []
    for e in events:
        lines += [f"step: {e['step']}", f"state: {e['state']}", f"action: {e['action']['name']}",
                  f"observation: {json.dumps(e['observation'], ensure_ascii=False)}",
                  f"decision: {e['decision']}"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m haltproof.harness.loop",
                                 description="Run the chapter-2 loop on a scripted scenario.")
    ap.add_argument("--scenario", default="one_match", choices=sorted(SCENARIOS))
    ap.add_argument("--policy", metavar="FILE", help="stop policy JSON (default: the bundled 02_stop_policy.json)")
    ap.add_argument("--max-steps", type=int, help="override max_steps from the policy")
    ap.add_argument("--max-retries", type=int, help="override max_retries from the policy")
    args = ap.parse_args(argv)
    try:
        policy = load_stop_policy(args.policy)
        for option, field in (("--max-steps", "max_steps"), ("--max-retries", "max_retries")):
            value = getattr(args, field)
            if value is not None:       # the option, not the policy file, is wrong: say so
                try:
                    policy[field] = check_limit(field, value)
                except StopPolicyError as exc:
                    raise StopPolicyError(f"{option}: {exc}") from None
        result = run_loop(args.scenario, policy["max_steps"], policy["max_retries"])
    except StopPolicyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(format_events(result["events"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
