"""The README and docs examples are real: their commands run with the documented exit
codes and the example spec in docs/ is the one the reference shows."""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, doc_commands

README = (ROOT / "README.md").read_text()
SPEC_DOC = (ROOT / "docs" / "reference" / "spec-language.md").read_text()


def _commands() -> list[str]:
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("haltproof "):
                out.append(line)
    return out


def _script_lines(path: Path) -> list[str]:
    """A shell script's commands: its lines without comments and blank lines."""
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_readme_opens_with_the_two_fresh_machine_commands():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert "pip install . && haltproof check" in blocks[0]
    assert blocks[1].strip() == "scripts/test"
    # CI runs the very same script, and the script installs the test extra and runs pytest; then
    # the framework tests against the oldest supported versions (tests/test_framework_versions.py).
    ci = _script_lines(ROOT / ".ci" / "run")
    assert ci[-2:] == ['HALTPROOF_VENV="$venvs/venv" scripts/test', 'HALTPROOF_OLDEST_VENV="$venvs/oldest" HALTPROOF_TESTED_PYTHON="$venvs/venv/bin/python" scripts/test-oldest']
    assert "pytest" not in "\n".join(ci) and "apt-get" not in "\n".join(ci)


def test_the_test_command_lints_type_checks_and_tests_everything():
    """scripts/test runs ruff on the whole checkout, mypy on the whole package and every test,
    slow ones included (in parallel); only arguments a developer passes narrow the run."""
    lines = _script_lines(ROOT / "scripts" / "test")
    install = lines.index("pip install --quiet '.[test]'")
    ruff = lines.index("python -m ruff check")                  # no path: ruff's own discovery, all of it
    (mypy,) = [i for i, line in enumerate(lines) if "python -m mypy " in line]
    assert lines[mypy].endswith(" -p haltproof)")             # the whole installed package
    pytest_line = 'python -m pytest -q -n auto --dist loadgroup "$@"'
    assert lines[-1] == pytest_line and lines.count(pytest_line) == 1
    assert install < ruff < mypy < len(lines) - 1
    assert not any("-m pytest" in line for line in lines[:-1])          # pytest runs once, last
    # no path and no -m in the script or in pytest's configuration: `tests/`, every marker
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests"]
    assert options["addopts"] == ["--strict-markers"]


def test_the_readmes_quick_run_leaves_out_a_registered_marker():
    (marker,) = re.findall(r'^scripts/test -m "not (\w+)"', README, re.M)
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert marker == "slow" and any(m.startswith("slow: ") for m in options["markers"])


@pytest.mark.parametrize("command", doc_commands(_commands()))
def test_readme_command_runs(cli, command, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    monkeypatch.chdir(tmp_path)
    if "--trace report.json" in command:
        assert cli("check", "specs/mutants/retry_past_last_step.yaml", "-p", "max_steps=2",
                   "--json", "report.json").code == 0
    ran = cli(*shlex.split(command)[1:])
    expected = 3 if "--max-states 3" in command else 0
    assert ran.code == expected, (command, ran.out[-1500:], ran.err)


def test_readme_sample_output_is_what_check_prints(cli):
    ran = cli("check", ROOT / "specs" / "loop_demo.yaml", "-p", "max_steps=5", "-p", "max_retries=1")
    shown = re.sub(r"\d+\.\d\d s", "0.01 s", ran.out.replace(str(ROOT) + "/", ""))
    assert "```\n$ haltproof check specs/loop_demo.yaml -p max_steps=5 -p max_retries=1\n" + shown + "```" in README
    ran = cli("check", ROOT / "specs" / "loop_demo.yaml", "-p", "max_steps=5", "-p", "max_retries=1", "--verbose")
    for line in ("proved: 322 states, 420 transitions, 238 terminal, depth 5",
                 "specs/loop_demo.yaml  [loop_demo]  max_steps=5 max_retries=1  "
                 "(checked the bound code: haltproof.harness.loop_binding:LoopDemoAdapter)"):
        assert line in README and line in ran.out
    mutant = cli("check", ROOT / "specs" / "mutants" / "limit_before_observation.yaml",
                 "-p", "max_steps=3", "-p", "max_retries=0", "--verbose")
    row = "3     read_task_cards  obs=one_match   limit     steps=3 observation=one_match decision=limit"
    assert row in README and row in mutant.out


def test_spec_language_example_is_the_shipped_example_and_it_is_proved(cli):
    blocks = re.findall(r"```yaml\n(.*?)```", SPEC_DOC, re.S)
    example = (ROOT / "docs" / "examples" / "retry_loop.yaml").read_text()
    assert example == blocks[0] + "\n" + blocks[1]
    ran = cli("check", ROOT / "docs" / "examples" / "retry_loop.yaml")
    assert ran.code == 0
    assert ran.out.rstrip().endswith("12 runs: 12 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved")
    replay = cli("replay", ROOT / "docs" / "examples" / "retry_loop.yaml", "--scenario", "flaky_then_ok")
    assert replay.code == 0
    assert "outcome: error\nstatus: running\ncall: 2\noutcome: ok\nstatus: done" in replay.out


BINDING_DOC = (ROOT / "docs" / "how-to" / "binding.md").read_text()


def _doc_commands(text: str) -> list[str]:
    return [ln.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S)
            for ln in block.splitlines() if ln.strip()]


@pytest.mark.slow
def test_binding_doc_commands_run(cli, tmp_path, monkeypatch):
    import subprocess
    import sys
    commands = _doc_commands(BINDING_DOC)
    assert "python -m haltproof.harness.loop --scenario permanent_error" in commands
    for command in commands:
        if command.startswith("python -m haltproof.harness.loop"):
            ran = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT,
                                 capture_output=True, text=True)
            assert ran.returncode == 0 and ran.stdout.startswith("step: 1\n"), command
        elif command.startswith("haltproof check specs/loop_demo.yaml") or command.startswith("haltproof conform"):
            monkeypatch.chdir(ROOT)
            assert cli(*shlex.split(command)[1:]).code == 0, command
        elif command.startswith(("cd docs/examples && ", "cd examples/agent_loop && ")):
            monkeypatch.chdir(ROOT / command.split()[1])
            assert cli(*shlex.split(command.split("&& ", 1)[1])[1:]).code == 0, command
        elif command == "pytest --haltproof specs/":
            ran = subprocess.run([sys.executable, "-m", "pytest", "--haltproof", "specs/", "-q",
                                  "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
            assert ran.returncode == 0, ran.stdout[-2000:]
        elif "--emit-tests" in command:
            continue        # exercised with a real broken spec in tests/test_regress.py
        else:
            raise AssertionError(f"untested command in docs/how-to/binding.md: {command}")


def test_binding_doc_python_example_is_the_shipped_one():
    shipped = (ROOT / "docs" / "examples" / "retry_model.py").read_text()
    for line in ["class RetryLoop(Model):", 'params = {"K": [1, 2, 3, 4], "R": [0, 1, 2]}',
                 "bounded = terminates_within(lambda p: p[\"K\"])"]:
        assert line in BINDING_DOC and line in shipped
