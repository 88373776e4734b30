"""What runs the user's code, and `--no-code`, which runs none of it (docs/how-to/trust.md).

A spec names code in four ways: `bind:` (imports a module, creates and calls an adapter),
`raises:` (imports each declared exception's module), `framework:` (imports its target to
build the spec) and a Python model (`module:Class`). Here each is a module whose import
leaves a file beside it, so a test can tell whether any command imported it: with
`--no-code` (or HALTPROOF_NO_CODE=1, `run_code=False`, `--haltproof-no-code`) none may,
whatever the subcommand; a spec checkable on its own stages is checked on them, one that
is not is refused, exit 2, saying why. `--model` refuses the same specs (issue 26,
findings 16 and 17): an action without stages was taken to change nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import haltproof
from haltproof.machine.errors import SpecError

pytestmark = pytest.mark.verdict

# A bound module: its import leaves NAME.imported beside it. Its adapter does what the stages of
# SPEC do, so that a check that does import it (without --no-code) is proved.
BOUND = '''\
import pathlib
pathlib.Path(__file__).with_name(__name__ + ".imported").write_text("imported")

from haltproof.machine.binding import Adapter as _Adapter


class Adapter(_Adapter):
    def concretize(self, state, params):
        return dict(state)

    def step(self, action, concrete, choices):
        tries, tool = concrete["tries"] + 1, choices["tool"]
        status = "done" if tool == "ok" else "running" if tries < 2 else "failed"
        return {"tries": tries, "status": status}, None

    def abstract(self, concrete, params):
        return dict(concrete)


class Model:                       # named as a Python model: never imported with --no-code
    pass
'''
RAISED = '''\
import pathlib
pathlib.Path(__file__).with_name(__name__ + ".imported").write_text("imported")


class Boom(Exception):
    pass
'''
SPEC = """\
machine: trusting
bind: {mod}:Adapter
vars:
  tries: {{type: int, min: 0, max: 2, init: 0}}
  status: {{type: enum, values: [running, failed, done], init: running}}
actions:
  call:
    when: status == running
    choose:
      tool: [ok, fail]
    raises:
      - {{class: {mod}_raised.Boom, rule: gave_up}}
    do:
      - set: {{tries: tries + 1}}
      - decide: status
        rules:
          - {{name: finished, when: tool == ok, then: done}}
          - {{name: retry, when: tries < 2, then: running}}
          - {{name: gave_up, then: failed}}
terminal: status != running
properties:
  stops:
    terminates: true
scenarios:
  first_try:
    steps:
      - {{action: call, choices: {{tool: ok}}}}
    expect: {{status: done}}
"""
TRACE = {"steps": [{"state": {"tries": 0, "status": "running"}, "action": None, "choices": {}, "rule": None},
                   {"state": {"tries": 1, "status": "done"}, "action": "call", "choices": {"tool": "ok"},
                    "rule": "finished"}]}


class Code:
    """A bound spec in its own folder, with the two modules it names (unique names: a module
    imported by an earlier test stays in sys.modules, and would hide an import here)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.mod = f"hp_trust_{folder.name.replace('-', '_')}"
        (folder / f"{self.mod}.py").write_text(BOUND)
        (folder / f"{self.mod}_raised.py").write_text(RAISED)
        self.spec = folder / "trusting.yaml"
        self.spec.write_text(SPEC.format(mod=self.mod))
        self.trace = folder / "trace.json"
        self.trace.write_text(json.dumps(TRACE))

    def imported(self) -> list[str]:
        """The modules whose import ran, by the files they left (and sys.modules)."""
        names = [self.mod, f"{self.mod}_raised"]
        return [n for n in names if (self.folder / f"{n}.imported").exists() or n in sys.modules]


@pytest.fixture
def code(tmp_path, monkeypatch) -> Code:
    monkeypatch.chdir(tmp_path)
    made = Code(tmp_path)
    yield made
    for name in (made.mod, f"{made.mod}_raised"):
        sys.modules.pop(name, None)


NOT_RUN = "the spec's stages only (--no-code: the bound code did not run)"


# ---------------------------------------------------------------- each command imports nothing

def test_check_imports_the_bound_modules_without_no_code(code, cli):
    """The control: the marker files do tell an import (bind: and raises: both import)."""
    ran = cli("check", code.spec)
    assert ran.code == 0, ran.out + ran.err
    assert "checked the bound code (state binding)" in ran.out
    assert code.imported() == [code.mod, f"{code.mod}_raised"]


