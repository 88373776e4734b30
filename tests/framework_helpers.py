"""What the framework tests share (test_framework_declaration, test_pydantic_ai*, test_openai_agents*)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def fresh_modules(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> Iterator[None]:
    """The examples' modules imported fresh inside, forgotten after, and the folders their imports
    put on sys.path taken off again: a later test file must not find another test's module first."""
    path = list(sys.path)
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        yield
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.path[:] = path
