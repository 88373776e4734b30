"""The GitHub Action (action.yml + scripts/action-run), the pre-commit hook
(.pre-commit-hooks.yaml) and their page, docs/how-to/ci.md.

The action's script runs here as the runner would run it: its inputs as INPUT_* variables
(the defaults action.yml declares, then the test's), GITHUB_OUTPUT and GITHUB_STEP_SUMMARY
files, the haltproof of this environment on PATH, no install step, no network. The hook
runs the way pre-commit runs it: the files its `files` and `types` select, after its
entry and args.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from ci_reports import assert_valid, without_expect
from conftest import ROOT

ACTION_TEXT = (ROOT / "action.yml").read_text()
ACTION = yaml.safe_load(ACTION_TEXT)
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
SCRIPT = ROOT / "scripts" / "action-run"
DOC = (ROOT / "docs" / "how-to" / "ci.md").read_text()
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
BIN = Path(sys.executable).parent                 # this environment's python and haltproof
OUTPUTS = {"exit-code", "result", "sarif", "junit", "json"}


def _var(name: str) -> str:
    return "INPUT_" + name.upper().replace("-", "_")


def _steps() -> dict[str, dict]:
    return {step["name"]: step for step in ACTION["runs"]["steps"]}


# -- action.yml ------------------------------------------------------------------------------

def test_action_is_composite_and_every_input_referenced_is_declared_and_used():
    assert ACTION["runs"]["using"] == "composite"
    declared = set(ACTION["inputs"])
    referenced = set(re.findall(r"\$\{\{[^}]*?\binputs\.([\w-]+)", ACTION_TEXT))
    assert referenced == declared == {"paths", "args", "python-version", "install", "sarif", "junit",
                                      "json", "upload-sarif", "sarif-category", "fail-on-incomplete", "run-code"}
    for name, spec in ACTION["inputs"].items():
        assert spec["description"].strip() and spec["required"] is False, name
        assert isinstance(spec["default"], str), name          # GitHub passes every input as text
    ids = {step.get("id") for step in ACTION["runs"]["steps"]}
    for step_id, _ in re.findall(r"\bsteps\.([\w-]+)\.outputs\.([\w-]+)", ACTION_TEXT):
        assert step_id in ids
    assert {name: out["value"] for name, out in ACTION["outputs"].items()} == {
        name: "${{ steps.check.outputs." + name + " }}" for name in OUTPUTS}


def test_action_steps_pass_inputs_by_env_to_the_one_script():
    steps = _steps()
    assert list(steps) == ["Set up Python", "Install haltproof", "Check the specs", "Upload SARIF to code scanning"]
    setup = steps["Set up Python"]
    assert setup["uses"] == "actions/setup-python@v5"
    assert setup["if"] == "${{ inputs.python-version != '' }}"
    assert setup["with"] == {"python-version": "${{ inputs.python-version }}"}
    install, check = steps["Install haltproof"], steps["Check the specs"]
    assert install["run"] == '"$GITHUB_ACTION_PATH/scripts/action-run" install'
    assert check["run"] == '"$GITHUB_ACTION_PATH/scripts/action-run" check' and check["id"] == "check"
    # No input is pasted into shell text (a value could inject a command): env only.
    for step in (install, check):
        assert step["shell"] == "bash" and "${{" not in step["run"]
        for var, value in step["env"].items():
            name = var.removeprefix("INPUT_").lower().replace("_", "-")
            assert value == "${{ inputs." + name + " }}", var
    # Each variable the script reads is set by the step that runs its subcommand.
    text = SCRIPT.read_text()
    def body(fn):
        return text[text.index(f"{fn}() {{"):text.index("\n}\n", text.index(f"{fn}() {{"))]
    def read(fn):
        return {"INPUT_" + v for v in re.findall(r"\b(?:need|boolean) ([A-Z_]+)", body(fn))}
    assert set(install["env"]) == read("cmd_install") == {"INPUT_INSTALL"}
    assert set(check["env"]) == read("cmd_check") | read("code_mode") == {_var(n) for n in (
        "paths", "args", "sarif", "junit", "json", "upload-sarif", "fail-on-incomplete", "run-code")}
    assert os.access(SCRIPT, os.X_OK)                  # the action runs it by its path
    upload = steps["Upload SARIF to code scanning"]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"
    assert upload["if"] == ("${{ !cancelled() && inputs.upload-sarif == 'true' "
                            "&& steps.check.outputs.sarif != '' }}")
    assert upload["with"] == {"sarif_file": "${{ steps.check.outputs.sarif }}",
                              "category": "${{ inputs.sarif-category }}"}


# -- scripts/action-run, run as the runner runs it ------------------------------------------------

def _env(tmp_path: Path, inputs: dict[str, str], path: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env["PATH"] = path or f"{BIN}{os.pathsep}{env['PATH']}"
    env["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "step_summary.md")
    for name, spec in ACTION["inputs"].items():
        env[_var(name)] = spec["default"]
    for name, value in inputs.items():
        assert name in ACTION["inputs"], name
        env[_var(name)] = value
    return env


class Action:
    def __init__(self, ran: subprocess.CompletedProcess, tmp_path: Path):
        self.code, self.out, self.err = ran.returncode, ran.stdout, ran.stderr
        out = tmp_path / "github_output"
        self.outputs = dict(line.split("=", 1) for line in out.read_text().splitlines()) if out.exists() else {}
        summary = tmp_path / "step_summary.md"
        self.summary = summary.read_text() if summary.exists() else None


def run_action(tmp_path: Path, command: str = "check", path: str | None = None,
               event: tuple[str, dict | str] | None = None, **inputs: str) -> Action:
    """scripts/action-run COMMAND in tmp_path; inputs by their action.yml names, `-` as `_`;
    `event`: the workflow's event (its name and payload, as GitHub passes them)."""
    assert (BIN / "haltproof").exists(), "the tests need haltproof installed in their environment"
    env = _env(tmp_path, {k.replace("_", "-"): v for k, v in inputs.items()}, path)
    if event is not None:
        env["GITHUB_EVENT_NAME"] = event[0]
        env["GITHUB_EVENT_PATH"] = str(tmp_path / "event.json")
        payload = event[1]
        (tmp_path / "event.json").write_text(payload if isinstance(payload, str) else json.dumps(payload))
    ran = subprocess.run([str(SCRIPT), command], cwd=tmp_path, env=env, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    return Action(ran, tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A user's repository: a proved spec, a caught mutant, a violated copy, an invalid spec."""
    (tmp_path / "specs" / "mutants").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "loop_demo.yaml", tmp_path / "specs")
    shutil.copy(ROOT / "specs" / "mutants" / "retry_past_last_step.yaml", tmp_path / "specs" / "mutants")
    mutant = (ROOT / "specs" / "mutants" / "limit_before_observation.yaml").read_text()
    (tmp_path / "violated.yaml").write_text(without_expect(mutant))
    (tmp_path / "bad.yaml").write_text("machine: x\nbogus: 1\n")
    return tmp_path


PIN = "-p max_steps=2 -p max_retries=0"


def test_proved_spec_passes_with_summary_outputs_and_valid_reports(repo, validator):
    ran = run_action(repo, paths="specs/loop_demo.yaml", args=PIN)
    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    assert lines[0] == ("haltproof check specs/loop_demo.yaml -p max_steps=2 -p max_retries=0 --format github "
                        "--sarif haltproof.sarif --junit haltproof.xml --json haltproof.json")
    assert lines[-1] == "haltproof: 1 run: 1 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved"
    assert "::error" not in ran.out
    assert ran.summary.startswith("## haltproof: proved\n\n1 run: 1 proved")
    assert ran.outputs == {"exit-code": "0", "result": "proved", "sarif": "haltproof.sarif",
                           "junit": "haltproof.xml", "json": "haltproof.json"}
    log = json.loads((repo / "haltproof.sarif").read_text())
    assert_valid(validator, log)
    assert log["runs"][0]["results"] == []
    assert json.loads((repo / "haltproof.json").read_text())["result"] == "proved"
    assert ET.parse(repo / "haltproof.xml").getroot().get("failures") == "0"


def test_violated_spec_fails_with_error_annotations_and_a_sarif_result(repo, validator):
    ran = run_action(repo, paths="violated.yaml", args="-p max_steps=3 -p max_retries=0")
    assert ran.code == 1, ran.err
    errors = [line for line in ran.out.splitlines() if line.startswith("::error ")]
    assert [e.split("::")[1] for e in errors] == [
        f"error file=violated.yaml,line={n},title=haltproof%3A {p} violated" for n, p in (
            (76, "limit_only_when_observation_allows_going_on"), (86, "complete_search_always_decides"),
            (89, "final_answer_on_last_step_kept"))]
    assert ran.summary.startswith("## haltproof: violated\n")
    assert ran.outputs["exit-code"] == "1" and ran.outputs["result"] == "violated"
    assert ran.outputs["sarif"] == "haltproof.sarif"                 # so the upload step runs
    log = json.loads((repo / "haltproof.sarif").read_text())
    assert_valid(validator, log)
    assert sorted(r["ruleId"] for r in log["runs"][0]["results"]) == [
        "complete_search_always_decides", "final_answer_on_last_step_kept",
        "limit_only_when_observation_allows_going_on"]


def test_caught_mutants_pass(repo):
    ran = run_action(repo, paths="specs")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[-1] == ("haltproof: 15 runs: 10 proved, 5 violated as expected, 0 failed, "
                                        "0 incomplete -> proved")


def test_invalid_spec_exits_2_annotated_at_its_line_and_no_stale_report_is_left(repo):
    (repo / "haltproof.sarif").write_text("a stale report of an earlier run")
    ran = run_action(repo, paths="bad.yaml")
    assert ran.code == 2
    assert ("::error file=bad.yaml,line=2,title=haltproof%3A invalid input (exit 2)::unknown key in the spec "
            "(allowed: ") in ran.out
    assert "error: bad.yaml:2: unknown key in the spec" in ran.err      # haltproof's own message, shown
    assert ran.summary.startswith("## haltproof: invalid input (exit 2)\n\nhaltproof checked nothing; its message:"
                                  "\n\n<pre>\nerror: bad.yaml:2: unknown key in the spec")
    assert ran.summary.endswith("'bogus'\n</pre>\n")
    assert not (repo / "haltproof.sarif").exists()                    # nothing for the upload step
    assert ran.outputs == {"exit-code": "2", "result": "error", "sarif": "", "junit": "", "json": ""}


def test_the_error_annotation_escapes_the_file_and_the_message(repo):
    (repo / "50%,odd.yaml").write_text('machine: x\n"bo%gus": 1\n')
    ran = run_action(repo, paths="'50%,odd.yaml'")
    assert ran.code == 2
    assert ("::error file=50%25%2Codd.yaml,line=2,title=haltproof%3A invalid input (exit 2)::unknown key in the "
            "spec (allowed: ") in ran.out
    assert ran.out.rstrip().endswith("vars): 'bo%25gus'")


def test_error_without_a_line_and_html_in_the_summary_is_escaped(repo):
    ran = run_action(repo, paths="'specs/<b>.yaml'")
    assert ran.code == 2
    assert "::error title=haltproof%3A invalid input (exit 2)::specs/<b>.yaml: no such file or directory\n" in ran.out
    assert "<pre>\nerror: specs/&lt;b&gt;.yaml: no such file or directory\n</pre>" in ran.summary


@pytest.mark.slow
def test_incomplete_fails_unless_fail_on_incomplete_is_false(repo):
    ran = run_action(repo, paths="specs/loop_demo.yaml", args="--max-states 3")
    assert ran.code == 3
    assert "::error file=specs/loop_demo.yaml,title=haltproof%3A incomplete::" in ran.out
    assert ran.outputs["exit-code"] == "3" and ran.outputs["result"] == "incomplete"
    assert "::warning title=haltproof%3A incomplete" not in ran.out

    lenient = run_action(repo, paths="specs/loop_demo.yaml", args="--max-states 3", fail_on_incomplete="false")
    assert lenient.code == 0
    assert lenient.outputs["exit-code"] == "3" and lenient.outputs["result"] == "incomplete"
    assert lenient.out.rstrip().endswith(
        "::warning title=haltproof%3A incomplete::The check stopped at a bound and proves nothing; "
        "this step passes only because fail-on-incomplete is false.")
    assert lenient.summary.endswith("\n**fail-on-incomplete is false:** this step passes, but an incomplete "
                                    "check proves nothing.\n")
    # ... and the input changes nothing else: a violation still fails.
    assert run_action(repo, paths="violated.yaml", args="-p max_steps=3 -p max_retries=0",
                      fail_on_incomplete="false").code == 1


@pytest.mark.slow
def test_paths_and_args_are_split_like_a_command_line_and_never_expanded(repo):
    (repo / "my specs").mkdir()
    shutil.copy(ROOT / "specs" / "loop_demo.yaml", repo / "my specs" / "loop demo.yaml")
    ran = run_action(repo, paths="'my specs/loop demo.yaml'", args=f"  {PIN}\n --property 'terminates' ")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0].startswith(
        r"haltproof check my\ specs/loop\ demo.yaml -p max_steps=2 -p max_retries=0 --property terminates --format")
    for literal, given in [("specs/*.yaml", "specs/*.yaml"), ("$HOME/x.yaml", "$HOME/x.yaml"),
                           ("$(touch pwned).yaml", "'$(touch pwned).yaml'"), ("`touch pwned`", '"`touch pwned`"')]:
        ran = run_action(repo, paths=given)
        assert ran.code == 2 and f"::{literal}: no such file or directory\n" in ran.out, ran.out
    assert not (repo / "pwned").exists()


