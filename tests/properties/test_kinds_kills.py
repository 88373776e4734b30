"""Mutants of properties/kinds.py that the verdict selection let through (issue 18, the sampled
run of round 7): `Subject`'s JSON, which `--emit-tests` records and explorer/regress.py reads
back to re-judge exactly the check that failed. The subjects are built inside the tests (a
mutant is switched on only after the test modules are imported). Each test was seen failing
with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import pytest

from haltproof.properties.kinds import Subject

pytestmark = pytest.mark.verdict


def test_a_subject_writes_its_check_name_and_choices_under_their_own_keys():
    assert Subject("terminal").to_json() == {"check": "terminal"}
    assert Subject("property", "small").to_json() == {"check": "property", "name": "small"}
    assert Subject("action", "go", {"tool": "search"}).to_json() == {
        "check": "action", "name": "go", "choices": {"tool": "search"}}


def test_a_subject_read_back_from_json_is_the_same_subject():
    data = {"check": "action", "name": "go", "choices": {"tool": "search", "n": 2}}
    back = Subject.from_json(data)
    assert (back.check, back.name, back.choices) == ("action", "go", {"tool": "search", "n": 2})
    assert Subject.from_json({"check": "terminal"}) == Subject("terminal", None, None)
