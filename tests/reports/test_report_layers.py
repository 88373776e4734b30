"""The layers below the reports never import them: the engines and the check runner hand over
data, and only reports/ (and above) formats it. Function-level imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

LOWER = ("machine", "properties", "explorer")
HIGHER = ("haltproof.reports", "haltproof.cli", "haltproof.api", "haltproof.pytest_plugin")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, at any depth; relative ones resolved in its package."""
    package = f"haltproof.{path.parent.name}"
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out += [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}") for a in node.names if base == "haltproof"]
    return out


@pytest.mark.parametrize("folder", LOWER)
def test_no_module_below_the_reports_imports_them(folder: str) -> None:
    upward = [f"{path.relative_to(ROOT)}:{line}: {module}"
              for path in sorted((ROOT / folder).glob("*.py"))
              for line, module in _imports(path)
              if module in HIGHER or module.startswith(tuple(h + "." for h in HIGHER))]
    assert upward == []


def test_the_check_runner_and_replay_share_one_formatter() -> None:
    """replay imported check (which imports replay) for _values_text; both take machine.text's now."""
    check = {module for _, module in _imports(ROOT / "explorer" / "check.py")}
    replay = {module for _, module in _imports(ROOT / "explorer" / "replay.py")}
    assert "haltproof.machine.text" in check & replay
    assert "haltproof.explorer.replay" in check and "haltproof.explorer.check" not in replay
