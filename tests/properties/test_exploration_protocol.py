"""The analyses read an explored graph through one protocol (properties/exploration.py), and
both engines answer it alike.

The termination and vacuity analyses used to ask which engine ran (`getattr(ex, "vm")`,
`getattr(ex, "precomputed")`) and import the engines. Now each engine implements
`ExploredGraph`; these tests hold both engines' answers to every method equal on the
repository's specs, and keep the analyses from probing an engine again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare
from haltproof.explorer.engine import explore
from haltproof.explorer.vengine import explore_vector
from haltproof.machine.spec import load_spec, parse_spec
from haltproof.machine.vectorize import NotVectorizable, vectorize
from haltproof.properties import termination, vacuity

from conftest import ROOT

SPECS = sorted((ROOT / "specs").rglob("*.yaml")) + [ROOT / "docs" / "examples" / "retry_loop.yaml"]
CUT_SHORT_BY_SPEC_ERRORS = {"decide_counts_as_step.yaml", "retry_past_last_step.yaml"}
# Deadlocks at x = 3 and x = 4 (the shallowest: 0, 1, 4); `hop`'s rule `never` never fires.
STUCK = """
machine: stuck
vars:
  x: {type: int, min: 0, max: 5, init: 0}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
  hop:
    when: x == 1
    do:
      - decide: x
        rules:
          - {name: never, when: x > 1, then: 5}
          - {name: jump, then: 4}
terminal: x == 5
properties:
  ends: {terminates: true}
"""


def _machines(spec):
    return prepare(spec, Options(model_only=True))[:4]


def _answers(ex) -> dict:
    """Every protocol answer, in a form comparable across engines."""
    m = ex.machine
    order = ex.topological_order()
    deciding = [k for k, a in enumerate(m.spec.actions) if a.decide is not None]
    single = [k for k, a in enumerate(m.actions) if len(a.choice_names) == 1 and len(a.combos) >= 2
              and k in ex.fired_by_action]
    return {
        "first_deadlock": ex.first_deadlock(),
        "first_deepest": ex.first_deepest(),
        "acyclic": order is not None,
        "lasso": termination.find_lasso(ex) if order is None else None,
        "rule_facts": {k: ex.rule_facts(k, _dead(ex, k)) for k in deciding},
        "choice_groups": ex.choice_groups(single),
        "notices": [n.to_json() for n in vacuity.notices(ex, vacuity.coverage(ex))],
    }


def _dead(ex, k: int) -> list[int]:
    """The decide rules of action k that never fired (what `rule_facts` is asked about)."""
    fired = ex.fired_by_action.get(k, {})
    return [i for i, r in enumerate(ex.machine.spec.actions[k].decide.rules) if not fired.get(r.name)]


@pytest.mark.parametrize("path", SPECS + [None], ids=lambda p: "stuck" if p is None else str(p.relative_to(ROOT)))
def test_both_engines_answer_the_protocol_alike(path: Path | None) -> None:
    compared = 0
    for m in _machines(parse_spec(STUCK, "stuck.yaml") if path is None else load_spec(path)):
        try:
            vm = vectorize(m)
        except NotVectorizable:
            continue
        scalar, vector = explore(m, max_states=20_000), explore_vector(vm, max_states=20_000)
        if not (scalar.complete and vector.complete) or any(n in scalar.findings for n in m.spec.builtins):
            continue                # the analyses run only on a complete, well-defined exploration
        assert _answers(scalar) == _answers(vector)
        compared += 1
    # two mutants' own spec errors (well_defined) cut every combination short: the analyses
    # do not run there, so there is nothing to compare; any other spec must compare something
    assert compared > 0 or (path is not None and path.name in CUT_SHORT_BY_SPEC_ERRORS), path


def test_the_protocol_is_exercised_where_it_matters() -> None:
    """The specs compared include a deadlock, a cycle and a dead rule, so the comparison above
    is not a comparison of empty answers."""
    seen = {"deadlock": False, "cycle": False, "dead rule": False}
    for spec in [load_spec(path) for path in SPECS] + [parse_spec(STUCK, "stuck.yaml")]:
        for m in _machines(spec):
            ex = explore(m, max_states=20_000)
            if not ex.complete or any(n in ex.findings for n in m.spec.builtins):
                continue
            seen["deadlock"] |= ex.first_deadlock() is not None
            seen["cycle"] |= ex.topological_order() is None
            seen["dead rule"] |= any(n.kind == "rule" for n in vacuity.notices(ex, vacuity.coverage(ex)))
    assert seen == {"deadlock": True, "cycle": True, "dead rule": True}


def test_the_analyses_never_probe_an_engine() -> None:
    """No getattr/hasattr in properties/: what an analysis needs is a protocol method."""
    import haltproof.properties as layer         # by the package: the mutation stage has no ROOT/properties,
    probes = []                                   # and a glob of a missing folder would pass on nothing
    paths = sorted(Path(layer.__file__).parent.glob("*.py"))
    assert len(paths) > 5
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
                probes.append(f"{path.name}:{node.lineno}")
    assert probes == []


LIVENESS_SPECS = [ROOT / "docs" / "examples" / "agent_liveness.yaml", ROOT / "docs" / "examples" / "retry_loop.yaml",
                  ROOT / "tests" / "fixtures" / "fairness" / "retry.yaml"]


@pytest.mark.parametrize("path", LIVENESS_SPECS + [None],
                         ids=lambda p: "stuck" if p is None else str(p.relative_to(ROOT)))
def test_both_engines_answer_the_liveness_methods_alike(path: Path | None) -> None:
    """run_ends, open_states and the fair bad-run search they feed (properties/liveness.py),
    on graphs with deadlocks, cycles and liveness monitors; the vector engine keeps its
    edges, as check does for a liveness pattern."""
    from haltproof.properties import liveness
    compared = 0
    spec = parse_spec(STUCK, "stuck.yaml") if path is None else load_spec(path)
    for m in _machines(spec):
        scalar = explore(m, max_states=20_000)
        vector = explore_vector(vectorize(m), max_states=20_000, keep_edges=True)
        assert scalar.complete and vector.complete
        ends = scalar.run_ends()
        assert ends.tolist() == vector.run_ends().tolist()
        assert ends.any()
        masks = {"terminates": ~(np.asarray(scalar.terminal) != 0)}
        for name in m.obligations:
            masks[name] = scalar.open_states(name)
            assert masks[name].tolist() == vector.open_states(name).tolist(), name
        for name, mask in masks.items():
            assert liveness.bad_run(scalar, mask, []) == liveness.bad_run(vector, mask, []), name
            assert (liveness.bad_run(scalar, mask, liveness.assumptions(scalar))
                    == liveness.bad_run(vector, mask, liveness.assumptions(vector))), name
        compared += 1
    assert compared > 0
