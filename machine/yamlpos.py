"""Load YAML with the safe loader while keeping the line of every value.

PyYAML's `safe_load` forgets where values came from and lets a duplicate key silently
overwrite the first one; a verifier's input must do neither. We compose the node tree
with `SafeLoader` (no object construction from tags beyond the YAML core schema) and
build plain dicts/lists that remember the line of each key and item.
"""

from __future__ import annotations

from collections.abc import Callable
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


class YMap(dict[str, Any]):
    """A mapping that remembers its own line and the line of each value."""

    line: int
    lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.lines.get(key, self.line)


class YList(list[Any]):
    """A sequence that remembers its own line and the line of each item."""

    line: int
    lines: list[int]

    def line_of(self, index: int) -> int:
        return self.lines[index] if index < len(self.lines) else self.line


class YStr(str):
    """A string scalar that remembers its line and how YAML quoted it."""

    line: int
    block: bool  # literal/folded block scalar: its text starts on the next line
    end_line: int
    source: list[str]  # the file's lines, to find where in a folded scalar a piece of text is


# Limits that keep a hostile file from exhausting memory or the stack (docs/reference/spec-language.md).
MAX_DEPTH = 100             # collections nested in collections, aliases expanded
ALIAS_BUDGET = 100_000      # what aliases may add: 1 per node plus the length of each scalar


class YDecimal:
    """A decimal number (`0.85`) where the caller allows one: its exact text and line, never
    a float (0.1 is 1/10 to whoever reads `text`; a float would make it 0.1000000000000000055...)."""

    __slots__ = ("text", "line")

    def __init__(self, text: str, line: int):
        self.text, self.line = text, line

    def __repr__(self) -> str:
        return self.text


Path = tuple[str | int, ...]      # keys and list positions from the document's root


def load_yaml(text: str, file: str, decimals: Callable[[Path], bool] | None = None) -> Any:
    """Parse one YAML document into YMap/YList/scalars with line numbers. A decimal number
    is refused, except at the paths `decimals` accepts, where it is kept as a YDecimal."""
    loader = None
    try:
        loader = _Composer(text, file)      # its reader refuses control characters right here
        node = loader.get_single_node()
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
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        raise SpecError([Problem(file, 1, "the file is empty")])
    return _Builder(file, text.splitlines(), decimals).build(node, 0)


class _Alias:
    """An alias as composed: the node it names and the line where the alias itself stands
    (PyYAML hands back the anchored node, which only knows the anchor's line)."""

    __slots__ = ("target", "line")

    def __init__(self, target: yaml.Node, line: int):
        self.target, self.line = target, line


def _too_deep(file: str, line: int) -> SpecError:
    return SpecError([Problem(file, line, f"the YAML nests deeper than {MAX_DEPTH} levels")])


class _Composer(yaml.SafeLoader):
    """SafeLoader's composer (which recurses once per level: bounded here by MAX_DEPTH), keeping
    each alias apart so that building the values can count what aliases expand to."""

    def __init__(self, text: str, file: str):
        super().__init__(text)
        self.file = file
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            line = self.next_line()
            return _Alias(super().compose_node(parent, index), line)  # type: ignore[arg-type]  # an alias composes to its anchored node, never None
        if self.check_event(yaml.ScalarEvent):
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _too_deep(self.file, self.next_line())
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def next_line(self) -> int:
        """The line where the next event starts (types-PyYAML leaves `peek_event` unannotated)."""
        peek: Callable[[], yaml.Event] = self.peek_event
        mark = peek().start_mark
        assert mark is not None, "the parser marks where each event starts"
        return mark.line + 1


