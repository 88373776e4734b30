"""The `maximum` property kind: the exact worst case of an int expression over every reachable
state, with a shortest witness; with `at_most`, violated (shortest counterexample) past it.

The spec below is worked out by hand: `tick` runs while i < n, each time either using a tool
(tools + 1) or not, so the most tool uses is n, first reached after n transitions (every
tick a tool use), and tools + i peaks at 2n on that same run.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.explorer.regress import machine_for, still_violated
from haltproof.machine.spec import load_spec, parse_spec

pytestmark = pytest.mark.verdict

TOOLS = """\
machine: tools
params:
  n: {min: 2, max: 3}
vars:
  i: {type: int, min: 0, max: 5, init: 0}
  tools: {type: int, min: 0, max: 5, init: 0}
actions:
  tick:
    when: i < n
    choose:
      use: [tool, skip]
    do:
      - set: {i: i + 1, tools: 'tools + (1 if use == tool else 0)'}
terminal: i >= n
properties:
  most_tools:
    maximum: tools
  capped:
    maximum: tools + i
    at_most: 5
"""


def _runs(text: str = TOOLS, **options):
    return check_spec(parse_spec(textwrap.dedent(text), "tools.yaml"), Options(**options))


def _prop(run, name):
    (found,) = [p for p in run.properties if p.name == name]
    return found


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_the_exact_maximum_and_a_shortest_witness_on_both_engines(engine):
    small, large = _runs(engine=engine)
    assert (small.engine, large.engine) == (engine, engine)
    p = _prop(small, "most_tools")
    assert p.status == "holds"
    assert p.message == "maximum 2, first reached after 2 transitions"
    assert p.value == {"maximum": {"value": 2, "exact": True, "at_most": None, "witness_transitions": 2}}
    assert len(p.witness) == 2
    assert [s.state["tools"] for s in p.witness.steps] == [0, 1, 2]
    assert [s.choices for s in p.witness.steps[1:]] == [{"use": "tool"}] * 2
    capped = _prop(small, "capped")
    assert capped.status == "holds"
    assert capped.message == "maximum 4, within at_most 5, first reached after 2 transitions"
    assert _prop(large, "most_tools").message == "maximum 3, first reached after 3 transitions"


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_a_maximum_past_at_most_is_violated_with_a_shortest_counterexample(engine):
    _, large = _runs(engine=engine)
    p = _prop(large, "capped")
    assert p.status == "violated"
    assert p.message == ("reaches 6, more than at_most 5, after 3 transitions "
                         "(the highest is 6, first reached after 3 transitions)")
    assert len(p.trace) == 3
    assert [s.state["tools"] + s.state["i"] for s in p.trace.steps] == [0, 2, 4, 6]
    assert large.result == "violated"


def test_the_counterexample_is_the_first_state_over_the_bound_not_the_highest():
    text = TOOLS.replace("at_most: 5", "at_most: 1").replace("min: 2, max: 3", "min: 3, max: 3")
    (run,) = _runs(text)
    p = _prop(run, "capped")
    # tools + i > 1 first after 1 transition (a tool use: 2); the highest, 6, after 3
    assert p.message == ("reaches 2, more than at_most 1, after 1 transition "
                         "(the highest is 6, first reached after 3 transitions)")
    assert len(p.trace) == 1 and len(p.witness) == 3


def test_an_exploration_cut_short_knows_only_a_lower_bound():
    (run,) = _runs(TOOLS.replace("min: 2, max: 3", "min: 3, max: 3"), max_states=4, engine="scalar")
    p = _prop(run, "most_tools")
    assert p.status == "unknown"
    # the first four states in BFS order: i,tools = 0,0; 1,1; 1,0; 2,2
    assert p.message == ("not decided: at least 2 (first reached after 2 transitions); "
                         "the exploration stopped at --max-states")
    assert p.value["maximum"]["exact"] is False
    assert run.result == "incomplete"


def test_an_expression_that_cannot_be_evaluated_is_a_well_defined_finding():
    text = TOOLS.replace("maximum: tools\n", "maximum: 6 // (n - i)\n")
    small, _ = _runs(text, engine="scalar")
    assert _prop(small, "most_tools").status == "unknown"
    wd = _prop(small, "well_defined")
    assert wd.status == "violated"
    assert wd.message == "property most_tools (tools.yaml:17): integer division or modulo by zero"
    assert len(wd.trace) == 2        # i reaches n = 2 after two ticks


def test_every_report_format_shows_the_value(cli, tmp_path):
    spec = tmp_path / "tools.yaml"
    spec.write_text(TOOLS)
    text = cli("check", spec)
    assert text.code == 1
    assert "worst cases:" in text.out
    assert "n=2: most_tools 2 (a shortest witness takes 2 transitions); capped 4" in text.out
    report = json.loads(cli("check", spec, "--format", "json").out)
    most = [p for p in report["runs"][1]["properties"] if p["name"] == "most_tools"][0]
    assert most["maximum"] == {"value": 3, "exact": True, "at_most": None, "witness_transitions": 3}
    assert len(most["witness"]["steps"]) == 4
    markdown = cli("check", spec, "--format", "markdown").out
    assert "### Worst cases" in markdown
    assert "| `most_tools` | 3 (a shortest witness takes 3 transitions) |" in markdown
    html = cli("check", spec, "--format", "html").out
    assert "maximum 3, first reached after 3 transitions" in html


def test_a_bad_at_most_is_refused_with_its_line(check):
    ran = check(TOOLS.replace("at_most: 5", "at_most: tools"))
    assert ran.code == 2
    assert ran.err.endswith("bad.yaml:20: undefined name (did you mean 'tool'?): 'tools'\n")   # a param expression
    assert ran.out == ""


def test_an_emitted_test_replays_an_at_most_violation(tmp_path):
    spec = tmp_path / "tools.yaml"
    spec.write_text(TOOLS)
    _, large = check_spec(load_spec(str(spec)), Options())
    p = _prop(large, "capped")
    m = machine_for(load_spec(str(spec)), large.params)
    assert still_violated(m, "capped", p.trace.to_json(large.params)) == (
        True, "the recorded counterexample still breaks it: the state after step 3 has 6, more than at_most 5")
    spec.write_text(TOOLS.replace("at_most: 5", "at_most: 6"))
    fixed = machine_for(load_spec(str(spec)), large.params)
    assert still_violated(fixed, "capped", p.trace.to_json(large.params)) == (
        False, "every state of the run stays within at_most 6")


def test_the_documented_example_is_the_shipped_file_and_prints_what_the_docs_say(cli, monkeypatch):
    from conftest import ROOT
    doc = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
    shipped = (ROOT / "docs" / "examples" / "worst_case.yaml").read_text()
    assert "```yml\n" + shipped + "```" in doc     # yml: test_docs reads the `yaml` blocks as retry_loop
    assert "cd docs/examples && haltproof check worst_case.yaml     # exit 1" in doc
    monkeypatch.chdir(ROOT / "docs" / "examples")
    ran = cli("check", "worst_case.yaml")
    assert ran.code == 1
    assert ("worst_case.yaml turns=3: most_tool_runs 6 (a shortest witness takes 3 transitions); "
            "tool_budget 6") in ran.out
    assert "VIOLATED  tool_budget  reaches 5, more than at_most 4, after 3 transitions" in ran.out
    allows = "what the limits allow:\n  worst_case.yaml most_tool_runs: turns = 1, 2, 3 allows at most 2, 4, 6 tool_runs\n"
    assert allows in ran.out and "```\n" + allows + "```" in doc
    report = json.loads(cli("check", "worst_case.yaml", "-p", "turns=2", "--format", "json").out)
    budget = [p for p in report["runs"][0]["properties"] if p["name"] == "tool_budget"][0]
    assert budget["message"] == "maximum 4, within at_most 4, first reached after 2 transitions"
