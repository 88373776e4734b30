"""Load YAML with the safe loader while keeping the line of every value.

PyYAML's `safe_load` forgets where values came from and lets a duplicate key silently
overwrite the first one; a verifier's input must do neither. We compose the node tree
with `SafeLoader` (no object construction from tags beyond the YAML core schema) and
build plain dicts/lists that remember the line of each key and item.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import Problem, SpecError

_SAFE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}
# Scalars YAML would turn into dates or its '=' value key: in a spec they are just text.
_AS_TEXT = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}


class YMap(dict):
    """A mapping that remembers its own line and the line of each value."""

    line: int
    lines: dict

    def line_of(self, key: str) -> int:
        return self.lines.get(key, self.line)


class YList(list):
    """A sequence that remembers its own line and the line of each item."""

    line: int
    lines: list

    def line_of(self, index: int) -> int:
        return self.lines[index] if index < len(self.lines) else self.line


class YStr(str):
    """A string scalar that remembers its line and how YAML quoted it."""

    line: int
    block: bool  # literal/folded block scalar: its text starts on the next line
    end_line: int
    source: list  # the file's lines, to find where in a folded scalar a piece of text is


def load_yaml(text: str, file: str) -> Any:
    """Parse one YAML document into YMap/YList/scalars with line numbers."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        context = getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        msg = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, yaml.reader.ReaderError):      # a character YAML refuses: no mark, a position
            line = text.count("\n", 0, exc.position) + 1
            msg = f"unacceptable character #x{exc.character:04x}: {exc.reason}"
        opened = str(getattr(exc, "context", "") or "")
        if (context is not None and mark is not None and context.line < mark.line
                and opened.startswith(("while parsing a flow", "while scanning a quoted"))):
            # An unclosed bracket or quote is noticed lines later; point at where it opened.
            what = opened.replace("while parsing a ", "").replace("while scanning a ", "")
            msg = f"the {what} that starts here is not closed ({msg} at line {line})"
            line = context.line + 1
        raise SpecError([Problem(file, line, f"not valid YAML: {msg}")]) from None
    if node is None:
        raise SpecError([Problem(file, 1, "the file is empty")])
    constructor = yaml.SafeLoader("")
    return _build(node, file, constructor, text.splitlines())


def _build(node: yaml.Node, file: str, constructor: yaml.SafeLoader, source: list[str]) -> Any:
    line = node.start_mark.line + 1
    if node.tag in _AS_TEXT and isinstance(node, yaml.ScalarNode):
        node = yaml.ScalarNode("tag:yaml.org,2002:str", node.value, node.start_mark, node.end_mark,
                               node.style)
    if node.tag not in _SAFE_TAGS:
        raise SpecError([Problem(file, line, "YAML tag not allowed in a spec", node.tag)])
    if isinstance(node, yaml.MappingNode):
        out = YMap()
        out.line = line
        out.lines = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise SpecError([Problem(file, key_node.start_mark.line + 1,
                                         "YAML merge keys ('<<') are not supported in a spec")])
            key = _build(key_node, file, constructor, source)
            kline = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise SpecError([Problem(file, kline, "keys must be strings", key)])
            if key in out:
                raise SpecError([Problem(file, kline,
                                         f"duplicate key (first at line {out.lines[key]})", key)])
            out[str(key)] = _build(value_node, file, constructor, source)
            out.lines[str(key)] = kline
        return out
    if isinstance(node, yaml.SequenceNode):
        out_list = YList()
        out_list.line = line
        out_list.lines = []
        for item in node.value:
            out_list.append(_build(item, file, constructor, source))
            out_list.lines.append(item.start_mark.line + 1)
        return out_list
    try:
        value = constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise SpecError([Problem(file, line, f"bad YAML value: {exc}")]) from None
    except ValueError:       # Python refuses to convert an integer of more than 4300 digits
        raise SpecError([Problem(file, line, f"bad YAML value: an integer of {len(node.value)} "
                                             "characters is too long")]) from None
    if isinstance(value, str):
        s = YStr(value)
        s.line = line
        s.block = node.style in ("|", ">")
        s.end_line = node.end_mark.line + 1
        s.source = source
        return s
    if isinstance(value, float):
        raise SpecError([Problem(file, line, "floating-point numbers are not allowed; "
                                              "domains are finite integers", node.value)])
    return value
