"""The suite can run in parallel (scripts/test runs it with pytest-xdist, `-n auto`): no test
changes the process's working directory without restoring it, and no test picks a loopback
port for a server it then starts (another worker may take the port in between; servers bind
port 0 and say which port they got). A static check over tests/, so that a new test breaking
the rule fails every run, not one run in fifty."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from conftest import LAYERS, ROOT, TEST_PATH, doc_commands, sweeps_seed_systems

# The test files of every layer folder and the shared helpers beside conftest.py (not fixtures/).
TESTS = sorted([*(ROOT / "tests").glob("*.py"), *(p for folder in LAYERS for p in folder.glob("*.py"))])


def _trees() -> Iterator[tuple[Path, ast.Module]]:
    for path in TESTS:
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def _is_call_of(node: ast.AST, owner: str, name: str) -> bool:
    """`owner.name(...)`, e.g. os.chdir(...) or socket.socket(...)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name
            and isinstance(node.func.value, ast.Name) and node.func.value.id == owner)


def chdir_calls(tree: ast.Module) -> list[ast.Call]:
    """Bare os.chdir calls: the directory stays changed when the test fails before changing it back.
    monkeypatch.chdir and contextlib.chdir restore it."""
    return [node for node in ast.walk(tree) if _is_call_of(node, "os", "chdir")]


def _usable_port(value: object) -> bool:
    return str(value).isdigit() and 1 <= int(str(value)) <= 65535


def port_probes(tree: ast.Module) -> list[ast.AST]:
    """A free port found by binding a throwaway socket and handed on after the socket closes
    (`with socket.socket() as s: s.bind((host, 0)); return s.getsockname()[1]`), and fixed
    ports: `.bind((host, N))` and `"--port", "N"` with N a usable port, 1 to 65535 (an invalid
    one is a test that the port is refused, and nothing listens)."""
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(_is_call_of(item.context_expr, "socket", "socket")
                                              for item in node.items):
            found += [ret for stmt in node.body for ret in ast.walk(stmt)
                      if isinstance(ret, ast.Return) and ret.value is not None
                      and any(isinstance(n, ast.Attribute) and n.attr == "getsockname" for n in ast.walk(ret.value))]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "bind"
                and node.args and isinstance(node.args[0], ast.Tuple) and len(node.args[0].elts) == 2):
            port = node.args[0].elts[1]
            if isinstance(port, ast.Constant) and _usable_port(port.value):
                found.append(node)
        if isinstance(node, ast.List):
            for flag, value in zip(node.elts, node.elts[1:]):
                if (isinstance(flag, ast.Constant) and flag.value == "--port"
                        and isinstance(value, ast.Constant) and _usable_port(value.value)):
                    found.append(value)
    return found


def test_no_test_changes_the_working_directory_behind_pytests_back():
    # tests/hostile_code.py is bound code that changes directory on purpose, and only in the
    # supervised child process that checks it (cli/supervise.py), never in pytest's
    bad = [_where(path, call) for path, tree in _trees() if path.name != "hostile_code.py"
           for call in chdir_calls(tree)]
    assert bad == [], "use monkeypatch.chdir (or contextlib.chdir where a fixture cannot reach)"


def test_no_test_chooses_a_port_for_a_server():
    bad = [_where(path, node) for path, tree in _trees() for node in port_probes(tree)]
    assert bad == [], "start the server on port 0 and read the port it got"


def test_the_checks_find_what_they_look_for():
    """The two scans above are not vacuous: each finds its pattern in a sample."""
    sample = ast.parse(
        "import os, socket\n"
        "def free():\n"
        "    with socket.socket() as s:\n"
        "        s.bind(('127.0.0.1', 0))\n"
        "        return s.getsockname()[1]\n"
        "def fixed(s):\n"
        "    s.bind(('127.0.0.1', 8765))\n"
        "    return ['serve', '--port', '8765']\n"
        "def move():\n"
        "    os.chdir('/')\n"
        "def fine(s, monkeypatch):\n"
        "    s.bind(('127.0.0.1', 0))\n"
        "    monkeypatch.chdir('/')\n"
        "    return ['serve', '--port', '0'], ['serve', '--port', '70000'], s.getsockname()\n")
    assert [n.lineno for n in port_probes(sample)] == [5, 7, 8]
    assert [n.lineno for n in chdir_calls(sample)] == [10]


def test_the_documented_sweeps_of_the_seed_systems_are_the_slow_commands():
    """What `scripts/test -m "not slow"` leaves out of the doc-command tests: the whole bundled
    specs, or a whole slow spec; a pinned or single small spec stays in the quick run."""
    slow = ["haltproof check", "haltproof check specs", "haltproof check specs/ --format github",
            "haltproof check specs/gate_chain.yaml --model", "haltproof conform specs/budget_runner.yaml",
            "cd docs && haltproof check specs"]
    quick = ["haltproof check specs/loop_demo.yaml", "haltproof check specs/gate_chain.yaml -p B=2",
             "haltproof replay specs/gate_chain.yaml --scenario s", "python -m haltproof.harness.gate_loop",
             "haltproof graph specs/gate_chain.yaml"]
    assert [c for c in slow + quick if sweeps_seed_systems(c)] == slow
    (param,) = doc_commands([("haltproof check specs", 0)])
    assert param.values == ("haltproof check specs", 0) and [m.name for m in param.marks] == ["slow"]


def test_the_fuzzers_scratch_directories_are_removed_when_the_process_ends():
    """The fuzz modules make their scratch directory on import, in every xdist worker; none is left behind."""
    script = "import test_fuzz_specs, test_fuzz_cli; print(test_fuzz_specs._ROOT); print(test_fuzz_cli._ROOT)"
    ran = subprocess.run([sys.executable, "-c", script], cwd=ROOT / "tests", capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": TEST_PATH})
    assert ran.returncode == 0, ran.stderr
    made = [Path(line) for line in ran.stdout.split()]
    assert len(made) == 2 and all(p.name.startswith(("haltproof-fuzz-", "haltproof-cli-fuzz-")) for p in made)
    assert [p for p in made if p.exists()] == []
