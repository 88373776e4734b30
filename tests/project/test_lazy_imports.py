"""`import haltproof` and the pytest plugin load numpy and the engines only when a check runs.

The plugin is loaded by every pytest run of every project that installs haltproof, so what it
imports is paid by every user's test suite; `import haltproof` by every script that checks a
spec or merely names `haltproof.SpecError`. Each test starts a fresh interpreter: this one has
long imported everything."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import haltproof
from conftest import LOOP_DEMO, ROOT

# What `import haltproof` may load of its own: the package, the framework registry (every entry
# point needs it) and the little the registry imports. No loader, no YAML parser, no engine.
LIGHT = ["haltproof", "haltproof.frameworks", "haltproof.machine", "haltproof.machine.declarations",
         "haltproof.machine.errors", "haltproof.machine.inputs", "haltproof.machine.text", "haltproof.machine.trust"]


def loaded_after(code: str, cwd: Path) -> list[str]:
    """The modules a fresh interpreter holds after running `code` (sorted)."""
    probe = code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"
    ran = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.splitlines()[-1])


def test_import_haltproof_loads_no_numpy_and_no_engine(tmp_path):
    modules = loaded_after("import haltproof", tmp_path)
    assert [m for m in modules if m.split(".")[0] in ("numpy", "yaml", "networkx", "hypothesis")] == []
    assert [m for m in modules if m.startswith("haltproof")] == LIGHT


def test_the_public_names_load_no_engine_until_a_check_runs(tmp_path):
    names = "check, load_spec, Model, Adapter, Report, SpecError, Problem, Spec, LiveAdapter, action, always"
    modules = loaded_after(f"from haltproof import {names}", tmp_path)
    assert "numpy" not in modules
    assert [m for m in modules if m.startswith(("haltproof.explorer", "haltproof.reports"))] == []
    ran = loaded_after(f"import haltproof\nhaltproof.check({str(LOOP_DEMO)!r}, "
                       "params={'max_steps': 2, 'max_retries': 0}).assert_proved()", tmp_path)
    assert "numpy" in ran and "haltproof.explorer.check" in ran        # loaded when the check ran


def test_the_pytest_plugin_loads_no_numpy_in_a_run_without_specs(tmp_path):
    """A real pytest session with only haltproof's plugin (no other installed plugin can load
    numpy behind its back): collection and a test run, and numpy never comes in."""
    (tmp_path / "test_user.py").write_text(
        "import sys\n\n\n"
        "def test_theirs(request):\n"
        "    assert request.config.pluginmanager.has_plugin('haltproof.pytest_plugin')\n"
        "    assert [m for m in sys.modules if m.split('.')[0] in ('numpy', 'yaml')] == []\n"
        "    assert [m for m in sys.modules if m.startswith('haltproof.explorer')] == []\n")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "haltproof.pytest_plugin",
                          "-p", "no:cacheprovider", "test_user.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    assert "1 passed" in ran.stdout


def test_importing_the_plugin_module_loads_no_numpy(tmp_path):
    modules = loaded_after("import haltproof.pytest_plugin", tmp_path)
    assert "numpy" not in modules
    assert [m for m in modules if m.startswith("haltproof")] == sorted(LIGHT + ["haltproof.pytest_plugin"])


def _type_checking_imports() -> dict[str, str]:
    """The names src/haltproof/__init__.py imports for type checkers, with their modules."""
    tree = ast.parse((ROOT / "src" / "haltproof" / "__init__.py").read_text())
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    return {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names if node.module is not None}


def test_the_lazy_names_are_the_typed_ones_and_each_resolves():
    """The table `__getattr__` loads from is the TYPE_CHECKING block mypy reads, name for name,
    so a name cannot be typed one way and loaded another; every public name resolves to the
    object of its module, and a name that is not public is an AttributeError."""
    lazy = haltproof._LAZY
    assert _type_checking_imports() == lazy
    assert sorted(haltproof.__all__) == sorted([*lazy, "__version__"])
    for name, module in lazy.items():
        assert getattr(haltproof, name) is getattr(sys.modules[module], name), name
    assert isinstance(haltproof.__version__, str) and haltproof.__version__
    assert set(haltproof.__all__) <= set(dir(haltproof))
    with pytest.raises(AttributeError) as misspelt:
        haltproof.chekc      # noqa: B018  (misspelt on purpose)
    assert str(misspelt.value) == "module 'haltproof' has no attribute 'chekc'"
