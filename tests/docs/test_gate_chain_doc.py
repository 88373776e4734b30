"""docs/tutorials/gate-chain.md is true: its commands run with the documented exit codes, its demo
output is what the demo prints, and its record-field table is the one the code emits."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, doc_commands
from haltproof.harness.decision_records import CONVENTION_FIELDS, DECISION_FIELDS, END_FIELDS, OPTIONAL_DECISION_FIELDS

DOC = (ROOT / "docs" / "tutorials" / "gate-chain.md").read_text()


def _commands() -> list[tuple[str, int]]:
    """Every line of the doc's bash blocks, with its exit code (`# exit N`, else 0)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", DOC, re.S):
        for line in block.splitlines():
            if not line.strip():
                continue
            command, _, comment = line.partition("#")
            m = re.search(r"exit (\d)", comment)
            out.append((command.strip(), int(m.group(1)) if m else 0))
    return out


def test_the_doc_documents_the_demo_and_the_proof():
    commands = [c for c, _ in _commands()]
    assert "python -m haltproof.harness.gate_loop" in commands
    assert "haltproof check specs/gate_chain.yaml" in commands
    assert "haltproof conform specs/gate_chain.yaml" in commands
    assert ("python -m haltproof.harness.gate_loop --budget -1", 2) in _commands()


@pytest.mark.parametrize("command, code", doc_commands(_commands()), ids=[c for c, _ in _commands()])
def test_doc_command_runs_with_its_exit_code(command, code, cli, tmp_path, monkeypatch):
    argv = shlex.split(command)
    if argv[0] == "python":
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        ran = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert ran.returncode == code, (command, ran.stdout[-1500:], ran.stderr)
        assert "Traceback" not in ran.stderr
        if code == 2:
            assert ran.stderr.startswith("error: ")
        if "--records" in argv and argv[argv.index("--records") + 1] != "-":
            lines = (tmp_path / argv[argv.index("--records") + 1]).read_text().splitlines()
            assert [json.loads(ln)["event.name"] for ln in lines][-1] == "haltproof.loop.end"
    else:
        assert argv[0] == "haltproof", command
        monkeypatch.chdir(ROOT)
        ran = cli(*argv[1:])
        assert ran.code == code, (command, ran.out[-2000:], ran.err)


def test_doc_demo_output_is_what_the_demo_prints():
    (shown,) = re.findall(r"```text\n(turn 1 .*?)```", DOC, re.S)
    ran = subprocess.run([sys.executable, "-m", "haltproof.harness.gate_loop"], cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0
    assert ran.stdout == shown


def test_doc_record_fields_are_the_emitted_ones():
    section = DOC[DOC.index("## Decision records"):DOC.index("## The proof")]
    rows = re.findall(r"^\| `([\w.]+)` \| ([^|]+) \|", section, re.M)
    documented = {name: where.strip() for name, where in rows}
    assert set(documented) == set(DECISION_FIELDS) | set(OPTIONAL_DECISION_FIELDS) | set(END_FIELDS)
    for name, where in documented.items():
        assert (name in CONVENTION_FIELDS) == (not where.startswith("ours")), name