@pytest.mark.parametrize("command,shows", [
    (["check"], NOT_RUN),
    (["check", "--model"], NOT_RUN),
    (["check", "--format", "json"], '"by": "--no-code"'),
    (["check", "-j", "2"], NOT_RUN),
    (["graph", "--format", "json"], '"nodes"'),
    (["export"], "mdp"),
    (["replay", "--scenario", "first_try"], "# ok: 1 steps, final state tries=1 status=done"),
    (["replay", "--trace", "trace.json"], "# ok: 1 steps, final state tries=1 status=done"),
])
def test_no_code_imports_nothing_and_checks_the_stages(code, cli, command, shows):
    ran = cli(command[0], code.spec, *command[1:], "--no-code")
    assert (ran.code, ran.err) == (0, ""), ran.out + ran.err
    assert shows in ran.out
    assert code.imported() == []


def test_the_environment_variable_is_no_code(code, cli, monkeypatch):
    monkeypatch.setenv("HALTPROOF_NO_CODE", "1")
    for command in (["check"], ["graph"], ["export"], ["replay", "--scenario", "first_try"]):
        ran = cli(command[0], code.spec, *command[1:])
        assert ran.code == 0, (command, ran.err)
    assert code.imported() == []
    monkeypatch.setenv("HALTPROOF_NO_CODE", "maybe")
    ran = cli("check", code.spec)
    assert (ran.code, ran.err) == (2, "error: HALTPROOF_NO_CODE='maybe': give 1 (run no code of the spec's) or 0\n")
    monkeypatch.setenv("HALTPROOF_NO_CODE", "0")
    assert cli("check", code.spec).code == 0
    assert code.imported() == [code.mod, f"{code.mod}_raised"]


def test_conform_runs_the_code_so_no_code_refuses_it(code, cli):
    ran = cli("conform", code.spec, "--no-code")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {code.spec}: conform runs the bound code to compare it with the spec, and "
                       "--no-code runs none of the spec's code\n")
    assert code.imported() == []


def test_the_python_api_imports_nothing_with_run_code_false(code):
    spec = haltproof.load_spec(code.spec, run_code=False)
    assert spec.bind == f"{code.mod}:Adapter"
    report = haltproof.check(code.spec, run_code=False)
    assert report.result == "proved"
    assert report.to_json()["runs"][0]["code_not_run"]["by"] == "--no-code"
    assert code.imported() == []


def test_a_python_model_is_refused_before_it_is_imported(code, cli):
    ran = cli("check", f"{code.mod}:Model", "--no-code")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {code.mod}:Model: a Python model is code: checking it imports and runs "
                       f"{code.mod}:Model, and --no-code runs none of the spec's code\n")
    assert code.imported() == []


def test_a_python_model_class_is_refused_by_the_api():
    from pymodel_base import Base
    with pytest.raises(SpecError) as refused:
        haltproof.check(Base, run_code=False)
    assert str(refused.value) == ("pymodel_base:Base: a Python model is code: checking it imports and runs "
                                  "pymodel_base:Base, and --no-code runs none of the spec's code")


# ---------------------------------------------------------------- what the stages cannot say

DECLARATION = """\
# a declaration: its target is imported while the file is loaded, to build the spec
framework: langgraph
target: {mod}:graph
input: {{messages: []}}
"""


@pytest.mark.parametrize("option", ["--no-code", "--model"])
def test_a_framework_declaration_is_refused_before_its_target_is_imported(code, cli, option):
    """Before: `--model` imported the target and checked one state with a no-op action (a false
    cycle, or a proof); and load_spec imported it whatever the mode."""
    path = code.folder / "declared.yaml"
    path.write_text(DECLARATION.format(mod=code.mod))
    why = "--no-code runs none of the spec's code" if option == "--no-code" else "--model explores the spec's own stages"
    ran = cli("check", path, option)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {path.name}:2: a langgraph declaration has no stages of its own: it becomes a spec by "
                       f"importing its target {code.mod}:graph and running it, and {why}: 'langgraph'\n")
    assert code.imported() == []
    with pytest.raises(SpecError):
        haltproof.load_spec(path, run_code=False)
    assert code.imported() == []


def _without_stages(code: Code, name: str = "nostages.yaml") -> Path:
    """SPEC with its action's stages cut: only the bound code says what `call` does."""
    text = code.spec.read_text()
    text = text[:text.index("    raises:\n")] + text[text.index("terminal:"):]
    path = code.folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("option,why", [
    ("--model", "--model explores the spec's own stages"),
    ("--no-code", "--no-code runs none of the spec's code")])
