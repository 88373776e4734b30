"""tests/ explains itself: one folder per layer, every test file in one of them, the shared helpers
beside conftest.py. Test files import each other and the helpers by bare name (there is no
__init__.py; conftest.py puts every layer folder on sys.path), so a basename used twice would
make one file shadow the other."""

from __future__ import annotations

import re
from collections import Counter

from conftest import LAYERS, ROOT, TESTS


def test_every_test_file_lies_in_a_layer_folder_that_contributing_describes():
    """CONTRIBUTING.md's table says what each folder holds: a folder it leaves out is one a
    newcomer cannot place a test in."""
    assert [p.name for p in TESTS.glob("test_*.py")] == [], "move each into the folder of the layer it tests"
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = guide.split("## How the tests are organised", 1)[1].split("\n## ", 1)[0]
    described = re.findall(r"^\| `tests/(\w+)/` \|", section, re.M)
    assert sorted(described) == [p.name for p in LAYERS]


def test_test_basenames_are_unique_and_no_folder_is_a_package():
    names = Counter(p.name for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)
    assert [name for name, n in names.items() if n > 1] == []
    assert [str(p.relative_to(TESTS)) for p in TESTS.rglob("__init__.py")] == []


def test_only_test_files_live_in_the_layer_folders():
    """A helper shared by several files lives beside conftest.py, where every test imports it."""
    assert [str(p.relative_to(TESTS)) for folder in LAYERS for p in folder.glob("*.py")
            if not p.name.startswith("test_")] == []