def test_no_report_files_when_their_inputs_are_empty(repo):
    ran = run_action(repo, paths="specs/loop_demo.yaml", args=PIN, sarif="", junit="", json="",
                     upload_sarif="false")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0] == "haltproof check specs/loop_demo.yaml -p max_steps=2 -p max_retries=0 --format github"
    assert ran.outputs == {"exit-code": "0", "result": "proved", "sarif": "", "junit": "", "json": ""}
    assert not list(repo.glob("haltproof.*"))


@pytest.mark.parametrize("inputs,message", [
    ({"paths": ""}, "input paths is empty: name your spec files or folders (haltproof check with no path "
                    "checks its own bundled seed specs, not your repository's)"),
    ({"paths": " \n "}, "input paths is empty"),
    ({"args": "--format markdown"}, "input args: --format: the action sets --format itself"),
    ({"args": "--form=json"}, "input args: --form=json: the action sets --format itself"),
    ({"args": "-p max_steps=2 --sarif x.sarif"}, "input args: --sarif: the action sets --sarif itself"),
    ({"args": "--jun x.xml"}, "input args: --jun: the action sets --junit itself"),
    ({"args": "--json=r.json"}, "input args: --json=r.json: the action sets --json itself"),
    ({"args": "-p 'max_steps=2"}, "input args: No closing quotation: \"-p 'max_steps=2\""),
    ({"paths": '"specs'}, "input paths: No closing quotation"),
    ({"fail_on_incomplete": "yes"}, "input fail-on-incomplete must be true or false, got 'yes'"),
    ({"upload_sarif": "True"}, "input upload-sarif must be true or false, got 'True'"),
    ({"sarif": ""}, "input upload-sarif is true but input sarif is empty: name the SARIF file, "
                    "or set upload-sarif: false"),
])
def test_bad_inputs_are_refused_before_anything_runs(repo, inputs, message):
    inputs = dict(inputs)
    ran = run_action(repo, paths=inputs.pop("paths", "specs/loop_demo.yaml"), **inputs)
    assert ran.code == 2
    assert ran.out.startswith("::error title=haltproof action::" + message), ran.out
    assert f"error: {message}" in ran.err
    assert ran.summary is None and ran.outputs == {}              # haltproof never ran


