"""docs/tutorials/budget-runner.md is true: every command in it runs with its documented exit code
(`# exit N` in its comment, 0 when none is given), in order, in a fresh directory; the
sample output is what the runner prints; the numbers quoted are the checker's."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys

import pytest

import budget_checks
from haltproof.harness.budget.cli import main as budget_main

from conftest import ROOT

DOC = (ROOT / "docs" / "tutorials" / "budget-runner.md").read_text()
BLOCKS = re.findall(r"```bash\n(.*?)```", DOC, re.S)


def _commands() -> list[tuple[str, int]]:
    out = []
    for block in BLOCKS:
        for line in block.splitlines():
            if not line.strip():
                continue
            command, _, comment = line.partition("  #")
            m = re.search(r"#?\s*exit (\d)", comment) or re.search(r"# exit (\d)", line)
            out.append((command.strip(), int(m.group(1)) if m else 0))
    return out


COMMANDS = _commands()


def test_the_doc_has_the_commands_the_issue_asks_for():
    commands = [c for c, _ in COMMANDS]
    assert ("python -m haltproof.harness.budget run -K 4 -R 2", 0) in COMMANDS
    assert ("python -m haltproof.harness.budget run -K 2", 1) in COMMANDS
    assert "haltproof check specs/budget_runner.yaml" in commands
    assert any(c.startswith("haltproof conform specs/budget_runner.yaml") for c in commands)
    assert any("--policy http" in c for c in commands) and any("--policy local" in c for c in commands)


@pytest.mark.slow
@pytest.mark.xdist_group("budget_runner")     # budget_checks' cached sweep, with test_budget_spec
def test_every_command_runs_with_its_documented_exit_code(tmp_path, monkeypatch):
    port = None         # the server's own: it binds port 0 (a free one) and says which it got
    server = None
    try:
        for command, expected in COMMANDS:
            if command.startswith("haltproof "):
                code, out, err, _ = budget_checks.haltproof(*shlex.split(command)[1:])
                assert code == expected, (command, out[-1500:], err)
                continue
            if command.endswith("&"):
                assert "--port 8765" in command, command
                argv = shlex.split(command[:-1].replace("--port 8765", "--port 0"))
                server = subprocess.Popen([sys.executable, *argv[1:]], cwd=tmp_path, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
                listening = re.search(r"http://127\.0\.0\.1:(\d+)/", server.stdout.readline())
                assert listening, "the server did not say where it listens"
                port = listening.group(1)
                continue
            if "8765" in command:
                assert port is not None, f"{command}: the doc starts no server before it"
                command = command.replace("8765", port)
            if command.startswith("python -m haltproof.harness.budget "):       # in-process: the same main()
                monkeypatch.chdir(tmp_path)
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = budget_main(shlex.split(command)[3:])
                ran = subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())
            else:
                ran = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                                     timeout=60)
            assert ran.returncode == expected, (command, ran.stdout[-1500:], ran.stderr)
            assert "Traceback" not in ran.stderr, command
        assert server is not None
        out, _ = server.communicate(timeout=30)
        assert server.returncode == 0 and "answered 5 request(s)" in out
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.communicate()


def test_the_sample_output_is_what_the_runner_prints():
    sample = re.search(r"Worked example 1 prints.*?```\n(.*?)```", DOC, re.S).group(1).splitlines()
    ran = subprocess.run([sys.executable, "-m", "haltproof.harness.budget", "run", "-K", "4", "-R", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    real = ran.stdout.splitlines()
    assert len(sample) == len(real)
    for doc_line, real_line in zip(sample, real):
        if "..." in doc_line:                       # abbreviated in the doc: everything shown is real
            for piece in doc_line.split("..."):
                assert piece.rstrip(", }") in real_line, (doc_line, real_line)
        else:
            assert doc_line == real_line


def test_the_K_2_line_quoted_in_the_doc():
    line = re.search(r"`(decision 3: stock .*? -> budget_exhausted)`", DOC).group(1)
    ran = subprocess.run([sys.executable, "-m", "haltproof.harness.budget", "run", "-K", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert line in ran.stdout.splitlines()


@pytest.mark.slow
@pytest.mark.xdist_group("budget_runner")     # budget_checks' cached sweep, with test_budget_spec
def test_the_numbers_quoted_are_the_checkers():
    code, _, _, report = budget_checks.haltproof("check", "specs/budget_runner.yaml")
    assert code == 0
    runs = {(r["params"]["K"], r["params"]["R"]): r for r in report["runs"]}
    for row in re.findall(r"^\| (\d) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|$", DOC, re.M):
        K = int(row[0])
        for R, shown in enumerate(row[1:]):
            assert runs[(K, R)]["stats"]["states"] == int(shown.replace(",", "")), (K, R)
    m = re.search(r"The whole sweep is ([\d,]+) states and ([\d,]+) transitions", DOC)
    assert sum(r["stats"]["states"] for r in runs.values()) == int(m.group(1).replace(",", ""))
    assert sum(r["stats"]["transitions"] for r in runs.values()) == int(m.group(2).replace(",", ""))
    worst = re.search(r"\((\d+) for K=8, R=2\)", DOC).group(1)
    assert runs[(8, 2)]["stats"]["max_depth"] <= int(worst)
    longest = next(p for p in runs[(8, 2)]["properties"] if p["name"] == "terminates_within_bound")
    assert f"(the longest takes {worst})" in longest["message"]
    assert "the same 601 states" in DOC and runs[(4, 2)]["stats"]["states"] == 601


@pytest.mark.parametrize("name", ["gate.py", "transitions.py", "tools.py", "store.py", "runner.py",
                                  "policies.py", "policy_server.py", "binding.py"])
def test_the_module_table_names_real_modules(name):
    assert f"`harness/budget/{name}`" in DOC
    assert (ROOT / "harness" / "budget" / name).exists()


def test_every_property_in_the_doc_is_in_the_spec():
    spec = (ROOT / "specs" / "budget_runner.yaml").read_text()
    table = DOC[DOC.index("| property | says |"):DOC.index("The bound:")]
    names = set(re.findall(r"`([a-z_0-9A-Z]+)`", table))
    assert len(names) >= 20
    for name in names:
        assert re.search(rf"^  {name}:", spec, re.M), name
