"""Shared helpers: where the repo's specs are, and running the CLI in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.cli import main

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
LOOP_DEMO = SPECS / "loop_demo.yaml"
MUTANTS = SPECS / "mutants"


class Ran:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run `haltproof ARGS...` in-process; returns exit code, stdout and stderr."""
    def run(*args: str) -> Ran:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)
    return run


pytest_plugins = ["pytester"]


SLOW_SPECS = {"budget_runner.yaml", "gate_chain.yaml"}     # seconds each on every engine


def verdict_specs(paths: list[Path]) -> list:
    """`paths` as parameters, each marked `verdict` (the per-mutant selection of
    docs/mutation.md) unless it is one of the slow specs."""
    return [pytest.param(p, marks=() if p.name in SLOW_SPECS else pytest.mark.verdict) for p in paths]