def test_an_unset_input_variable_is_refused(repo):
    env = _env(repo, {"paths": "specs/loop_demo.yaml"})
    del env["INPUT_FAIL_ON_INCOMPLETE"]
    ran = subprocess.run([str(SCRIPT), "check"], cwd=repo, env=env, capture_output=True, text=True)
    assert ran.returncode == 2
    assert "INPUT_FAIL_ON_INCOMPLETE is not set" in ran.stderr
    bare = subprocess.run([str(SCRIPT)], cwd=repo, env=env, capture_output=True, text=True)
    assert bare.returncode == 2 and bare.stderr.startswith("usage: scripts/action-run install|check")


@pytest.fixture
def fake_pip(tmp_path: Path) -> tuple[Path, Path]:
    """A `python` first on PATH that logs `-m pip ...` instead of installing (no network)."""
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "pip.log"
    (shim / "python").write_text(f'#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then echo "$@" >> {log}; '
                                 f'exit 0; fi\nexec {shlex.quote(sys.executable)} "$@"\n')
    (shim / "python").chmod(0o755)
    return shim, log


@pytest.mark.parametrize("install,target", [("", str(ROOT)), ("haltproof==0.2.0", "haltproof==0.2.0"),
                                            ("none", None)])
def test_install_pip_installs_the_actions_own_checkout_by_default(tmp_path, fake_pip, install, target):
    shim, log = fake_pip
    ran = run_action(tmp_path, "install", path=f"{shim}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
                     install=install)
    assert ran.code == 0, ran.err
    if target is None:
        assert not log.exists()
        assert ran.out == f"install: none: using the haltproof already on PATH: {BIN / 'haltproof'}\n"
    else:
        assert log.read_text() == f"-m pip install --disable-pip-version-check {target}\n"
        assert ran.out.splitlines()[0] == f"::group::pip install {target}"


