"""docs/how-to/trees.md: its commands run with the exit codes it gives, and its worst-case table
is the one haltproof computes for examples/trees/spec/planner.yaml."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

PAGE = (ROOT / "docs" / "how-to" / "trees.md").read_text()
TREE = ROOT / "examples" / "trees" / "spec" / "planner.yaml"
COLUMNS = ["rounds", "research_turns", "draft_turns", "token_budget"]


def worst_case_table(report: dict) -> list[str]:
    """The page's table: per combination of the agents' limits, each agent's worst case and the total."""
    rows = ["| " + " | ".join(COLUMNS) + " | planner | researcher | writer | in all | longest run |",
            "|" + "---:|" * (len(COLUMNS) + 5)]
    for run in report["runs"]:
        b = {k: v["value"] for k, v in run["bounds"].items()}
        rows.append("| " + " | ".join(str(run["params"][c]) for c in COLUMNS) + " | " + " | ".join(
            str(b[k]) for k in ("planner_calls", "researcher.searches", "writer.drafts", "model_calls",
                                "transitions")) + " |")
    return rows


@pytest.mark.verdict
@pytest.mark.slow
def test_the_worst_case_table_is_what_haltproof_computes(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = cli("check", TREE, "--format", "json")
    assert r.code == 0
    table = worst_case_table(r.json())
    assert "\n".join(table) in PAGE


@pytest.mark.slow
@pytest.mark.parametrize("command,code", [
    (line.split("  #")[0].strip(), int(m.group(1)) if (m := re.search(r"# exit (\d)", line)) else 0)
    for block in re.findall(r"```bash\n(.*?)```", PAGE, re.S) for line in block.splitlines()
    if line.startswith("haltproof ")])
def test_the_pages_commands_exit_as_it_says(cli, monkeypatch, command, code):
    monkeypatch.chdir(ROOT)
    assert cli(*command.split()[1:]).code == code


@pytest.mark.verdict
def test_the_pages_nested_trace_is_what_check_prints(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    shown = re.findall(r"```\n(  violated as expected at_most.*?)```", PAGE, re.S)[0]
    r = cli("check", TREE, "-p", "rounds=3", "-p", "research_turns=3", "-p", "draft_turns=2", "-p", "token_budget=16",
            "--verbose")
    printed = r.out.splitlines()
    start = printed.index(shown.splitlines()[0])
    lines = [line for line in shown.splitlines() if line.strip() != "..."]
    assert printed[start:start + len(lines)] == lines
    assert ("  bounds: transitions at most 30, model_calls at most 16, planner_calls at most 6, researcher.searches "
            "at most 9, writer.drafts at most 6") in printed


SOLVER = ROOT / "examples" / "trees" / "recursive" / "solver.yaml"


@pytest.mark.verdict
def test_the_depth_table_is_what_haltproof_computes(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = cli("check", SOLVER, "--format", "json")
    assert r.code == 0
    rows = ["| depth | model calls in all | longest run | states |", "|---:|---:|---:|---:|"]
    rows += [f"| {run['params']['depth']} | {run['bounds']['model_calls']['value']} | "
             f"{run['bounds']['transitions']['value']} | {run['stats']['states']} |" for run in r.json()["runs"]]
    assert "\n".join(rows) in PAGE
    team = next(p for p in r.json()["runs"][-1]["properties"] if p["name"] == "at_most_10_model_calls")
    assert (team["status"], team.get("expected"), team["maximum"]["value"]) == ("violated", True, 22)


@pytest.mark.verdict
def test_the_pages_trace_at_the_depth_bound_is_what_check_prints(cli, tmp_path):
    text = SOLVER.read_text()
    (tmp_path / "solver.yaml").write_text(text[:text.index("  give_up:")] + text[text.index("  merge:"):])
    r = cli("check", tmp_path / "solver.yaml", "-p", "depth=2", "--property", "stops", "--verbose")
    assert r.code == 1
    shown = re.findall(r"```\n(  VIOLATED  stops.*?)```", PAGE, re.S)[0].splitlines()
    printed = [line for line in r.out.splitlines() if not line.startswith("      0     (initial)")]
    start = printed.index(shown[0])
    assert printed[start:start + len(shown)] == shown
