"""The JSON Schema of `haltproof-report/1`, as the package ships it (src/haltproof/report.schema.json),
and the check that every report the suite writes goes through.

Every report is validated against the schema with every object closed (`closed`), so a key
the code writes that the schema does not describe fails the test that wrote it; the published
schema stays open (a later release may add keys, and a reader must ignore the ones it does
not know). Two hooks, both set up by tests/conftest.py:

- `watch_reports` wraps `haltproof.reports.report.to_json`, the one builder of the report
  dict, before any test module imports it: every report built in this process (the command
  line, `haltproof.check(...).to_json()`, the tests that call it directly) is validated, and
  the autouse fixture `reports_follow_the_schema` fails the test that built a broken one.
- `validate_outputs`: the `cli` and `check` fixtures hand it what a command wrote, for the
  form made after the dict, the ITF traces of `--trace-format itf` (stdout and `--json FILE`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

REPORT = "haltproof-report/1"


def published() -> dict[str, Any]:
    """The schema as the installed package ships it."""
    return json.loads(resources.files("haltproof").joinpath("report.schema.json").read_text(encoding="utf-8"))


def closed(schema: Any) -> Any:
    """`schema` with `additionalProperties: false` on every object that lists its properties and
    says nothing about others: only what the schema describes may appear."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) if k not in ("const", "enum") else v for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@cache
def strict_validator() -> jsonschema.Draft202012Validator:
    """The closed schema's validator; a tuple counts as an array, as `json.dumps` writes one."""
    schema = closed(published())
    jsonschema.Draft202012Validator.check_schema(schema)
    arrays = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "array", lambda checker, value: isinstance(value, (list, tuple)))
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=arrays)
    return validator(schema)


def problems(data: Any) -> list[str]:
    """Each place where `data` breaks the closed schema: `path: message` (the first ten). Where
    no branch of an `anyOf` fits (a trace that is neither haltproof's nor ITF), the deepest
    problem of the closest branch is named, not the whole value."""
    errors = sorted(strict_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in map(_deepest, errors[:10])]


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The error itself, or for an `anyOf` no branch fits, the deepest error of its branches
    (the first branch's on a tie): where the value went wrong, not the whole value."""
    if not error.context:
        return error
    return _deepest(max(error.context, key=lambda e: len(e.relative_path)))


def assert_valid(data: Any, what: str) -> None:
    found = problems(data)
    assert not found, f"{what} breaks {REPORT}'s schema (src/haltproof/report.schema.json):\n" + "\n".join(found)


def _option(args: list[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` in a command line (the last one given)."""
    found = None
    for k, arg in enumerate(args):
        if arg == name and k + 1 < len(args):
            found = args[k + 1]
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1:]
    return found


def validate_outputs(args: list[str], code: int, out: str) -> None:
    """Validate the ITF reports one in-process `haltproof ARGS` wrote (`--trace-format itf`):
    stdout when it is the report, and the `--json` file when the command wrote one (a usage
    error writes none). Other reports were validated as dicts, when they were built."""
    if args[:1] != ["check"] or _option(args, "--trace-format") != "itf":
        return
    if out.lstrip().startswith("{"):
        data = json.loads(out)
        if isinstance(data, dict) and data.get("schema") == REPORT:
            assert_valid(data, f"the report on stdout of `haltproof {' '.join(args)}`")
    target = _option(args, "--json")
    if target and code in (0, 1, 3) and Path(target).is_file():
        assert_valid(json.loads(Path(target).read_text(encoding="utf-8")), f"--json {target}")


BROKEN: list[str] = []      # what the reports built since the current test started got wrong


def watch_reports() -> None:
    """Validate every report dict `haltproof.reports.report.to_json` builds from now on, noting
    the problems in BROKEN (an assertion raised inside the command line would become its
    exit 4, and hide what is wrong)."""
    from haltproof.reports import report
    built = report.to_json
    if getattr(built, "watched", False):
        return

    def to_json(runs: list[Any]) -> dict[str, Any]:
        data = built(runs)
        BROKEN.extend(problems(data))
        return data
    to_json.watched = True       # type: ignore[attr-defined]
    to_json.__doc__ = built.__doc__
    report.to_json = to_json