def test_install_that_leaves_no_haltproof_on_path_fails(tmp_path, fake_pip):
    shim, log = fake_pip
    system = os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())
    if shutil.which("haltproof", path=system):
        pytest.skip("a haltproof is installed system-wide")
    ran = run_action(tmp_path, "install", path=f"{shim}{os.pathsep}{system}", install="haltproof==0.2.0")
    assert ran.code == 2
    assert "error: pip installed 'haltproof==0.2.0' but no haltproof command is on PATH" in ran.err


# -- .pre-commit-hooks.yaml, run the way pre-commit runs a hook ----------------------------------

HOOK_KEYS = {"id", "name", "entry", "language", "files", "exclude", "types", "types_or", "exclude_types",
             "args", "pass_filenames", "require_serial", "additional_dependencies", "always_run", "stages",
             "verbose", "description", "alias", "log_file", "minimum_pre_commit_version", "language_version",
             "fail_fast"}


def _tags(path: str) -> set[str]:
    """The identify tags pre-commit matches `types` against, for the files used here."""
    suffix = Path(path).suffix
    return {"file", "text"} | {".yaml": {"yaml"}, ".yml": {"yaml"}, ".py": {"python"}}.get(suffix, set())


def precommit_command(hook: dict, changed: list[str]) -> list[str] | None:
    """The command pre-commit runs for `hook` on a commit changing `changed`; None: skipped."""
    files = [f for f in changed
             if re.search(hook.get("files", ""), f) and not re.search(hook.get("exclude", "^$"), f)
             and set(hook.get("types", ["file"])) <= _tags(f)
             and (not hook.get("types_or") or set(hook["types_or"]) & _tags(f))]
    if not files and not hook.get("always_run", False):
        return None
    command = shlex.split(hook["entry"]) + list(hook.get("args", []))
    return command + files if hook.get("pass_filenames", True) else command


