"""The README and docs examples are real: their commands run with the documented exit
codes, their sample outputs are what the commands print, and the example spec in docs/ is the
one the reference shows."""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, doc_commands

README = (ROOT / "README.md").read_text()
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text()
SPEC_DOC = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
TUTORIAL = (ROOT / "docs" / "tutorials" / "first-check.md").read_text()
# The pages whose `haltproof ...` commands this file runs (the other pages have a test of their own).
COMMAND_PAGES = ["README.md", "docs/tutorials/first-check.md", "docs/reference/cli.md", "docs/explanation/engines.md",
                 "docs/how-to/probabilities.md"]
TOUR = ROOT / "docs" / "examples" / "tour.yaml"


def _commands() -> list[tuple[str, str, int]]:
    """Each page's `haltproof ...` command lines (bash blocks), with the exit code the line's
    comment gives (`# exit 3: ...`; 0 when it says none)."""
    out = []
    for page in COMMAND_PAGES:
        for block in re.findall(r"```bash\n(.*?)```", (ROOT / page).read_text(), re.S):
            for line in block.splitlines():
                command, _, comment = line.partition("  #")
                if command.strip().startswith("haltproof "):
                    code = re.match(r"\s*exit (\d)", comment)
                    out.append((command.strip(), page, int(code.group(1)) if code else 0))
    return out


def _untimed(text: str) -> str:
    """A report's text with every duration shown as 0.01 s, as the pages show them."""
    return re.sub(r"\d+\.\d\d s", "0.01 s", text)


def _script_lines(path: Path) -> list[str]:
    """A shell script's commands: its lines without comments and blank lines."""
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_readme_opens_with_the_two_fresh_machine_commands():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert "pip install . && haltproof check" in blocks[0]
    assert blocks[1].strip() == "scripts/test"
    # CI runs the very same script, and the script installs the test extra and runs pytest; then
    # the framework tests against the oldest supported versions and CrewAI's in a venv of its own
    # (tests/frameworks/test_framework_versions.py), whose packages install while the suite runs.
    ci = _script_lines(ROOT / ".ci" / "run")
    assert [line for line in ci if "scripts/test" in line] == [
        'HALTPROOF_OLDEST_VENV="$venvs/oldest" scripts/test-oldest --prepare > "$venvs/oldest.log" 2>&1 &',
        'HALTPROOF_CREWAI_VENV="$venvs/crewai" scripts/test-crewai --prepare > "$venvs/crewai.log" 2>&1 &',
        'HALTPROOF_VENV="$venvs/venv" scripts/test',
        'HALTPROOF_OLDEST_VENV="$venvs/oldest" HALTPROOF_TESTED_PYTHON="$venvs/venv/bin/python" scripts/test-oldest',
        'HALTPROOF_CREWAI_VENV="$venvs/crewai" scripts/test-crewai']
    assert ci[-2:] == [line for line in ci if "scripts/test" in line][-2:]
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


def test_the_quick_run_contributing_shows_leaves_out_a_registered_marker():
    (marker,) = re.findall(r'^scripts/test -m "not (\w+)"', CONTRIBUTING, re.M)
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert marker == "slow" and any(m.startswith("slow: ") for m in options["markers"])


def test_the_pages_show_commands_this_file_runs():
    """A command line this file would not run is not shown: the pages above hold the README's
    commands, and each of them has some."""
    pages = {page for _, page, _ in _commands()}
    assert pages == set(COMMAND_PAGES)
    assert ("haltproof check docs/examples/tour.yaml -p K=2", "README.md", 1) in _commands()
    assert ("haltproof check specs/loop_demo.yaml --max-states 3", "docs/reference/cli.md", 3) in _commands()


