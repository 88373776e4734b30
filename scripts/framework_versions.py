"""The framework matrix CI runs, read from pyproject.toml, where the supported ranges are written once.

    python3 scripts/framework_versions.py requirements   # what scripts/test-oldest installs: each
                                                          # framework at its range's lowest version
                                                          # (`dist==LOW`), and pytest as `test` has it
    python3 scripts/framework_versions.py tests          # the test files of the frameworks
    python3 scripts/framework_versions.py tests --tested-by PYTHON
        # only those not already run at the lowest version: the files of each framework whose
        # lowest version differs from the one installed for PYTHON (the newest-versions venv),
        # and the shared test_framework*.py; nothing when no framework's differs

A framework extra is one named after a module of frameworks/ (`openai-agents`: openai_agents.py),
holding one requirement written `dist>=LOW,<HIGH`. A framework the `test` extra does not name
(`own_venv`: crewai) is tested by scripts/test-EXTRA in a venv of its own, not here. Standard library only: it runs before any venv.
"""

from __future__ import annotations

import re
import subprocess
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


def shared() -> dict[str, tuple[str, str, str]]:
    """The frameworks the `test` extra installs (their newest versions tested by scripts/test, their
    lowest by scripts/test-oldest); the others (own_venv) cannot share that venv."""
    named = {re.split(r"[<>=;\s]", r, maxsplit=1)[0] for r in extras()["test"]}
    return {extra: found for extra, found in frameworks().items() if found[0] in named}


def own_venv() -> list[str]:
    """The framework extras tested in a venv of their own (scripts/test-EXTRA): their dependencies
    conflict with the `test` extra's (CrewAI pins mcp<2, pydantic<2.13, openai<3)."""
    return sorted(set(frameworks()) - set(shared()))


def requirements() -> list[str]:
    """Each shared framework pinned to its range's lowest version, and the test runners as the `test` extra names them."""
    runners = [r for r in extras()["test"] if re.split(r"[<>=;\s]", r, maxsplit=1)[0] in TEST_RUNNERS]
    return [f"{dist}=={low}" for dist, low, _ in shared().values()] + runners


def tests(tested_by: str | None = None) -> list[str]:
    """The framework test files: tests/frameworks/test_MODULE*.py per framework, and
    tests/frameworks/test_framework*.py.
    With `tested_by` (a Python whose environment ran the whole suite), a framework whose lowest
    version is the one installed there was tested at that version already: its files are left
    out, and when every framework's was, so are the shared ones (nothing is left to test)."""
    again = [extra for extra, (dist, low, _) in shared().items()
             if tested_by is None or _release(installed(tested_by, dist)) != _release(low)]
    folder = ROOT / "tests" / "frameworks"
    found = {p for extra in again for p in folder.glob(f"test_{extra.replace('-', '_')}*.py")}
    if again:
        found |= set(folder.glob("test_framework*.py"))
    return sorted(str(p.relative_to(ROOT)) for p in found)


def installed(python: str, dist: str) -> str:
    """The version of `dist` installed for the interpreter `python`; "" when it has none (so it
    was not tested there)."""
    probe = (f"import importlib.metadata as m\ntry: print(m.version({dist!r}))\n"
             "except m.PackageNotFoundError: print()")
    if not python:
        raise SystemExit("--tested-by needs a Python to run, not an empty path")
    try:
        ran = subprocess.run([python, "-c", probe],
                             capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise SystemExit(f"{python}: cannot run it to read the installed version of {dist}: {e.strerror}") from None
    if ran.returncode != 0:
        why = ran.stderr.strip().splitlines()[-1:] or [f"it exited with {ran.returncode}"]
        raise SystemExit(f"{python}: cannot read the installed version of {dist}: {why[0]}")
    return ran.stdout.strip()


def _release(version: str) -> tuple[int, ...] | str:
    """A plain release number without its trailing zeros (0.24.0 is 0.24); anything else as written
    ("" for none, a pre-release), so it equals no lowest version."""
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        return version
    numbers = [int(n) for n in version.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


USAGE = "usage: python3 scripts/framework_versions.py requirements|tests [--tested-by PYTHON]"

if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["requirements"]:
        print("\n".join(requirements()))
    elif args[:1] == ["tests"] and (len(args) == 1 or (len(args) == 3 and args[1] == "--tested-by")):
        print("\n".join(tests(args[2] if len(args) == 3 else None)))
    else:
        raise SystemExit(USAGE)
