"""The budgeted policy runner (seed S2): one JSON action at a time, validated, authorized,
counted and stopped by the executor; real tools on SQLite; three real policies.

- gate.py         validate_action, authorize, check_budget, finalize: the one gate
- transitions.py  the run's pure state transitions (what specs/budget_runner.yaml checks)
- tools.py        search, document, stock, reserve on SQLite tables; the effect ledger
- store.py        durable run state (runs, observations)
- runner.py       Runner: the loop that composes them, start and resume
- policies.py     DeterministicPolicy, LocalJSONPolicy, HTTPJSONPolicy
- policy_server.py  a real HTTP policy service on loopback (contract tests, `serve`)
- binding.py      the adapter that binds specs/budget_runner.yaml to this code
- cli.py          python -m haltproof.harness.budget run | resume | serve
"""

from .gate import GATE, Facts, Gate, authorize, check_budget, facts_of, finalize, validate_action
from .policies import (DeterministicPolicy, HTTPJSONPolicy, LocalJSONPolicy, PolicyConfigError,
                       PolicyResponseError)
from .runner import Runner
from .tools import Faults, Shop, connect

__all__ = ["GATE", "Facts", "Gate", "authorize", "check_budget", "facts_of", "finalize", "validate_action",
           "DeterministicPolicy", "HTTPJSONPolicy", "LocalJSONPolicy", "PolicyConfigError",
           "PolicyResponseError", "Runner", "Faults", "Shop", "connect"]
