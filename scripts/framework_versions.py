"""The framework matrix CI runs, read from pyproject.toml, where the supported ranges are written once.

    python3 scripts/framework_versions.py requirements   # what scripts/test-oldest installs: each
                                                          # framework at its range's lowest version
                                                          # (`dist==LOW`), and pytest as `test` has it
    python3 scripts/framework_versions.py tests          # the test files of the frameworks

A framework extra is one named after a module of frameworks/ (`openai-agents`: openai_agents.py),
holding one requirement written `dist>=LOW,<HIGH`. Standard library only: it runs before any venv.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RANGE = re.compile(r"(?P<dist>[A-Za-z0-9._-]+)>=(?P<low>\d+(?:\.\d+)*),<(?P<high>\d+(?:\.\d+)*)")
TEST_RUNNERS = ("pytest", "pytest-xdist")


def extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        found: dict[str, list[str]] = tomllib.load(f)["project"]["optional-dependencies"]
    return found


def frameworks() -> dict[str, tuple[str, str, str]]:
    """Each framework extra: (dist, LOW, HIGH) of its one requirement."""
    out = {}
    for extra, requirements in extras().items():
        if not (ROOT / "frameworks" / f"{extra.replace('-', '_')}.py").exists():
            continue
        (requirement,) = requirements
        written = RANGE.fullmatch(requirement)
        if written is None:
            raise SystemExit(f"pyproject.toml: the [{extra}] extra must be written dist>=LOW,<HIGH, not {requirement!r}")
        out[extra] = (written["dist"], written["low"], written["high"])
    return out


def requirements() -> list[str]:
    """Each framework pinned to its range's lowest version, and the test runners as the `test` extra names them."""
    runners = [r for r in extras()["test"] if re.split(r"[<>=;\s]", r, maxsplit=1)[0] in TEST_RUNNERS]
    return [f"{dist}=={low}" for dist, low, _ in frameworks().values()] + runners


def tests() -> list[str]:
    """The framework test files: tests/test_MODULE*.py per framework, and tests/test_framework*.py."""
    found = {p for extra in frameworks() for p in (ROOT / "tests").glob(f"test_{extra.replace('-', '_')}*.py")}
    found |= set((ROOT / "tests").glob("test_framework*.py"))
    return sorted(str(p.relative_to(ROOT)) for p in found)


if __name__ == "__main__":
    commands = {"requirements": requirements, "tests": tests}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        raise SystemExit("usage: python3 scripts/framework_versions.py requirements|tests")
    print("\n".join(commands[sys.argv[1]]()))
