"""Span maps: which plain OpenTelemetry GenAI spans (`chat`, `execute_tool`, ...) are which events
of a spec, for `haltproof traces` (docs/how-to/traces.md).

A map is a list of rules `{when: {ATTRIBUTE: VALUE, ...}, action: A, choices: {NAME: VALUE}}`,
tried in order. It is written in the spec (`spans:`, checked against the spec's actions and
choices as it loads) or in a file of its own (`--map FILE`); both are read by `span_rule`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class SpanMapError(ValueError):
    """A rule that is not one; the message starts with where the rule is."""


@dataclass(frozen=True)
class SpanRule:
    """One rule of a span map: a span whose attributes have these values is this event."""

    when: dict[str, Any]
    action: str
    choices: dict[str, Any]
    where: str

    def matches(self, attrs: dict[str, Any]) -> bool:
        return all(attrs.get(k) == v for k, v in self.when.items())


def span_rule(r: Any, where: str) -> SpanRule:
    """The rule `r` (a mapping as YAML or JSON reads it); `where` names it in every error."""
    if not isinstance(r, dict) or not isinstance(r.get("action"), str):
        raise SpanMapError(f"{where}: a rule is a mapping with an action (and when, choices)")
    unknown = sorted(set(r) - {"when", "action", "choices"})
    if unknown:
        raise SpanMapError(f"{where}: unknown key {unknown[0]!r} (a rule has when, action, choices)")
    when, choices = r.get("when", {}), r.get("choices", {})
    if not isinstance(when, dict) or not when:
        raise SpanMapError(f"{where}: when is a mapping of span attributes to their values")
    if not isinstance(choices, dict):
        raise SpanMapError(f"{where}: choices is a mapping (choice name: value)")
    return SpanRule({str(k): _plain(v) for k, v in when.items()}, str(r["action"]),
                    {str(k): _plain(v) for k, v in choices.items()}, where)


def _plain(v: Any) -> Any:
    """A value as plain Python types (the spec loader's position-keeping str, list and dict
    subclasses become str, list and dict), so a rule compares and prints the same however read."""
    if isinstance(v, str):
        return str(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v
