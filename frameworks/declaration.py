"""What every framework's declaration file needs (machine/declarations.py has the contract):
reading its keys, importing the user's `module:attr` target, and writing the spec it expands
into as the YAML mapping a spec file would give, with lines.

The user's own nodes (`params`, `properties`, `expect`) go into the spec as they were read,
so a problem in them is reported at its own line; generated nodes carry the line of the
declaration key they come from.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.binding import import_user_object
from haltproof.machine.errors import Located, SpecError
from haltproof.machine.usercode import OutOfTime
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


def import_target(top: YMap, file: str, key: str = "target") -> Any:
    """The object `target: module:attr` (or another key's `module:attr`) names, imported from
    the working directory or the declaration's folder as `bind:` is
    (binding.import_user_module); a problem at the key's line otherwise."""
    return import_object(top[key], os.path.dirname(os.path.abspath(file)), Located(file, top.line_of(key)), key)


def import_object(ref: Any, folder: str, here: Located, key: str = "target") -> Any:
    """The object a `target:` (a `context:` or `deps:` hook, or `haltproof init`/`lint`'s TARGET)
    names as `module:attr`, its module imported from the working directory or else `folder`
    (binding.import_user_object); a problem names `key`."""
    if not isinstance(ref, str) or ref.count(":") != 1 or not all(ref.partition(":")[::2]):
        raise here.error(f"{key} must name the object as module:attr", ref)
    return import_user_object(ref, folder, here, key)


def mapping(top: YMap, key: str, file: str, what: str) -> YMap:
    """An optional mapping key of the declaration (empty when absent)."""
    value = top.get(key, YMap())
    if not isinstance(value, YMap):
        raise Located(file, top.line_of(key)).error(f"{key} must be a mapping of {what}")
    return value


def fail(file: str, line: int, message: str, text: object = None) -> SpecError:
    return Located(file, line).error(message, text)


def outcome_labels(declared: YMap, name: Any, file: str, key: str) -> YMap:
    """The labels `declared[name]` maps to outcomes (a model's answers, a tool's outcomes): a
    non-empty mapping whose every label is a plain identifier, else a problem at its line."""
    line = declared.line_of(name)
    labels = declared[name]
    if not isinstance(labels, YMap) or not labels:
        raise fail(file, line, f"{key}: {name} needs a mapping of outcome labels to outcomes")
    for label in labels:
        if not str(label).isidentifier():
            raise fail(file, labels.line_of(label), f"an outcome label of {name} must be a plain identifier", label)
    return labels


def quoted(text: str) -> str:
    """An agent's name as a string literal of the expression language (names have no quote)."""
    return "'" + text + "'"


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


# ---------------------------------------------------------------- scripted outcomes, run objects (context, deps)

@dataclass(frozen=True)
class Raises:
    """A scripted outcome that raises this exception where the user's code would have run (the
    framework's own handling of the exception decides the rest)."""

    cls: type[BaseException]
    message: str


def scripted_outcome(raw: Any, file: str, line: int, what: str) -> Any:
    """A scripted call's outcome: the value it returns (plain YAML data), or
    `{raises: CLASS, message: TEXT}` (a builtin exception's name or a dotted path)."""
    if not (isinstance(raw, dict) and "raises" in raw):
        return plain(raw)
    if not set(raw) <= {"raises", "message"}:
        raise fail(file, line, f"{what}: an outcome that raises is {{raises: CLASS, message: TEXT}}")
    from haltproof.machine.outcomes import Outcome, resolve
    ((cls, _),) = resolve([Outcome(str(raw["raises"]), None, None, {}, line)], file)
    return Raises(cls, str(raw.get("message", "")))


def give(outcome: Any) -> Any:
    """What a scripted outcome does when its call happens: raise its exception, or return a fresh
    copy of its value (the user's code may change what it gets)."""
    if isinstance(outcome, Raises):
        raise outcome.cls(outcome.message)
    return copy.deepcopy(outcome)


@dataclass(frozen=True)
class ScriptedCallable:
    """A callable inside a run object (`{scripted: {label: outcome}}`): each call answers the
    outcome the transition's choice `choice` names, as the environment (a search backend, an
    HTTP client's method) would."""

    path: str                   # where it sits: `search_backend.search`
    choice: str                 # the transition's choice naming its outcome
    outcomes: dict[str, Any]    # label -> a returned value or Raises
    line: int
    is_async: bool | None       # None: as the declared type's method is (`async def` or not)
    lines: dict[str, int] = dataclasses.field(default_factory=dict)     # label -> its line


@dataclass(frozen=True)
class FromParam:
    """A run object's value taken from a param (`{param: NAME}`), swept like any param."""

    name: str


@dataclass
class RunObject:
    """`context:` or `deps:` as declared: a `module:attr` hook making the object from the params,
    or the object's fields as YAML data, with scripted callables and params inside."""

    key: str                                        # `context` or `deps`
    line: int
    hook: Callable[..., Any] | None = None
    fields: dict[str, Any] | None = None            # plain data, nested dicts, ScriptedCallable, FromParam
    scripted: list[ScriptedCallable] = dataclasses.field(default_factory=list)

    def choices(self) -> dict[str, list[str]]:
        """The choice of each scripted callable: its outcome on this transition."""
        return {s.choice: list(s.outcomes) for s in self.scripted}

    def declared(self) -> list[Choice]:
        """Those choices at their declaration's lines (for the generated spec)."""
        return [Choice(s.choice, s.line, dict(s.lines)) for s in self.scripted]

    def build(self, params: Mapping[str, Any], chosen: Callable[[], Mapping[str, Any]], cls: Any = None) -> Any:
        """A fresh object for one run: the hook's, or the fields made into `cls` (the type the
        framework declares for it), its scripted callables
        answering what `chosen()` (the transition's choices) names; see `make`."""
        if self.hook is not None:
            return call_hook(self.hook, params)
        assert self.fields is not None, "a run object is a hook or fields"
        return make(cls, {k: _built(v, params, chosen, _field_type(cls, k)) for k, v in self.fields.items()})


def call_hook(hook: Callable[..., Any], params: Mapping[str, Any]) -> Any:
    """A hook called with the run's params (a dict) when it takes a required argument, else with
    none (a class whose fields all have defaults, a factory of no argument)."""
    try:
        required = [p for p in inspect.signature(hook).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):     # no signature to read (a builtin): no argument
        required = []
    return hook(dict(params)) if required else hook()


def make(cls: Any, fields: dict[str, Any]) -> Any:
    """`fields` as the object the framework declares: a dict for a mapping type (a TypedDict,
    dict), the class built from them for any other class (a dataclass, a pydantic model), else
    (no type declared) an object with attributes, which is what the frameworks' docs read:
    `runtime.context.x`, `ctx.deps.x`, `wrapper.context.x`."""
    if typing.is_typeddict(cls) or (isinstance(cls, type) and issubclass(cls, Mapping)):
        return dict(fields)
    if isinstance(cls, type) and cls not in (type(None), object):
        return cls(**fields)
    return types.SimpleNamespace(**fields)


def _field_type(cls: Any, name: str) -> Any:
    """The declared type of field `name` of `cls` (None when unknown), to tell its methods' kind."""
    try:
        return typing.get_type_hints(cls).get(name) if isinstance(cls, type) else None
    except Exception:       # annotations naming what cannot be resolved here: not known
        return None


def _built(value: Any, params: Mapping[str, Any], chosen: Callable[[], Mapping[str, Any]], cls: Any) -> Any:
    """One declared value made for a run: a param's value, a scripted callable, a nested object."""
    if isinstance(value, FromParam):
        return params[value.name]
    if isinstance(value, ScriptedCallable):
        return scripted_call(value, chosen, _is_async(value, cls))
    if isinstance(value, dict):
        built = {k: _built(v, params, chosen, _method_owner(cls, k)) for k, v in value.items()}
        return types.SimpleNamespace(**built) if _holds_scripted(value) else built
    return copy.deepcopy(value)


def _method_owner(cls: Any, name: str) -> Any:
    """What a nested value's declared type says about its part `name`: the type itself for a
    method (its kind is read there), the field's type for a field."""
    if isinstance(cls, type) and callable(getattr(cls, name, None)):
        return cls
    return _field_type(cls, name)


def _is_async(s: ScriptedCallable, owner: Any) -> bool:
    """`async: true`, or the declared type's method of that name is `async def`."""
    if s.is_async is not None:
        return s.is_async
    method = getattr(owner, s.path.rpartition(".")[2], None) if isinstance(owner, type) else None
    return inspect.iscoroutinefunction(method)


def _holds_scripted(value: Any) -> bool:
    if isinstance(value, ScriptedCallable):
        return True
    return isinstance(value, dict) and any(_holds_scripted(v) for v in value.values())


def scripted_call(s: ScriptedCallable, chosen: Callable[[], Mapping[str, Any]], is_async: bool) -> Any:
    """The callable a run's object holds: each call gives the outcome the transition chose."""
    def answer() -> Any:
        choices = chosen()
        if s.choice not in choices:
            raise RuntimeError(f"{s.path} was called on a transition that does not choose {s.choice} "
                               f"(it chooses {sorted(choices)})")
        return give(s.outcomes[choices[s.choice]])

    if is_async:
        async def scripted_async(*args: Any, **kwargs: Any) -> Any:
            return answer()
        scripted_async.__qualname__ = s.path
        return scripted_async

    def scripted(*args: Any, **kwargs: Any) -> Any:
        return answer()
    scripted.__qualname__ = s.path
    return scripted


RUN_OBJECT_KEYS = ("scripted", "async")


def run_object(top: YMap, key: str, file: str, params: Any) -> RunObject | None:
    """The declaration's `context:` or `deps:` (None when absent): a `module:attr` hook, or a
    mapping of the object's fields (`{scripted: {label: outcome}}` a scripted callable,
    `{param: NAME}` a param's value, other values plain data)."""
    if key not in top:
        return None
    line, raw = top.line_of(key), top[key]
    if isinstance(raw, str):
        hook = import_target(top, file, key)
        if not callable(hook):
            raise fail(file, line, f"{key} must name a class or function making the run's {key} object "
                                   f"(it names a {type(hook).__name__})")
        return RunObject(key, line, hook=hook)
    if not isinstance(raw, YMap):
        raise fail(file, line, f"{key} must be a mapping of the {key} object's fields, or module:attr naming a "
                               f"function of the params that makes it")
    out = RunObject(key, line)
    out.fields = _fields(raw, key, [], file, params, out.scripted)
    return out


def _fields(raw: YMap, key: str, path: list[str], file: str, params: Any, scripted: list[ScriptedCallable]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in raw.items():
        line = raw.line_of(name)
        where = [*path, str(name)]
        if not str(name).isidentifier():
            raise fail(file, line, f"{key}: a field name must be a plain identifier", name)
        if isinstance(value, YMap) and "scripted" in value:
            scripted.append(_scripted(value, key, where, file, line))
            out[str(name)] = scripted[-1]
        elif isinstance(value, YMap) and set(value) == {"param"}:
            if not isinstance(params, Mapping) or value["param"] not in params:
                raise fail(file, value.line_of("param"), f"{key}: {'.'.join(where)} names no param "
                           f"{value['param']!r} (params: {', '.join(params or ()) or 'none'})")
            out[str(name)] = FromParam(str(value["param"]))
        elif isinstance(value, YMap):
            out[str(name)] = _fields(value, key, where, file, params, scripted)
        else:
            out[str(name)] = plain(value)
    return out


def _scripted(value: YMap, key: str, where: list[str], file: str, line: int) -> ScriptedCallable:
    """`{scripted: {label: outcome}, async: BOOL}`: a callable whose every call answers one outcome."""
    path = ".".join(where)
    extra = set(value) - set(RUN_OBJECT_KEYS)
    if extra:
        raise fail(file, line, f"{key}: {path}: a scripted callable has the keys scripted and async only", sorted(extra)[0])
    outcomes = value["scripted"]
    if not isinstance(outcomes, YMap) or not outcomes:
        raise fail(file, value.line_of("scripted"), f"{key}: {path}: scripted needs a mapping of outcome labels "
                                                    "to outcomes (a value returned, or {raises: CLASS, message: TEXT})")
    is_async = value.get("async")
    if is_async is not None and not isinstance(is_async, bool):
        raise fail(file, value.line_of("async"), f"{key}: {path}: async must be true or false", is_async)
    read: dict[str, Any] = {}
    for label, raw in outcomes.items():
        at = outcomes.line_of(label)
        if not str(label).isidentifier():
            raise fail(file, at, f"{key}: an outcome label of {path} must be a plain identifier", label)
        read[str(label)] = scripted_outcome(raw, file, at, f"{key}: outcome {label} of {path}")
    return ScriptedCallable(path, "_".join(where) + "_returns", read, line, is_async,
                            {str(label): outcomes.line_of(label) for label in outcomes})


def first_values(params: Any) -> dict[str, Any]:
    """Each declared param's first value (a list's first, a range's min): enough to build a run
    object once at load and report a problem with it at its line."""
    out: dict[str, Any] = {}
    for name, raw in (params or {}).items():
        if isinstance(raw, list) and raw:
            out[str(name)] = plain(raw[0])
        elif isinstance(raw, dict) and "min" in raw:
            out[str(name)] = raw["min"]
        elif isinstance(raw, dict) and isinstance(raw.get("values"), list) and raw["values"]:
            out[str(name)] = plain(raw["values"][0])
        else:
            out[str(name)] = plain(raw)
    return out


def check_run_object(obj: RunObject, file: str, params: Any, cls: Any) -> Any:
    """The object built once at load (with each param's first value): a hook that fails, or
    fields the declared type refuses, are reported at the key's line, not in every run."""
    try:
        return usercode.run(obj.build, first_values(params), dict, cls)
    except OutOfTime as stop:
        stop.note(f"making the {obj.key} object")
        raise
    except Exception as exc:        # the user's hook or type may fail in any way
        what = f"the {obj.key} hook" if obj.hook is not None else f"{_type_name(cls)} from the {obj.key} fields"
        raise fail(file, obj.line, f"making {what} failed: {type(exc).__name__}: {exc}") from None


def _type_name(cls: Any) -> str:
    return getattr(cls, "__name__", None) or "the object"


# ---------------------------------------------------------------- generated choices, at the declaration's lines

@dataclass
class Choice:
    """A choice of the generated spec, with the declaration's lines its parts come from: a
    warning or an error about it (a value that never makes a difference, a `when:` that does not
    parse) names the line the user wrote, not the `framework` line."""

    name: str
    line: int                                           # the declaring key (the model, node, tool)
    labels: dict[str, int]                              # label -> its line
    when: dict[str, tuple[Any, int]] = dataclasses.field(default_factory=dict)   # label -> (guard, its line)


def choose_node(choices: list[Choice]) -> YMap:
    """An action's `choose:` mapping, as a spec file would give it, at the choices' own lines; a
    guarded label is `{value: LABEL, when: GUARD}` (docs/reference/spec-language.md, conditional choices)."""
    out = YMap()
    out.lines = {}
    for c in choices:
        values = YList()
        values.line, values.lines = c.line, []
        for label, line in c.labels.items():
            if label in c.when:
                guard, at = c.when[label]
                item = YMap({"value": label, "when": guard})
                item.line, item.lines = line, {"value": line, "when": at}
                values.append(item)
            else:
                values.append(label)
            values.lines.append(line)
        out[c.name] = values
        out.lines[c.name] = c.line
    out.line = min((c.line for c in choices), default=0)
    return out


def guard_of(raw: Any, file: str, what: str) -> tuple[Any, tuple[Any, int] | None]:
    """An answer written with `when: GUARD` (a condition over the generated machine's vars and the
    params, docs/how-to/langgraph.md): the answer without it, and (the guard, its line)."""
    if not (isinstance(raw, YMap) and "when" in raw):
        return raw, None
    guard, line = raw["when"], raw.line_of("when")
    if not isinstance(guard, (str, bool)):
        raise fail(file, line, f"{what}: when must be a condition (an expression over the vars and params)", guard)
    rest = YMap({k: v for k, v in raw.items() if k != "when"})
    rest.line, rest.lines = raw.line, {k: raw.line_of(k) for k in rest}
    if set(rest) == {"answer"}:         # `{answer: TEXT, when: ...}`: a text answer with a guard
        return rest["answer"], (guard, line)
    return rest, (guard, line)


def lined(entries: dict[str, Any], lines: Mapping[str, int]) -> YMap:
    """A generated mapping (the spec's `actions:`, say) whose every key sits at the line of the
    declaration key it comes from, as does all that is under it (nodes read from the file keep
    their own lines)."""
    out = YMap({name: node(value, lines[name]) for name, value in entries.items()})
    out.lines = {name: lines[name] for name in entries}
    out.line = min(out.lines.values(), default=0)
    return out


# ---------------------------------------------------------------- what the user's functions read and write (warnings)

MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "add", "discard", "setdefault",
            "popitem"}


def function_tree(fn: Any) -> tuple[Any, str] | None:
    """A function's syntax tree and the name of its first parameter (a node's state, a tool's
    context wrapper), or None when its source cannot be read (a builtin, a lambda's line)."""
    import ast
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    found = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if found is None:
        return None
    args = [a.arg for a in found.args.posonlyargs + found.args.args if a.arg not in ("self", "cls")]
    return (found, args[0]) if args else None


def is_name(node: Any, name: str) -> bool:
    import ast
    return isinstance(node, ast.Name) and node.id == name


def literal_text(node: Any) -> str | None:
    """A string literal's text, else None."""
    import ast
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def run_object_fields(fn: Any, attr: str) -> tuple[set[str], set[str]] | None:
    """The fields of the run object a tool writes and reads, from its source: `P.<attr>.F`, P its
    first parameter (the SDK's `RunContextWrapper`, Pydantic AI's `RunContext`), `attr` `context`
    or `deps`. Written: assigned, augmented, an item assigned, or changed by a method such as
    `append`; read: any other use. None when the source cannot be read."""
    import ast
    parsed = function_tree(fn)
    if parsed is None:
        return None
    tree, param = parsed

    def field_of(node: Any) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == attr and is_name(node.value.value, param):
            return node.attr
        return None
    writes: set[str] = set()
    written: set[int] = set()         # the nodes of the writes, not reads
    for n in ast.walk(tree):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        for t in targets:
            at = t.value if isinstance(t, ast.Subscript) else t
            if field_of(at) is not None:
                writes.add(str(field_of(at)))
                written.add(id(at))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MUTATORS \
                and field_of(n.func.value) is not None:
            writes.add(str(field_of(n.func.value)))
            written.add(id(n.func.value))
    reads = {str(field_of(n)) for n in ast.walk(tree) if field_of(n) is not None and id(n) not in written}
    return writes, reads


def skipped_writes(scripted: dict[str, dict[str, int]], functions: dict[str, Any], attr: str) -> list[tuple[int, str]]:
    """A warning at each scripted tool outcome that skips the tool's writes to the run object
    (`attr`: context or deps) when another tool reads what it writes: a scripted outcome replaces
    the tool's code, so that field keeps its old value. `scripted`: tool -> the lines of its
    outcomes that skip it, by label; `functions`: every tool's function, by name."""
    fields = {name: run_object_fields(fn, attr) for name, fn in functions.items()}
    out: list[tuple[int, str]] = []
    for tool, lines in scripted.items():
        writes = (fields.get(tool) or (set(), set()))[0]
        for label, line in lines.items():
            for field in sorted(writes):
                who = [f"tool {name}" for name, found in fields.items()
                       if name != tool and found is not None and field in found[1]]
                if who:
                    out.append((line, f"outcome {label} of tool {tool} leaves out what {tool} writes to {attr}.{field}, "
                                      f"which {' and '.join(who)} read{'s' if len(who) == 1 else ''}: a scripted "
                                      f"outcome replaces the tool's code, so {attr}.{field} keeps its old value "
                                      f"there; script what {tool} calls instead ({attr}:), or let it run"))
    return out