def test_an_action_without_stages_is_refused_where_the_code_does_not_run(code, cli, option, why):
    """Before: --model took `call` to change nothing, a cycle of one transition (exit 1), where
    the code stops after at most two calls."""
    path = _without_stages(code)
    assert cli("check", path).code == 0        # the code, checked, stops
    message = (f"error: {path.name}:7: action call has no stages of its own (no do:): only the bound code "
               f"{code.mod}:Adapter says what it does, and {why}\n")
    for command in (["check"], ["replay", "--scenario", "first_try"], ["graph"]):
        if command[0] == "graph" and option == "--model":
            continue                             # graph has no --model: it draws the code's graph
        ran = cli(command[0], path, *command[1:], option)
        assert (ran.code, ran.out, ran.err) == (2, "", message), command


def test_a_property_that_holds_on_one_state_is_not_proved_by_model(code, cli):
    """Every action a no-op: --model explored the one initial state and proved an invariant
    the code breaks."""
    path = _without_stages(code)
    path.write_text(path.read_text().replace("  stops:\n    terminates: true\n",
                                             "  never_done:\n    always: status != done\n"))
    assert cli("check", path).code == 1
    ran = cli("check", path, "--model")
    assert ran.code == 2 and "action call has no stages of its own" in ran.err


def test_conform_refuses_an_action_without_stages(code, cli, monkeypatch):
    monkeypatch.syspath_prepend(str(code.folder))
    path = _without_stages(code)
    ran = cli("conform", path)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {path.name}:7: action call has no stages of its own (no do:): only the bound code "
                       f"{code.mod}:Adapter says what it does, and conform compares the bound code with the "
                       "spec's own stages\n")


# ---------------------------------------------------------------- the pytest plugin

@pytest.mark.slow          # two pytest runs: seconds each
def test_the_pytest_plugin_collects_without_importing_the_code(code, pytester):
    """`pytest --haltproof --collect-only` imported the bound code to make its items."""
    for f in code.folder.iterdir():
        if f.suffix in (".py", ".yaml"):
            (pytester.path / f.name).write_text(f.read_text())
    marker = pytester.path / f"{code.mod}.imported"
    ran = pytester.runpytest("--haltproof", "--haltproof-no-code", "--collect-only", "-q",
                             "-p", "no:cacheprovider", "trusting.yaml")
    assert ran.ret == 0, ran.stdout.str()
    assert [ln for ln in ran.stdout.lines if "::" in ln] == [
        "trusting.yaml::domains", "trusting.yaml::well_defined", "trusting.yaml::stops",
        "trusting.yaml::scenario:first_try"]
    assert not marker.exists() and not (pytester.path / f"{code.mod}_raised.imported").exists()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HALTPROOF_NO_CODE", "1")
        assert pytester.runpytest("--haltproof", "--collect-only", "-q", "-p", "no:cacheprovider",
                                  "trusting.yaml").ret == 0
    assert not marker.exists()
    imported = pytester.runpytest("--haltproof", "--collect-only", "-q", "-p", "no:cacheprovider", "trusting.yaml")
    assert imported.ret == 0 and marker.exists()       # the control: without either it imports


# ---------------------------------------------------------------- docs/how-to/trust.md

TRUST_DOC = (Path(__file__).resolve().parent.parent.parent / "docs" / "how-to" / "trust.md").read_text()


def test_the_trust_doc_commands_print_what_it_shows(cli, monkeypatch):
    import re
    import shlex
    root = Path(__file__).resolve().parent.parent.parent
    monkeypatch.chdir(root)
    commands = [ln for block in re.findall(r"```bash\n(.*?)```", TRUST_DOC, re.S) for ln in block.splitlines()]
    shown = re.findall(r"```text\n(.*?)```", TRUST_DOC, re.S)
    assert len(commands) == 3 and len(shown) == 2
    outputs = []
    for command in commands:
        words = shlex.split(command)
        with monkeypatch.context() as env:
            while "=" in words[0]:
                env.setenv(*words.pop(0).split("=", 1))
            ran = cli(*words[1:])
        outputs.append((ran.code, re.sub(r"\d+\.\d\d s", "0.01 s", ran.out), ran.err))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 0 and outputs[0][1].startswith(shown[0])
    assert outputs[2] == (2, "", shown[1])
