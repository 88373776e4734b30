"""specs/gate_chain.yaml: proved over its param grid by exploring the real gate code, and
the broken gate code of tests/gate_mutants.py caught with shortest counterexamples."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

import gate_mutants
from conftest import SPECS
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.cli.main import main
from haltproof.harness.gate_binding import CALLS, RESERVATIONS, WHITELIST
from haltproof.harness.gates import GateContext, RegexGate, ToolCall
from haltproof.harness.ledger import ObservationLedger
from haltproof.machine.spec import load_spec
from haltproof.machine.text import counted

# one pytest-xdist worker for the whole module (scripts/test: --dist loadgroup):
# the module's gate_chain sweeps (the `reports` fixture) run once
pytestmark = pytest.mark.xdist_group("gate_chain")

GATE_CHAIN = SPECS / "gate_chain.yaml"
TESTS = Path(__file__).resolve().parent.parent
SHIPPED_BIND = "bind: haltproof.harness.gate_binding:GateChainAdapter"
CODE = "code: haltproof.harness.gate_binding:GateChainAdapter"
GRID = 32            # B, N, A, T, P: two values each


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


def _json(*args: str) -> tuple[int, dict]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["check", str(GATE_CHAIN), "--format", "json", *args])
    return code, json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def reports() -> dict[str, tuple[int, dict]]:
    return {"code": _json(), "model": _json("--model")}


def _key(run: dict) -> tuple:
    return tuple(sorted(run["params"].items()))


@pytest.mark.slow
def test_every_property_proved_on_the_real_code_over_the_grid(reports):
    code, report = reports["code"]
    assert code == 0 and report["result"] == "proved"
    assert len(report["runs"]) == GRID
    for run in report["runs"]:
        assert run["explored"] == CODE and run["result"] == "proved"
        assert run["binding"] == "replay"          # live binding, copyable = False
        statuses = {p["name"]: p["status"] for p in run["properties"]}
        assert set(statuses.values()) == {"holds"}, (run["params"], statuses)
        assert {"bound_code", "budget_never_exceeded", "denial_names_first_denying_gate", "short_circuit",
                "terminates_within_T", "refusals_within_min_A_T"} <= set(statuses)
        # recency denial is a property (and reachable) exactly where an expired turn exists
        p = run["params"]
        assert ("recency_denial_reachable" in statuses) == (p["T"] >= p["N"] + 2)


@pytest.mark.slow
def test_the_doc_states_the_measured_size(reports):
    doc = (SPECS.parent / "docs" / "tutorials" / "gate-chain.md").read_text()
    runs = reports["code"][1]["runs"]
    states = [r["stats"]["states"] for r in runs]
    total = f"{sum(states):,} states and {sum(r['stats']['transitions'] for r in runs):,} transitions"
    assert f"{total} ({min(states)} to {max(states)} states per combination)" in doc.replace("\n", " ")


@pytest.mark.slow
def test_bounds_are_the_derived_ones(reports):
    _, report = reports["code"]
    for run in report["runs"]:
        p = run["params"]
        props = {x["name"]: x for x in run["properties"]}
        assert props["terminates_within_T"]["message"].startswith(f"every run ends within {counted(p['T'], 'transition')}")
        assert f"(the longest takes {p['T']})" in props["terminates_within_T"]["message"]
        assert f"(the longest takes {min(p['A'], p['T'])})" in props["refusals_within_min_A_T"]["message"]


@pytest.mark.slow
def test_every_gate_denies_somewhere(reports):
    _, report = reports["code"]
    for run in report["runs"]:
        props = {p["name"]: p for p in run["properties"]}
        for gate in ("whitelist", "regex", "per_tool", "budget") + (("recency",) if "recency_denial_reachable" in props else ()):
            witness = props[f"{gate}_denial_reachable"]["witness"]
            assert witness["steps"][-1]["state"]["last"] == f"deny_{gate}", (run["params"], gate)


@pytest.mark.slow
def test_code_and_model_explore_the_same_space(reports):
    model_code, model = reports["model"]
    assert model_code == 0
    by_params = {_key(r): r for r in model["runs"]}
    for run in reports["code"][1]["runs"]:
        m = by_params[_key(run)]
        assert m["explored"] == "model"
        for stat in ("states", "transitions", "terminal_states", "max_depth"):
            assert run["stats"][stat] == m["stats"][stat], (run["params"], stat)
        assert run["coverage"] == m["coverage"]


def test_the_real_chain_is_evaluated_for_every_state_and_choice():
    pins = {"B": 3, "N": 1, "A": 2, "T": 4, "P": 2}
    gate_mutants.CHAIN_CALLS.clear()
    spec = load_spec(_bound_copy("gate_mutants:Recording"))
    (run,) = check_spec(spec, Options(pins=pins, determinism="full"))
    assert run.result == "proved" and run.explored == "code: gate_mutants:Recording"
    running = run.stats["states"] - run.stats["terminal_states"]
    proposals = run.stats["transitions"] - running            # every running state has one finish
    replayed = sum(1 for sc in spec.scenarios if sc.params == pins for st in sc.steps if st.action != "finish")
    assert replayed == 7                                       # the scenarios of these params run the code too
    assert len(gate_mutants.CHAIN_CALLS) == 2 * (proposals + replayed)   # twice each: determinism is checked
    # by default a spec this size (its declared space is over 100,000 states) samples: each
    # running state's first transition runs twice, the others once
    gate_mutants.CHAIN_CALLS.clear()
    (auto,) = check_spec(spec, Options(pins=pins))
    assert auto.determinism is not None and auto.determinism["mode"] == "sample"
    assert len(gate_mutants.CHAIN_CALLS) == proposals + replayed + auto.determinism["extra_calls"]
    assert set(gate_mutants.CHAIN_CALLS) == {"chain", "whitelist", "regex", "recency", "per_tool_budget", "budget"}


@pytest.mark.slow
def test_conformance_of_code_and_spec(cli):
    ran = cli("conform", GATE_CHAIN, "--seed", "5")
    assert ran.code == 0, ran.out
    assert "code and spec agree on every step" in ran.out


def test_the_spec_call_classes_are_the_harness_calls():
    """The spec's `cost`, `listed` and `safe` fields say what the harness does with each class."""
    spec = load_spec(GATE_CHAIN)
    regex = RegexGate()
    for action in spec.actions:
        for name, cs in action.choices:
            if name not in ("call", "stale"):
                continue
            fields = {f: i for f, (_, i) in cs.fields.items()}
            for item in cs.items:
                label = item[0]
                tool = CALLS[label]["tool"]
                assert item[fields["tool"]] == tool
                assert item[fields["cost"]] == RESERVATIONS[tool]
                assert item[fields["listed"]] == (tool in WHITELIST)
                verdict = regex.evaluate(ToolCall(tool, CALLS[label]["args"], 1), GateContext(1, ObservationLedger()))
                assert item[fields["safe"]] == verdict.allow, label


