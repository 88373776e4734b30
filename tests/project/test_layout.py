"""tests/ explains itself: one folder per layer, every test file in one of them, the shared helpers
beside conftest.py. Test files import each other and the helpers by bare name (there is no
__init__.py; conftest.py puts every layer folder on sys.path), so a basename used twice would
make one file shadow the other."""

from __future__ import annotations

from collections import Counter

from conftest import LAYERS, TESTS

# Each folder and what it holds (CONTRIBUTING.md, "How tests are organised").
FOLDERS = {
    "machine": "the spec language, the loader and bound code (machine/)",
    "properties": "property kinds, fairness, termination, probabilities, vacuity (properties/)",
    "explorer": "the engines, the check runner, parallel and Dask runs, replay, regress (explorer/)",
    "reports": "the output formats (reports/)",
    "cli": "the command line, the pytest plugin, hostile options (cli/, src/haltproof/)",
    "frameworks": "LangGraph, OpenAI Agents SDK, Pydantic AI, lint, the examples (frameworks/)",
    "harness": "the seed systems: the loop, the gates, the budgeted runner (harness/, specs/)",
    "docs": "the README and docs/ pages: their commands, outputs and links",
    "project": "the repository as a whole: lint, layers, packaging, the suite's own rules, bench/",
}


def test_every_test_file_lies_in_a_layer_folder():
    assert [p.name for p in TESTS.glob("test_*.py")] == [], "move each into the folder of the layer it tests"
    assert sorted(p.name for p in LAYERS) == sorted(FOLDERS)


def test_test_basenames_are_unique_and_no_folder_is_a_package():
    names = Counter(p.name for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)
    assert [name for name, n in names.items() if n > 1] == []
    assert [str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")] == []


def test_only_test_files_live_in_the_layer_folders():
    """A helper shared by several files lives beside conftest.py, where every test imports it."""
    assert [str(p.relative_to(TESTS)) for folder in LAYERS for p in folder.glob("*.py")
            if not p.name.startswith("test_")] == []
