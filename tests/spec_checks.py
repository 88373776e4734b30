"""The `check` fixture: a spec's text written to a file and run through the real CLI, for
the malformed-spec and hostile-input tests. tests/conftest.py loads this module as a plugin
(`pytest_plugins`), so the fixture reaches those tests by name, without an import."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from haltproof.cli.main import main
from report_schema import validate_outputs


@dataclass
class Ran:
    path: str
    code: int
    out: str
    err: str


@pytest.fixture
def check(tmp_path, monkeypatch, capsys):
    """Write TEXT to a spec file and run `haltproof check FILE` (or COMMAND) in-process; every JSON
    report it writes is validated against the report schema (tests/report_schema.py)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    # Run from a directory that is not above the spec, so the CLI shows the path as given.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    def run(text: str, *extra: str, name: str = "bad.yaml", command: str = "check") -> Ran:
        path = specs / name
        path.write_text(text, encoding="utf-8")
        argv = [command, str(path), *extra]
        code = main(argv)
        captured = capsys.readouterr()
        validate_outputs(argv, code, captured.out)
        return Ran(str(path), code, captured.out, captured.err)
    return run
