"""Live binding: a state reached by a declared exception (`raises:` with `set:`) is read back
with the exception's values on top, whichever way haltproof gets a run into it.

The run a declared exception leaves cannot show the `set:` values itself (the code raised
before it could say `limit`): a replay must raise the exception again, a snapshot or copy
must remember them. Before this was so, exploring on from such a state read the run back as
`status=running` and blamed the code for nondeterminism (a false `bound_code` finding).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec

pytestmark = pytest.mark.verdict      # fast; the only tests that a kept run remembers its exception's set: values

ADAPTERS = '''\
import copy

from haltproof.machine.live import LiveAdapter


class OutOfSteps(Exception):
    """The code's own limit: raised before it can record anything."""


class Loop:
    def __init__(self, limit):
        self.limit, self.steps, self.status = limit, 0, "running"


class Replayed(LiveAdapter):
    def start(self, params, init):
        return Loop(params["N"])

    def step(self, live, action, choices):
        if action == "report":          # after the limit: the app reports it and stops
            live.status = "reported"
            return None
        if choices["tool"] == "ok":
            live.steps += 1
            live.status = "done"
            return None
        if live.steps >= live.limit:
            raise OutOfSteps(f"limit of {live.limit} steps reached")
        live.steps += 1
        return None

    def abstract(self, live):
        return {"steps": live.steps, "status": live.status}


class Snapshotted(Replayed):
    def snapshot(self, live):
        return copy.deepcopy(live)

    def restore(self, snap):
        return copy.deepcopy(snap)


class Copied(Replayed):
    copyable = True


class RaisesOnce(Replayed):
    """Nondeterministic: the limit is raised the first time only, so a replay of the path into
    the limit state does not raise it again."""

    raised = False

    def step(self, live, action, choices):
        if action == "work" and choices["tool"] == "fail" and live.steps >= live.limit:
            if RaisesOnce.raised:
                live.steps += 1
                return None
            RaisesOnce.raised = True
        return super().step(live, action, choices)
'''

SPEC = """\
machine: raises_then_reports
bind: raising:{adapter}
params:
  N: [2]
vars:
  steps: {{type: int, min: 0, max: N + 1, init: 0}}
  status: {{type: enum, values: [running, done, limit, reported], init: running}}
actions:
  work:
    when: status == running
    choose:
      tool: [ok, fail]
    raises:
      - class: raising.OutOfSteps
        match: 'limit of \\d+ steps'
        set: {{status: limit}}
  report:
    when: status == limit
terminal: status == done or status == reported
properties:
  stops:
    terminates: true
  reported_at_the_limit:
    reachable: status == reported and steps == N
"""


@pytest.fixture()
def spec(tmp_path: Path, monkeypatch):
    (tmp_path / "raising.py").write_text(ADAPTERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "raising", raising=False)
    yield lambda adapter, **options: _write(tmp_path, adapter, **options)
    sys.modules.pop("raising", None)


def _write(tmp_path: Path, adapter: str, **options) -> list:
    path = tmp_path / f"{adapter.lower()}.yaml"
    path.write_text(SPEC.format(adapter=adapter))
    return check_spec(load_spec(path), Options(**options))


@pytest.mark.parametrize("adapter, binding", [("Replayed", "replay"), ("Snapshotted", "snapshot"),
                                              ("Copied", "snapshot")])
def test_a_state_a_declared_exception_reached_is_explored_on_from(spec, adapter, binding) -> None:
    (run,) = spec(adapter)
    found = {p.name: p for p in run.properties}
    assert (run.result, run.binding) == ("proved", binding), found["bound_code"].message
    # running 0, 1, 2; done 1, 2, 3; limit 2 (the exception's set: on the run left at steps=2); reported 2
    assert (run.stats["states"], run.stats["transitions"]) == (8, 7)
    assert [(s.choices, s.state) for s in found["reported_at_the_limit"].witness.steps] == [
        ({}, {"steps": 0, "status": "running"}),
        ({"tool": "fail"}, {"steps": 1, "status": "running"}),
        ({"tool": "fail"}, {"steps": 2, "status": "running"}),
        ({"tool": "fail"}, {"steps": 2, "status": "limit"}),
        ({}, {"steps": 2, "status": "reported"})]


def test_a_replay_that_does_not_raise_the_exception_again_is_nondeterminism(spec) -> None:
    """The values are those the replay's own exception gives, not remembered ones: a replay
    that no longer raises is in `status=running`, and said so (the determinism check, which
    would see it first, off)."""
    (run,) = spec("RaisesOnce", determinism="off")
    finding = {p.name: p for p in run.properties}["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith("action report with no choices: the live run for this state is in state steps=3 "
                                      "status=running: replaying its path of 3 transitions from start() leads "
                                      "elsewhere: the bound code is nondeterministic")
