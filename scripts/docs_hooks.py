"""MkDocs hooks (mkdocs.yml `hooks:`): lay the package out for the API reference.

mkdocstrings reads the API from the source with griffe, which finds a package and its
subpackages by their folders. The repository keeps haltproof's subpackages in folders of their
own (`machine/`, `explorer/`, ...: `package-dir` in pyproject.toml), so this hook links them
into one `haltproof/` tree under `build/api-tree/` (git-ignored; `HALTPROOF_API_TREE=DIR` puts
it elsewhere, as mkdocs.yml's `paths:` reads the same variable), the layout pip installs, for
griffe to read. Nothing is imported: a docstring is read, never run.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
TREE = Path(os.environ.get("HALTPROOF_API_TREE") or ROOT / "build" / "api-tree")


def package_dirs() -> dict[str, Path]:
    """Each package of pyproject.toml's `package-dir` and the folder it is kept in."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {name: ROOT / folder for name, folder in setup["package-dir"].items()}


def _link(link: Path, target: Path) -> None:
    """`link` -> `target`, replacing a link that points elsewhere (safe when two builds race)."""
    if link.is_symlink() and link.resolve() == target.resolve():
        return
    if link.is_symlink():
        link.unlink()
    try:
        link.symlink_to(target)
    except FileExistsError:         # another build made it meanwhile
        pass


def lay_out(tree: Path = TREE) -> Path:
    """The tree: `haltproof/` holds the top package's files and a link per subpackage folder."""
    dirs = package_dirs()
    top = tree / "haltproof"
    top.mkdir(parents=True, exist_ok=True)
    for path in dirs["haltproof"].iterdir():
        if path.suffix in (".py", ".pyi", ".typed"):
            _link(top / path.name, path)
    for name, folder in dirs.items():
        if name != "haltproof":
            _link(tree.joinpath(*name.split(".")), folder)
    return tree


@event_priority(100)     # before mkdocstrings sets griffe's search paths up from `paths:`
def on_config(config: Any) -> Any:
    lay_out()
    return config
