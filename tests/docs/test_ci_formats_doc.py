"""docs/how-to/ci-formats.md is real: its commands run with the exit codes it states, its sample
outputs are what those commands print, and its GitHub Actions job runs as written."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, doc_commands
from haltproof.reports import report

DOC = (ROOT / "docs" / "how-to" / "ci-formats.md").read_text()
FENCE = re.compile(r"^(```|~~~)(\w*)\n(.*?)^\1$", re.S | re.M)


def _blocks() -> list[tuple[str, str, str]]:
    """(language, body, the text just before the block) for every fenced block."""
    return [(m.group(2), m.group(3), DOC[:m.start()]) for m in FENCE.finditer(DOC)]


def _commands() -> list[tuple[str, int]]:
    out = []
    for lang, body, _ in _blocks():
        if lang != "bash":
            continue
        for line in body.splitlines():
            command, _, comment = line.partition("  #")
            command = command.strip()
            if command.startswith("haltproof "):
                m = re.search(r"exit (\d)", comment)
                out.append((command, int(m.group(1)) if m else 0))
    return out


def _samples() -> list[tuple[str, str]]:
    """(command, sample output) for each block introduced by 'Output of `haltproof ...`'."""
    out = []
    for _lang, body, before in _blocks():
        last = before.rstrip().splitlines()[-1]
        m = re.match(r"Output of `(haltproof [^`]+)`", last)
        if m:
            out.append((m.group(1), body))
    return out


@pytest.fixture
def docdir(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    text = (ROOT / "specs" / "mutants" / "limit_before_observation.yaml").read_text()
    (tmp_path / "violated.yaml").write_text(text[:text.index("\nexpect:")] + "\n")   # the doc's `sed`
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def test_the_doc_shows_every_format_and_the_commands_cover_them():
    commands = " ".join(c for c, _ in _commands())
    for fmt in ("--format junit", "--format sarif", "--format github", "--format markdown",
                "--junit", "--sarif"):
        assert fmt in commands
    assert len(_samples()) == 5
    assert "sed '/^expect:/,$d' specs/mutants/limit_before_observation.yaml > violated.yaml" in DOC


@pytest.mark.parametrize("command,code", doc_commands(_commands()))
def test_documented_command_runs_with_the_documented_exit_code(cli, docdir, command, code):
    ran = cli(*shlex.split(command)[1:])
    assert ran.code == code, (command, ran.out[-1500:], ran.err)
    assert "Traceback" not in ran.err
    for option, parse in (("--junit", ET.parse), ("--sarif", lambda p: json.loads(Path(p).read_text()))):
        args = shlex.split(command)
        if option in args:
            parse(args[args.index(option) + 1])        # the file was written and parses


def _normal(text: str) -> list[str]:
    text = re.sub(r'time="[0-9.]+"', 'time="T"', text)
    text = text.replace(f'"version": "{report.version()}"', '"version": "V"')
    return [line.strip() for line in text.splitlines()]


@pytest.mark.parametrize("command,sample", _samples())
def test_sample_output_is_what_the_command_prints(cli, docdir, command, sample):
    ran = cli(*shlex.split(command)[1:])
    real = set(_normal(ran.out))
    sample = sample.replace('"version": "0.2.0"', f'"version": "{report.version()}"')
    missing = [line for line in _normal(sample) if line and line != "..." and line not in real]
    assert not missing, missing[:5]


@pytest.mark.slow
def test_github_actions_job_runs_as_written(cli, docdir, monkeypatch):
    (body,) = [b for lang, b, _ in _blocks() if lang == "yaml" and "jobs:" in b]
    workflow = yaml.safe_load(body)
    steps = workflow["jobs"]["haltproof"]["steps"]
    assert workflow["permissions"]["security-events"] == "write"
    runs = [s["run"] for s in steps if "run" in s]
    (check,) = [r for r in runs if r.startswith("haltproof ")]
    assert check == "haltproof check specs --format github --sarif haltproof.sarif --junit haltproof.xml"
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "haltproof.sarif" and upload["if"] == "${{ !cancelled() }}"
    junit = next(s for s in steps if "publish-unit-test-result-action" in s.get("uses", ""))
    assert junit["with"]["files"] == "haltproof.xml"
    # run the check step as the runner would: with a step summary file
    summary = docdir / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    ran = cli(*shlex.split(check)[1:])
    assert ran.code == 0, ran.out[-2000:]
    assert ran.out.rstrip().splitlines()[-1].endswith("0 failed, 0 incomplete -> proved")
    assert "::error" not in ran.out and "::warning file=specs/" in ran.out
    assert summary.read_text().startswith("## haltproof: proved\n")
    log = json.loads(Path("haltproof.sarif").read_text())
    assert log["version"] == "2.1.0" and log["runs"][0]["results"] == []
    assert log["runs"][0]["properties"]["expectedViolations"]          # the mutants were caught
    suites = ET.parse("haltproof.xml").getroot()
    assert suites.get("failures") == "0" and suites.get("errors") == "0"