class _Builder:
    """Builds YMap/YList/scalars from composed nodes, expanding aliases within ALIAS_BUDGET.

    An alias shares its anchor's node, so ten levels of nine aliases ("billion laughs") is a
    short file that expands to 9^10 values; a recursive anchor (`&a [*a]`) never ends."""

    def __init__(self, file: str, source: list[str], decimals: Callable[[Path], bool] | None = None):
        self.file = file
        self.decimals = decimals
        self.path: list[str | int] = []     # where the node being built is
        self.source = source
        self.constructor = yaml.SafeLoader("")
        self.spent = 0                      # of ALIAS_BUDGET
        self.alias_line: int | None = None  # the outermost alias being expanded
        self.open: set[int] = set()         # collections being built: an alias to one is a cycle

    def fail(self, line: int, message: str, text: object = None) -> SpecError:
        return SpecError([Problem(self.file, line, message, None if text is None else str(text))])

    def build(self, node: Any, depth: int) -> Any:
        if isinstance(node, _Alias):
            if id(node.target) in self.open:
                raise self.fail(node.line, "this alias refers to a node that contains it: a spec "
                                           "cannot be a recursive structure")
            if self.alias_line is not None:
                return self.build(node.target, depth)
            self.alias_line = node.line
            try:
                return self.build(node.target, depth)
            finally:
                self.alias_line = None
        if self.alias_line is not None:
            self.spent += 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)
            if self.spent > ALIAS_BUDGET:
                raise self.fail(self.alias_line, f"aliases expand the spec past {ALIAS_BUDGET:,} "
                                                 "nodes and characters (a YAML alias bomb?)")
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if depth >= MAX_DEPTH:               # only aliases can nest deeper than the text
            raise _too_deep(self.file, self.alias_line or node.start_mark.line + 1)
        self.check_tag(node)
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, depth + 1)
            return self.sequence(node, depth + 1)
        finally:
            self.open.discard(id(node))

    def check_tag(self, node: yaml.Node) -> None:
        if node.tag not in _SAFE_TAGS:
            raise self.fail(node.start_mark.line + 1, "YAML tag not allowed in a spec", node.tag)

    def mapping(self, node: yaml.MappingNode, depth: int) -> YMap:
        out = YMap()
        out.line = node.start_mark.line + 1
        out.lines = {}
        for key_node, value_node in node.value:
            kline = key_node.line if isinstance(key_node, _Alias) else key_node.start_mark.line + 1
            if getattr(key_node, "tag", None) == "tag:yaml.org,2002:merge":
                raise self.fail(kline, "YAML merge keys ('<<') are not supported in a spec")
            key = self.build(key_node, depth)
            if isinstance(key, bool) and isinstance(key_node, yaml.ScalarNode):
                raise self.fail(kline, f"keys must be strings: YAML reads {key_node.value} as the boolean "
                                       f"{str(key).lower()}; quote it ('{key_node.value}')", key_node.value)
            if not isinstance(key, str):
                raise self.fail(kline, "keys must be strings", key)
            if key in out:
                raise self.fail(kline, f"duplicate key (first at line {out.lines[key]})", key)
            self.path.append(str(key))
            try:
                out[str(key)] = self.build(value_node, depth)
            finally:
                self.path.pop()
            out.lines[str(key)] = kline
        return out

    def sequence(self, node: yaml.SequenceNode, depth: int) -> YList:
        out = YList()
        out.line = node.start_mark.line + 1
        out.lines = []
        for i, item in enumerate(node.value):
            self.path.append(i)
            try:
                out.append(self.build(item, depth))
            finally:
                self.path.pop()
            out.lines.append(item.line if isinstance(item, _Alias) else item.start_mark.line + 1)
        return out

    def scalar(self, node: yaml.ScalarNode) -> Any:
        line = node.start_mark.line + 1
        if node.tag in _AS_TEXT:
            node = yaml.ScalarNode("tag:yaml.org,2002:str", node.value, node.start_mark, node.end_mark,
                                   node.style)
        self.check_tag(node)
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.fail(line, f"bad YAML value: {exc}") from None
        except ValueError:       # Python refuses to convert an integer of more than 4300 digits
            raise self.fail(line, f"bad YAML value: an integer of {len(node.value)} characters "
                                  "is too long") from None
        if isinstance(value, str):
            s = YStr(value)
            s.line = line
            s.block = node.style in ("|", ">")
            s.end_line = node.end_mark.line + 1
            s.source = self.source
            return s
        if isinstance(value, float):
            if self.decimals is not None and self.decimals(tuple(self.path)):
                return YDecimal(node.value, line)
            raise self.fail(line, "floating-point numbers are not allowed; domains are finite integers",
                            node.value)
        return value
