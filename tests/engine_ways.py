"""A one-instance spec checked on every way a spec can run: the scalar engine's generated loop,
its plain loop (the one for independence properties and bound code) and the vector engine,
each down to the trace, so that a bug in one of them cannot hide behind the others. Shared by
the tests of the engines, the code generators and the analyses."""

from __future__ import annotations

import copy
import textwrap

from haltproof.explorer.check import check_machine, prepare
from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.machine.compiled import Machine
from haltproof.machine.spec import parse_spec

WAYS = ("generated", "plain", "vector")


def machine_of(text: str) -> Machine:
    """The one machine of a spec's text (dedented), with no code bound."""
    [m] = prepare(parse_spec(textwrap.dedent(text), "kills.yaml"), Options(model_only=True))
    return m


def plain_loop(m: Machine) -> Machine:
    """The same machine without its generated loop: the scalar engine's plain loop runs it."""
    out = copy.copy(m)
    out.sweep = None
    return out


def each_way(text: str, vector: bool = True, **options) -> dict[str, RunResult]:
    """The check of a one-instance spec on every engine and loop, keyed by WAYS; all of them
    must agree on the counts, coverage, bounds and every property's verdict and trace.
    vector=False: a spec the vector engine does not run (`//` that may divide by zero)."""
    m = machine_of(text)
    runs = {"generated": check_machine(m, Options(engine="scalar", **options)),
            "plain": check_machine(plain_loop(m), Options(engine="scalar", **options))}
    if vector:
        runs["vector"] = check_machine(m, Options(engine="vector", **options))
    first = run_summary(runs["generated"])
    for way, r in runs.items():
        assert run_summary(r) == first, way
    return runs


def run_summary(r: RunResult) -> dict:
    """What every way must agree on: the result, counts, coverage, bounds and each property's
    verdict, message, traces and subject."""
    return {"result": r.result, "stats": {k: v for k, v in r.stats.items() if k != "seconds"},
            "coverage": r.coverage, "bounds": {k: (b["value"], b["message"]) for k, b in r.bounds.items()},
            "properties": [(p.name, p.status, p.message, p.trace and p.trace.to_json(),
                            p.other_trace and p.other_trace.to_json(), p.subject and p.subject.to_json())
                           for p in r.properties]}


def prop(r: RunResult, name: str):
    """The one property of a run named `name`."""
    [p] = [p for p in r.properties if p.name == name]
    return p


def states(trace, var: str) -> list:
    """The values of `var` along a trace, its first state included."""
    return [s.state[var] for s in trace.steps]
