"""The commands of docs/how-to/scaling.md's section on one large state space (its `sh` blocks; the
`-j` section's run in tests/explorer/test_parallel.py) run with their exit codes and say what the
page says."""

from __future__ import annotations

import re
import shlex

import pytest

from conftest import ROOT

PAGE = (ROOT / "docs" / "how-to" / "scaling.md").read_text()
DOC = PAGE[PAGE.index("## One large state space"):PAGE.index("## What is not built yet")]


def _commands() -> list[tuple[str, int]]:
    out = []
    for block in re.findall(r"```sh\n(.*?)```", DOC, re.S):
        for line in block.splitlines():
            command, _, comment = line.partition("  #")
            m = re.search(r"exit (\d)", comment)
            out.append((command.strip(), int(m.group(1)) if m else 0))
    return out


def test_the_page_has_its_commands():
    assert [c for _, c in _commands()] == [3, 0, 3]


@pytest.mark.parametrize("command, code", _commands(), ids=[c for c, _ in _commands()])
def test_doc_command_runs_with_its_exit_code(command, code, cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    ran = cli(*shlex.split(command)[1:])
    assert ran.code == code, (command, ran.out[-2000:], ran.err)
    if "huge_param" in command:
        assert "stopped at 1,001 states: --max-states 1000 reached" in ran.out and "stopped at 1,001 states" in DOC
    elif code == 0:
        assert "482,447 states" in ran.out
    else:
        assert "stopped at 1 states: memory limit 1M reached" in ran.out and "stopped at 1 states" in DOC