# ------------------------------------------------------------------ mutants of the gate code

_COPIES: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _copies_dir(tmp_path_factory):
    _COPIES.append(tmp_path_factory.mktemp("gate_chain_copies"))
    yield
    _COPIES.pop()


def _bound_copy(bind: str) -> Path:
    """specs/gate_chain.yaml with its bind line naming another adapter."""
    text = GATE_CHAIN.read_text()
    assert text.count(SHIPPED_BIND) == 1
    path = _COPIES[-1] / f"{bind.replace(':', '_')}.yaml"
    path.write_text(text.replace(SHIPPED_BIND, f"bind: {bind}"))
    return path


BASE = {"B": 2, "N": 1, "A": 2, "T": 3, "P": 2}

# adapter, params (over BASE), the property, the shortest counterexample's length, and its last
# step: action, choices, and the decision it produced (the var `last`)
MUTANTS = [
    ("BudgetAtLeast", {}, "budget_denies_only_calls_that_do_not_fit", 1, ("propose", {"call": "grep"}, "deny_budget")),
    ("BudgetAtLeast", {"B": 3}, "budget_denies_only_calls_that_do_not_fit", 2, (None, None, "deny_budget")),
    ("BudgetReachedOnly", {}, "budget_never_exceeded", 2, (None, None, "allow")),
    ("PerToolAtLeast", {}, "per_tool_gate_denies_only_calls_over_the_tool_budget", 1,
     ("propose", {"call": "grep"}, "deny_per_tool")),
    ("LastDecision", {}, "no_unlisted_tool_dispatched", 1, ("propose", {"call": "invented"}, "allow")),
    ("LastDecision", {}, "no_dangerous_argument_dispatched", 1, ("propose", {"call": "rm_rf"}, "allow")),
    ("LastDecision", {}, "no_expired_read_dispatched", 3, ("extend_expired", {"stale": "read"}, "allow")),
    ("NoShortCircuit", {}, "short_circuit", 1, ("propose", {"call": "rm_rf"}, "deny_regex")),
    ("UncountedRefusal", {}, "refusal_counted", 1, ("propose", {"call": "rm_rf"}, "deny_regex")),
    ("UncountedRefusal", {"A": 1}, "refusals_within_min_A_T", None, (None, None, None)),
    ("Unclipped", {}, "ledger_counts_what_was_shown", 1, ("propose", {"call": "read", "out": "over"}, "allow")),
    ("Unclipped", {}, "budget_never_exceeded", 1, ("propose", {"call": "grep", "out": "over"}, "allow")),
    ("RecencyStrict", {}, "visible_read_not_refused_for_recency", 2, ("extend_visible", {"call": "read"}, "deny_recency")),
    ("RecencyStrict", {"N": 2, "T": 4}, "visible_read_not_refused_for_recency", 3,
     ("extend_visible", {"call": "read"}, "deny_recency")),
    ("RecencyLenient", {}, "no_expired_read_dispatched", 3, ("extend_expired", {"stale": "read"}, "allow")),
    ("RecencyLenient", {"N": 2, "T": 4}, "no_expired_read_dispatched", 4, ("extend_expired", {"stale": "read"}, "allow")),
]


