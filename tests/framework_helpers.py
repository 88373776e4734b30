"""What the framework tests share (test_framework_declaration, test_pydantic_ai*, test_openai_agents*)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def results(run) -> dict:
    """A run's property results by name."""
    return {p.name: p for p in run.properties}


def maxima(run) -> dict:
    """A run's worst cases (`maximum` properties) by name."""
    return {p.name: p.value["maximum"]["value"] for p in run.properties if p.kind == "maximum"}


@contextmanager
def fresh_modules(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> Iterator[None]:
    """The examples' modules imported fresh inside, forgotten after, and the folders their imports
    put on sys.path taken off again: a later test file must not find another test's module first."""
    path = list(sys.path)
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        yield
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.path[:] = path


def emitted_test_fails_until_fixed(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, app: Path,
                                   declaration: str, emitted: str, still: str, fix: tuple[str, str]) -> None:
    """`--emit-tests` on `declaration` beside a copy of the user's `app` writes one pytest file,
    named `emitted`, that replays the counterexample against the real framework: it fails (saying
    `still`) while the behaviour stands, and passes once `fix` (old, new) is made in the app."""
    copy = tmp_path / app.name
    copy.write_text(app.read_text())
    (tmp_path / "budget.yaml").write_text(declaration)
    monkeypatch.chdir(tmp_path)
    ran = cli("check", "budget.yaml", "--emit-tests", "regress")
    assert ran.code == 1, ran.out
    assert "wrote 1 regression test to regress" in ran.err
    (test,) = (tmp_path / "regress").glob("test_*.py")
    assert test.name == emitted

    def pytest_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "regress"],
                              cwd=tmp_path, capture_output=True, text=True)
    failing = pytest_run()
    assert failing.returncode == 1, failing.stdout[-2000:]
    assert still in failing.stdout
    source = copy.read_text()
    fixed = source.replace(*fix)
    assert fixed != source
    copy.write_text(fixed)
    passing = pytest_run()
    assert passing.returncode == 0, passing.stdout[-2000:]
    assert "1 passed" in passing.stdout


def emitted_tests_replay(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, apps: tuple[Path, ...],
                         declaration: str, expected: dict[str, str], options: tuple[str, ...] = ()) -> None:
    """`--emit-tests` on `declaration` (with the check's `options`), beside copies of the user's
    `apps`, writes exactly the regression tests named in `expected`; run with pytest, each replays
    its counterexample through the real framework and fails saying its `expected` message: what the
    check found (a limit error at a value below the smallest safe one, a worst case reached) is what
    the library does."""
    for app in apps:
        (tmp_path / app.name).write_text(app.read_text())
    (tmp_path / "replayed.yaml").write_text(declaration)
    monkeypatch.chdir(tmp_path)
    ran = cli("check", "replayed.yaml", "--emit-tests", "regress", *options)
    assert ran.code == 1, ran.out
    assert sorted(p.name for p in (tmp_path / "regress").glob("test_*.py")) == sorted(expected), ran.out
    replayed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "regress"],
                              cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "1000"})     # summary lines in full
    assert replayed.returncode == 1, replayed.stdout[-2000:]
    failed = {line.split("::")[0].removeprefix("FAILED regress/"): line for line in replayed.stdout.splitlines()
              if line.startswith("FAILED regress/")}
    assert sorted(failed) == sorted(expected), replayed.stdout[-2000:]
    for name, message in expected.items():
        assert f"AssertionError: {message}" in failed[name], failed[name]
