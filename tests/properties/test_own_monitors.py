"""Each property is judged over its own monitors only: another property's monitors unroll the
machine's cycles (a phase that changes once), so judged over every monitor a lasso would go
round once more than the machine needs. Every property's trace in a spec with several
monitored properties must be the trace it gives alone (properties/liveness.py, OwnView)."""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")

HEAD = textwrap.dedent("""\
    machine: toggle
    vars:
      x: {type: int, min: 0, max: 1, init: 0}
      done: {type: bool, init: false}
    actions:
      flip:
        when: not done
        do:
          - set: {x: 1 - x}
      stop:
        when: not done and x == 1
        do:
          - set: {done: true}
    terminal:
      when: done
    properties:
    """)

PROPS = {
    "reaches_done": "{existence: done}",                               # a lasso: flip forever
    "stops_after_a_flip": "{response: {trigger: x == 1, response: done}}",   # a lasso too
    "first_flip_first": "{precedence: {cause: x == 1, effect: done}}",  # its phase changes once
    "never_done_after_one": "{absence: done, scope: {after: x == 1}}",  # violated after 2 steps
    "flipped_before_done": {"always": "not done or once(x == 1)"},
    "runs_end": "{terminates: true}",
}


def spec(names: list[str]) -> str:
    lines = [f"  {n}: {PROPS[n]}" if isinstance(PROPS[n], str) else f"  {n}: {{always: '{PROPS[n]['always']}'}}"
             for n in names]
    return HEAD + "\n".join(lines) + "\n"


def traces(names: list[str], engine: str) -> dict[str, tuple]:
    (r,) = check_spec(parse_spec(spec(names), "toggle.yaml"), Options(engine=engine))
    assert r.engine == engine
    return {p.name: (p.status, p.message.split(";")[0],
                     None if p.trace is None else (p.trace.kind, p.trace.loop_start,
                                                   [(s.action, s.choices, s.state) for s in p.trace.steps]))
            for p in r.properties if p.name in names}


@pytest.mark.parametrize("engine", ENGINES)
def test_each_property_gives_the_trace_it_gives_alone(engine: str) -> None:
    together = traces(list(PROPS), engine)
    for name in PROPS:
        assert together[name] == traces([name], engine)[name], name


@pytest.mark.parametrize("engine", ENGINES)
def test_the_lasso_goes_round_the_machine_s_cycle_from_the_start(engine: str) -> None:
    """Exactly: flip, flip back, from the initial state (not from the state where the precedence
    monitor's phase has settled, two transitions in)."""
    got = traces(list(PROPS), engine)
    for name in ("reaches_done", "runs_end"):
        status, _, (kind, loop_start, steps) = got[name]
        assert (status, kind, loop_start) == ("violated", "lasso", 0), name
        assert [(a, s) for a, _, s in steps] == [(None, {"x": 0, "done": False}), ("flip", {"x": 1, "done": False}),
                                                 ("flip", {"x": 0, "done": False})], name
    status, _, (kind, loop_start, steps) = got["stops_after_a_flip"]
    # its own monitor reads a state one transition late: the obligation opens in state 2
    assert (status, kind, loop_start, len(steps)) == ("violated", "lasso", 2, 5)