@pytest.mark.parametrize("adapter, pins, prop, length, last", MUTANTS,
                         ids=[f"{m[0]}-{m[2]}-{'-'.join(f'{k}{v}' for k, v in m[1].items()) or 'base'}"
                              for m in MUTANTS])
def test_mutant_is_caught_with_a_shortest_trace(adapter, pins, prop, length, last):
    params = {**BASE, **pins}
    (run,) = check_spec(load_spec(_bound_copy(f"gate_mutants:{adapter}")), Options(pins=params))
    assert run.result == "violated" and run.explored == f"code: gate_mutants:{adapter}"
    result = {p.name: p for p in run.properties}[prop]
    assert result.status == "violated", (prop, result.message)
    if length is None:                  # a bound: the counterexample is the longest run
        assert result.message.startswith("a run takes ") and f"more than {min(params['A'], params['T'])}" in result.message
        return
    trace = result.trace
    assert len(trace) == length, [(s.action, s.choices, s.rule) for s in trace.steps]
    action, choices, rule = last
    final = trace.steps[-1]
    if action is not None:
        assert final.action == action
    for k, v in (choices or {}).items():
        assert final.choices[k] == v
    assert final.state["last"] == rule


def test_shortest_means_no_shorter_run_breaks_it():
    """BFS: the budget mutant's counterexample at B=3 needs two calls, because no single
    call of cost <= 2 fits a budget of 3 exactly; at B=2 one call of cost 2 does."""
    for b, n in ((2, 1), (3, 2)):
        (run,) = check_spec(load_spec(_bound_copy("gate_mutants:BudgetAtLeast")),
                            Options(pins={**BASE, "B": b}, properties=["budget_denies_only_calls_that_do_not_fit"]))
        (prop,) = [p for p in run.properties if p.name == "budget_denies_only_calls_that_do_not_fit"]
        assert len(prop.trace) == n
        *_, before, final = prop.trace.steps
        assert before.state["tokens"] + {"read": 1, "grep": 2, "fetch": 2}[final.choices["call"]] == b


def test_a_copied_run_counts_its_own_tool_calls():
    """The shipped adapter replays, but its runs are copyable: a call run on a deepcopy is
    `dispatched` there, and the run it was copied from does not see it (tools that closed
    over the original environment would count in the wrong run: a silent wrong proof for a
    subclass with `copyable = True`)."""
    import copy
    from haltproof.harness.gate_binding import GateChainAdapter
    adapter = GateChainAdapter()
    run = adapter.start({"A": 1, "B": 2, "N": 1, "P": 2, "T": 3}, {})
    twin = copy.deepcopy(run)
    adapter.step(twin, "propose", {"call": adapter.representative("propose", "call", "read"),
                                   "out": adapter.representative("propose", "out", "full")})
    assert (adapter.abstract(twin)["dispatched"], adapter.abstract(twin)["tokens"]) == (True, 1)
    assert (adapter.abstract(run)["dispatched"], adapter.abstract(run)["tokens"]) == (False, 0)