@pytest.mark.parametrize("command, page, expected", doc_commands(_commands()))
def test_doc_command_runs(cli, command, page, expected, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    shutil.copytree(ROOT / "bench" / "specs", tmp_path / "bench" / "specs")
    monkeypatch.chdir(tmp_path)
    if "--trace report.json" in command:
        assert cli("check", "specs/mutants/retry_past_last_step.yaml", "-p", "max_steps=2",
                   "--json", "report.json").code == 0
    ran = cli(*shlex.split(command)[1:])
    assert ran.code == expected, (page, command, ran.out[-1500:], ran.err)


def _shown(text: str, command: str) -> str:
    """The output a page shows under `$ COMMAND` in a plain fenced block."""
    (block,) = re.findall(r"```\n\$ " + re.escape(command) + r"\n(.*?)```", text, re.S)
    return block


def test_the_readme_tour_catches_the_bug_and_its_one_line_fix_proves_it(cli, tmp_path, monkeypatch):
    """The README's spec is docs/examples/tour.yaml; the output it shows is what checking it
    prints; its diff is one line, and applied, every budget is proved with the output shown."""
    assert "```yaml\n" + TOUR.read_text() + "```" in README
    (tmp_path / "docs" / "examples").mkdir(parents=True)
    shutil.copy(TOUR, tmp_path / "docs" / "examples" / "tour.yaml")
    monkeypatch.chdir(tmp_path)
    ran = cli("check", "docs/examples/tour.yaml", "-p", "K=2")
    assert ran.code == 1
    assert _untimed(ran.out) == _shown(README, "haltproof check docs/examples/tour.yaml -p K=2")
    (diff,) = re.findall(r"```diff\n(.*?)```", README, re.S)
    (old,), (new,) = ([ln[1:] for ln in diff.splitlines() if ln.startswith(sign)] for sign in "-+")
    spec = tmp_path / "docs" / "examples" / "tour.yaml"
    assert spec.read_text().count(old + "\n") == 1
    spec.write_text(spec.read_text().replace(old + "\n", new + "\n"))
    fixed = cli("check", "docs/examples/tour.yaml")
    assert fixed.code == 0
    assert _untimed(fixed.out) == _shown(README, "haltproof check docs/examples/tour.yaml")


def test_the_tutorials_sample_outputs_are_what_check_prints(cli):
    ran = cli("check", ROOT / "specs" / "loop_demo.yaml", "-p", "max_steps=5", "-p", "max_retries=1")
    shown = _untimed(ran.out.replace(str(ROOT) + "/", ""))
    assert _shown(TUTORIAL, "haltproof check specs/loop_demo.yaml -p max_steps=5 -p max_retries=1") == shown
    ran = cli("check", ROOT / "specs" / "loop_demo.yaml", "-p", "max_steps=5", "-p", "max_retries=1", "--verbose")
    verbose = _shown(TUTORIAL, "haltproof check specs/loop_demo.yaml -p max_steps=5 -p max_retries=1 --verbose")
    out = _untimed(ran.out.replace(str(ROOT) + "/", ""))
    for line in verbose.splitlines():        # a line cut with "..." shows the start of a real one
        head = line.split("...")[0]
        assert line in out.splitlines() or ("..." in line and any(o.startswith(head) for o in out.splitlines())), line
    assert "proved: 322 states, 420 transitions, 238 terminal, depth 5" in verbose
    mutant = cli("check", ROOT / "specs" / "mutants" / "limit_before_observation.yaml",
                 "-p", "max_steps=3", "-p", "max_retries=0", "--verbose")
    row = "3     read_task_cards  obs=one_match   limit     steps=3 observation=one_match decision=limit"
    assert row in TUTORIAL and row in mutant.out
    lasso = cli("check", ROOT / "specs" / "mutants" / "failure_not_a_step.yaml",
                "-p", "max_steps=2", "-p", "max_retries=0", "--verbose")
    (block,) = [b for lang, b in re.findall(r"^```(\w*)\n(.*?)^```$", TUTORIAL, re.S | re.M)
                if not lang and "<- loop starts" in b]
    for line in block.splitlines():
        assert line in lasso.out.splitlines(), line


def test_spec_language_example_is_the_shipped_example_and_it_is_proved(cli):
    blocks = re.findall(r"```yaml\n(.*?)```", SPEC_DOC, re.S)
    example = (ROOT / "docs" / "examples" / "retry_loop.yaml").read_text()
    scenarios = next(b for b in blocks if b.startswith("scenarios:"))     # the example's last part, further down
    assert example == blocks[0] + "\n" + scenarios
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
            continue        # exercised with a real broken spec in tests/explorer/test_regress.py
        else:
            raise AssertionError(f"untested command in docs/how-to/binding.md: {command}")


def test_binding_doc_python_example_is_the_shipped_one():
    shipped = (ROOT / "docs" / "examples" / "retry_model.py").read_text()
    for line in ["class RetryLoop(Model):", 'params = {"K": [1, 2, 3, 4], "R": [0, 1, 2]}',
                 "bounded = terminates_within(lambda p: p[\"K\"])"]:
        assert line in BINDING_DOC and line in shipped
