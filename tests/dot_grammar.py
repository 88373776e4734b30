"""A strict parser for the DOT language, for tests that must prove DOT text valid without Graphviz.

It follows the grammar of https://graphviz.org/doc/info/lang.html: keywords are
case-insensitive; an ID is a name, a numeral, a double-quoted string (where only \\" is
an escape for the lexer) or an HTML string; comments are // and /* */ and lines starting
with #. It is stricter than pydot (which accepts `[label="a "b" c"]`), and returns what it
parsed: the graph's kind and name, its attribute statements, and every node and edge with
its attributes, quoted strings already read back to their text (\\n as a line break).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KEYWORDS = {"strict", "graph", "digraph", "node", "edge", "subgraph"}
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<edgeop>->|--)
  | (?P<numeral>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<name>[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]*)
  | (?P<qstring>"(?:[^"\\]|\\.|\\\n)*")
  | (?P<punct>[{}\[\];,=:])
""", re.X | re.S)


class DotSyntaxError(ValueError):
    pass


@dataclass
class Dot:
    strict: bool
    directed: bool
    name: str | None
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)   # graph/node/edge attr stmts
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


def _unquote(text: str) -> str:
    body = text[1:-1].replace("\\\n", "")
    return re.sub(r"\\(.)", lambda m: {"n": "\n", '"': '"', "\\": "\\"}.get(m.group(1), "\\" + m.group(1)),
                  body)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos, line = [], 0, 1
    while pos < len(text):
        if text[pos] == "#" and (pos == 0 or text[pos - 1] == "\n"):   # C preprocessor output line
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
            continue
        if text[pos] == "<":                                   # an HTML string: balanced < >
            depth, end = 0, pos
            while end < len(text):
                depth += {"<": 1, ">": -1}.get(text[end], 0)
                end += 1
                if depth == 0:
                    break
            if depth:
                raise DotSyntaxError(f"line {line}: unterminated HTML string")
            out.append(("id", text[pos:end], line))
            pos = end
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise DotSyntaxError(f"line {line}: unexpected {text[pos:pos + 20]!r}")
        kind, value = m.lastgroup, m.group()
        if kind == "name" and value.lower() in KEYWORDS:
            out.append(("kw", value.lower(), line))
        elif kind in ("numeral", "name"):
            out.append(("id", value, line))
        elif kind == "qstring":
            out.append(("id", _unquote(value), line))
        elif kind in ("edgeop", "punct"):
            out.append((value, value, line))
        line += value.count("\n")
        pos = m.end()
    out.append(("eof", "", line))
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0
        self._was_subgraph = False

    def peek(self, k: int = 0) -> tuple[str, str, int]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self, kind: str, value: str | None = None) -> str:
        t = self.peek()
        if t[0] != kind or (value is not None and t[1] != value):
            want = value or kind
            raise DotSyntaxError(f"line {t[2]}: expected {want!r}, found {t[1] or t[0]!r}")
        self.i += 1
        return t[1]

    def accept(self, kind: str, value: str | None = None) -> bool:
        t = self.peek()
        if t[0] == kind and (value is None or t[1] == value):
            self.i += 1
            return True
        return False

    def graph(self) -> Dot:
        strict = self.accept("kw", "strict")
        kind = self.take("kw")
        if kind not in ("graph", "digraph"):
            raise DotSyntaxError(f"expected graph or digraph, found {kind!r}")
        name = self.take("id") if self.peek()[0] == "id" else None
        self.dot = Dot(strict, kind == "digraph", name)
        self.take("{")
        self.stmt_list()
        self.take("}")
        self.take("eof")
        return self.dot

    def stmt_list(self) -> None:
        while self.peek()[0] != "}":
            self.stmt()
            self.accept(";")

    def stmt(self) -> None:
        t = self.peek()
        if t[0] == "kw" and t[1] in ("graph", "node", "edge"):
            self.i += 1
            attrs = self.attr_list(required=True)
            self.dot.defaults.setdefault(t[1], {}).update(attrs)
            return
        if t[0] == "id" and self.peek(1)[0] == "=":
            self.i += 2
            self.take("id")
            return
        first = self.node_or_subgraph()
        if self.peek()[0] in ("->", "--"):
            ends = [first]
            while self.peek()[0] in ("->", "--"):
                op = self.take(self.peek()[0])
                if (op == "->") != self.dot.directed:
                    raise DotSyntaxError(f"line {self.peek()[2]}: {op} in a "
                                         f"{'digraph' if self.dot.directed else 'graph'}")
                ends.append(self.node_or_subgraph())
            attrs = self.attr_list(required=False)
            for a, b in zip(ends, ends[1:]):
                for u in a:
                    for v in b:
                        self.dot.nodes.setdefault(u, {})
                        self.dot.nodes.setdefault(v, {})
                        self.dot.edges.append((u, v, dict(attrs)))
            return
        attrs = self.attr_list(required=False)
        if len(first) == 1 and not self._was_subgraph:
            self.dot.nodes.setdefault(first[0], {}).update(attrs)

    def node_or_subgraph(self) -> list[str]:
        self._was_subgraph = False
        if self.peek()[0] == "{" or self.peek() == ("kw", "subgraph", self.peek()[2]):
            self._was_subgraph = True
            if self.accept("kw", "subgraph") and self.peek()[0] == "id":
                self.i += 1
            before = set(self.dot.nodes)
            self.take("{")
            self.stmt_list()
            self.take("}")
            return [n for n in self.dot.nodes if n not in before]
        node = self.take("id")
        if self.accept(":"):
            self.take("id")
            if self.accept(":"):
                self.take("id")
        return [node]

    def attr_list(self, required: bool) -> dict[str, str]:
        attrs: dict[str, str] = {}
        if required and self.peek()[0] != "[":
            self.take("[")
        while self.accept("["):
            while self.peek()[0] != "]":
                key = self.take("id")
                self.take("=")
                attrs[key] = self.take("id")
                if not self.accept(";"):
                    self.accept(",")
            self.take("]")
        return attrs


def parse_dot(text: str) -> Dot:
    """Parse DOT text strictly; raise DotSyntaxError naming the line of the first mistake."""
    return _Parser(text).graph()