def test_hook_manifest():
    (hook,) = HOOKS
    assert set(hook) <= HOOK_KEYS
    assert hook["id"] == "haltproof" and hook["entry"] == "haltproof check" and hook["language"] == "python"
    assert hook["files"] == "^specs/" and hook["types"] == ["yaml"]
    assert hook["pass_filenames"] is True and hook["require_serial"] is True and "args" not in hook
    assert precommit_command(hook, ["specs/a.yaml", "specs/sub/b.yml", "specs/README.md", "specs/bind.py",
                                    "docs/specs/c.yaml", "config.yaml"]) == [
        "haltproof", "check", "specs/a.yaml", "specs/sub/b.yml"]
    # No spec changed: the hook does not run (`haltproof check` alone checks the bundled specs).
    assert precommit_command(hook, ["README.md", "src/agent.py"]) is None


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


@pytest.mark.slow
def test_hook_checks_the_changed_specs(repo):
    (hook,) = HOOKS
    (repo / "specs" / "README.md").write_text("# our specs\n")
    (repo / "config.yaml").write_text("a: 1\n")
    command = precommit_command(hook, ["config.yaml", "specs/README.md", "specs/loop_demo.yaml",
                                       "specs/mutants/retry_past_last_step.yaml"])
    assert command == ["haltproof", "check", "specs/loop_demo.yaml", "specs/mutants/retry_past_last_step.yaml"]
    ran = _run(command, repo)
    assert ran.returncode == 0, ran.stdout[-2000:]
    assert ran.stdout.rstrip().endswith("15 runs: 10 proved, 5 violated as expected, 0 failed, 0 incomplete -> proved")
    shutil.move(repo / "violated.yaml", repo / "specs" / "violated.yaml")
    ran = _run(precommit_command(hook, ["specs/violated.yaml"]), repo)
    assert ran.returncode == 1
    assert ran.stdout.rstrip().endswith("6 runs: 0 proved, 0 violated as expected, 6 failed, 0 incomplete -> violated")


