"""What every framework's declaration file needs (machine/declarations.py has the contract):
reading its keys, importing the user's `module:attr` target, and writing the spec it expands
into as the YAML mapping a spec file would give, with lines.

The user's own nodes (`params`, `properties`, `expect`) go into the spec as they were read,
so a problem in them is reported at its own line; generated nodes carry the line of the
declaration key they come from.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from importlib import metadata
from typing import Any

from haltproof.machine.binding import import_user_object
from haltproof.machine.errors import Located, SpecError
from haltproof.machine.yamlpos import YList, YMap

COMMON_KEYS = {"framework", "target", "machine", "description", "params", "properties", "expect"}


def node(value: Any, line: int) -> Any:
    """`value` as the YAML loader gives it (YMap, YList), every part at `line`; nodes already
    read from the file (a YMap or YList) keep their own lines."""
    if isinstance(value, (YMap, YList)):
        return value
    if isinstance(value, dict):
        out = YMap({k: node(v, line) for k, v in value.items()})
        out.line, out.lines = line, {k: line for k in value}
        return out
    if isinstance(value, list):
        items = YList(node(v, line) for v in value)
        items.line, items.lines = line, [line] * len(value)
        return items
    return value


def check_keys(top: YMap, file: str, allowed: set[str], required: set[str]) -> None:
    """Every key known, every required one there: else a problem at its line."""
    for key in top:
        if key not in allowed:
            raise Located(file, top.line_of(key)).error(
                f"unknown key in a {top['framework']} declaration (allowed: {', '.join(sorted(allowed))})", key)
    for key in sorted(required):
        if key not in top:
            raise Located(file, top.line).error(f"a {top['framework']} declaration needs the key {key!r}")


def begin(top: YMap, file: str, require: Callable[[], str], allowed: set[str], required: set[str]) -> None:
    """What every declaration checks first: the framework installed in its supported range (else
    `require`'s message at the `framework` line), every key known and the required ones there."""
    try:
        require()
    except RuntimeError as exc:
        raise fail(file, top.line_of("framework"), str(exc)) from None
    check_keys(top, file, allowed, required)


def import_target(top: YMap, file: str) -> Any:
    """The object `target: module:attr` names, imported from the working directory or the
    declaration's folder as `bind:` is (binding.import_user_module); a problem at the
    target's line otherwise."""
    return import_object(top["target"], os.path.dirname(os.path.abspath(file)), Located(file, top.line_of("target")))


def import_object(ref: Any, folder: str, here: Located) -> Any:
    """The object a `target:` (or `haltproof init`/`lint`'s TARGET) names as `module:attr`, its module
    imported from the working directory or else `folder` (binding.import_user_object)."""
    if not isinstance(ref, str) or ref.count(":") != 1 or not all(ref.partition(":")[::2]):
        raise here.error("target must name the object as module:attr", ref)
    return import_user_object(ref, folder, here, "target")


def mapping(top: YMap, key: str, file: str, what: str) -> YMap:
    """An optional mapping key of the declaration (empty when absent)."""
    value = top.get(key, YMap())
    if not isinstance(value, YMap):
        raise Located(file, top.line_of(key)).error(f"{key} must be a mapping of {what}")
    return value


def fail(file: str, line: int, message: str, text: object = None) -> SpecError:
    return Located(file, line).error(message, text)


def plain(value: Any) -> Any:
    """A value read from YAML as plain Python data (what a framework's state and messages take)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return str(value) if isinstance(value, str) else value


def with_user_properties(top: YMap, file: str, builtin: dict[str, Any], what: str) -> YMap:
    """The out-of-the-box properties (at the `framework` line), then the user's own `properties`
    as read (their lines kept); a user's property named like a built-in one is refused at its line."""
    user = top.get("properties", YMap())
    if not isinstance(user, YMap):
        raise fail(file, top.line_of("properties"), "properties must be a mapping")
    for name in user:
        if name in builtin:
            raise fail(file, user.line_of(name), f"{name} is an out-of-the-box property of every {what} "
                                                 "declaration: give yours another name")
    properties: YMap = node(builtin, top.line_of("framework"))
    properties.update(user)
    properties.lines.update(user.lines if user else {})
    return properties


def keep_user_lines(spec: YMap, top: YMap) -> YMap:
    """The generated spec, its keys taken from the declaration at their own lines (`bind` at the target's)."""
    spec.lines.update({k: top.line_of(k) for k in ("params", "properties", "expect", "machine", "description")
                       if k in top})
    spec.lines["bind"] = top.line_of("target")
    return spec


Version = tuple[int, ...]


@functools.cache
def supported_range(module: str, dist: str) -> tuple[Version, Version, str]:
    """The versions of `dist` haltproof's extra for `module` accepts, read from the installed
    haltproof's own metadata (pyproject.toml's extras: the one place the ranges are written):
    (lowest, first excluded, the range as written `>=LOW,<HIGH`)."""
    extra = module.replace("_", "-")
    for line in metadata.requires("haltproof") or ():
        requirement, _, marker = line.partition(";")
        name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
        if name and name.group() == dist and f'extra == "{extra}"' in marker:
            bounds = _bounds(requirement.strip()[name.end():], line)
            return release(bounds[">="]), release(bounds["<"]), f">={bounds['>=']},<{bounds['<']}"
    raise RuntimeError(f"haltproof's metadata names no {dist} in its extra [{extra}]: reinstall haltproof")


def _bounds(specifier: str, line: str) -> dict[str, str]:
    """`>=LOW,<HIGH` (in either order) as {">=": LOW, "<": HIGH}: the only form a framework extra is written in."""
    bounds = {}
    for part in specifier.split(","):
        found = re.fullmatch(r"\s*(>=|<)\s*(\d+(?:\.\d+)*)\s*", part)
        if found is None:
            break
        bounds[found[1]] = found[2]
    if set(bounds) != {">=", "<"} or len(specifier.split(",")) != 2:
        raise RuntimeError(f"haltproof's requirement {line!r} is not written >=LOW,<HIGH")
    return bounds


def release(version: str) -> Version:
    """A version's release numbers (`1.2.24` -> (1, 2, 24); `1.3.0rc1` -> (1, 3)), compared
    with trailing zeros dropped, as PEP 440 compares them (1.2 == 1.2.0)."""
    numbers = [int(n) for n in re.findall(r"\d+", re.split(r"[^\d.]", version)[0])]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def require_version(module: str, dist: str, what: str) -> str:
    """The installed version of `dist`, or a clear error naming it when it is missing or outside
    the range of haltproof's extra for `module` (supported_range)."""
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise RuntimeError(f"haltproof.frameworks.{module} needs {what}: "
                           f"pip install 'haltproof[{module.replace('_', '-')}]'") from None
    low, high, shown = supported_range(module, dist)
    if not low <= release(version) < high:
        raise RuntimeError(f"haltproof.frameworks.{module} supports {dist} {shown}; {dist} {version} is installed")
    return version