# -- docs/how-to/ci.md ----------------------------------------------------------------------------------

def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC, re.S)


def _hook_configs() -> list[dict]:
    """Each hook of each .pre-commit-config.yaml in the page, as pre-commit resolves it."""
    out = []
    for block in _yaml_blocks():
        if not block.startswith("repos:"):
            continue
        for entry in yaml.safe_load(block)["repos"]:
            for hook in entry["hooks"]:
                assert set(hook) <= HOOK_KEYS, hook
                if entry["repo"] == "local":
                    out.append(hook)
                else:
                    assert entry["repo"] == "https://github.com/OWNER/haltproof"
                    assert entry["rev"] == f"v{VERSION}"
                    (manifest,) = [h for h in HOOKS if h["id"] == hook["id"]]
                    out.append({**manifest, **hook})
    return out


def test_doc_hook_configs_run_as_documented(repo):
    default, elsewhere, folder, local = _hook_configs()
    assert default == HOOKS[0]
    assert {k: local[k] for k in ("entry", "files", "types", "require_serial")} == {
        k: HOOKS[0][k] for k in ("entry", "files", "types", "require_serial")} and local["language"] == "system"
    assert "haltproof check specs/changed_one.yaml specs/other/changed_two.yml" in DOC
    assert precommit_command(default, ["specs/changed_one.yaml", "specs/other/changed_two.yml", "x.yaml"]) == [
        "haltproof", "check", "specs/changed_one.yaml", "specs/other/changed_two.yml"]
    assert precommit_command(elsewhere, ["agent/specs/loop.yaml", "specs/loop_demo.yaml"]) == [
        "haltproof", "check", "--timeout", "120", "agent/specs/loop.yaml"]
    # The whole folder: run when a spec or the bound code changes, never without a path.
    assert precommit_command(folder, ["README.md"]) is None
    command = precommit_command(folder, ["src/my_agent/loop.py"])
    assert command == ["haltproof", "check", "specs"] == precommit_command(folder, ["specs/loop_demo.yaml"])
    ran = _run(command, repo)
    assert ran.returncode == 0 and ran.stdout.rstrip().endswith("-> proved"), ran.stdout[-2000:]


def _action_uses() -> list[tuple[dict, dict]]:
    """(workflow or steps snippet, the step that uses the action) for each snippet in the page."""
    out = []
    for block in _yaml_blocks():
        if "uses: OWNER/haltproof@" not in block:
            continue
        doc = yaml.safe_load(block)                 # a workflow, a `steps:` excerpt, or steps
        if isinstance(doc, dict):
            steps = doc["jobs"]["haltproof"]["steps"] if "jobs" in doc else doc["steps"]
        else:
            steps = doc
        (step,) = [s for s in steps if s.get("uses", "").startswith("OWNER/haltproof@")]
        out.append((doc, step))
    return out


def test_doc_action_snippets_use_declared_inputs_and_the_release_tag():
    uses = _action_uses()
    assert len(uses) == 3
    for _, step in uses:
        assert step["uses"] == f"OWNER/haltproof@v{VERSION}"
        assert set(step.get("with", {})) <= set(ACTION["inputs"]), step
    workflow, _ = uses[0]
    assert workflow["permissions"] == {"contents": "read", "security-events": "write"}
    assert workflow["jobs"]["haltproof"]["steps"][0] == {"uses": "actions/checkout@v4"}


def test_doc_workflow_runs_as_written(repo):
    """The page's workflow, its `with:` over the defaults, on a repository with a small specs/."""
    (_, step), *_ = _action_uses()
    assert step["with"] == {"paths": "specs", "args": "--timeout 600"}
    ran = run_action(repo, **{k.replace("-", "_"): v for k, v in step["with"].items()})
    assert ran.code == 0, ran.err
    documented = re.search(r"^3\. `(haltproof check PATHS ARGS [^`]+)`$", DOC, re.M).group(1)
    assert ran.out.splitlines()[0] == documented.replace("PATHS ARGS", "specs --timeout 600")
    assert ran.summary.startswith("## haltproof: proved\n")


def _table(heading_text: str) -> dict[str, list[str]]:
    start = DOC.index(heading_text)
    rows = {}
    for line in DOC[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_doc_tables_list_every_input_with_its_default_and_every_output():
    inputs = _table("| input | default | meaning |")
    assert set(inputs) == {f"`{name}`" for name in ACTION["inputs"]}
    for name, spec in ACTION["inputs"].items():
        shown = inputs[f"`{name}`"][0]
        assert shown == (f"`{spec['default']}`" if spec["default"] else "(none)") or (
            name == "install" and shown == "(the action's checkout)"), name
    outputs = _table("| output | value |")
    assert {n.strip("` ") for row in outputs for n in row.split(",")} == set(ACTION["outputs"])
    codes = _table("| haltproof exits | meaning | the step |")
    assert {code: row[1] for code, row in codes.items()} == {
        "0": "passes", "1": "fails", "2": "fails", "3": "fails, unless `fail-on-incomplete: false`", "4": "fails"}


def test_doc_is_linked_from_the_readme_and_the_formats_page():
    assert "(docs/how-to/ci.md)" in (ROOT / "README.md").read_text()
    assert "(ci.md)" in (ROOT / "docs" / "how-to" / "ci-formats.md").read_text()


# -- run-code: no code of a fork's specs runs (docs/how-to/trust.md) ----------------------------------

def _pull_request(head: str | None, base: str = "me/repo") -> dict:
    return {"pull_request": {"head": {"repo": None if head is None else {"full_name": head}}},
            "repository": {"full_name": base}}


@pytest.fixture
def bound(tmp_path: Path):
    """A spec bound to a module whose import leaves a file (tests/machine/test_trust.py)."""
    from test_trust import Code
    code = Code(tmp_path)
    return code


def test_a_pull_request_from_a_fork_runs_none_of_the_specs_code(bound):
    ran = run_action(bound.folder, paths="trusting.yaml", event=("pull_request", _pull_request("someone/fork")))
    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    assert lines[0] == ("::notice title=haltproof%3A --no-code::A pull request from someone/fork: none of the code "
                        "the specs name runs (run-code: auto; docs/how-to/trust.md).")
    assert lines[1].startswith("haltproof check trusting.yaml --no-code --format github ")
    assert bound.imported() == []
    assert json.loads((bound.folder / "haltproof.json").read_text())["runs"][0]["code_not_run"]["by"] == "--no-code"


@pytest.mark.parametrize("event,run_code,no_code", [
    (("pull_request_target", _pull_request(None)), "auto", True),        # the fork was deleted
    (("pull_request", _pull_request("me/repo")), "auto", False),         # a branch of this repository
    (("push", {}), "auto", False),
    (("push", {}), "false", True),
    (("pull_request", _pull_request("someone/fork")), "true", False),    # the maintainers vouch for it
])
def test_run_code_says_whether_the_specs_code_runs(bound, event, run_code, no_code):
    ran = run_action(bound.folder, paths="trusting.yaml", args="--quiet", event=event, run_code=run_code,
                     sarif="", junit="", json="", upload_sarif="false")
    assert ran.code == 0, ran.err
    command = next(ln for ln in ran.out.splitlines() if ln.startswith("haltproof check"))
    assert command == "haltproof check trusting.yaml --quiet" + (" --no-code" if no_code else "") + " --format github"
    assert bound.imported() == ([] if no_code else [bound.mod, f"{bound.mod}_raised"])


def test_an_event_that_cannot_be_read_counts_as_a_fork_and_a_bad_run_code_is_refused(bound):
    ran = run_action(bound.folder, paths="trusting.yaml", event=("pull_request", "{"), sarif="", junit="",
                     json="", upload_sarif="false")
    assert ran.code == 0, ran.err
    assert ("::notice title=haltproof%3A --no-code::A pull request from an event file that cannot be read "
            "(JSONDecodeError): none of the code") in ran.out
    assert bound.imported() == []
    bad = run_action(bound.folder, paths="trusting.yaml", run_code="sometimes")
    assert bad.code == 2
    assert "error: input run-code must be auto, true or false, got 'sometimes'" in bad.err
