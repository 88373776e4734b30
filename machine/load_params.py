"""Loading a spec's `params`: int ranges and lists, bools and enums, each a `Param`.
"""

from __future__ import annotations

import ast
import keyword
from functools import partial
from typing import Any

from . import expr as E
from .yamlpos import YList, YMap
from .specdata import Param
from .load_base import shortened
from .load_base import LoaderBase


class ParamsLoader(LoaderBase):
    """Loading a spec's `params`: int ranges and lists, bools and enums, each a `Param`."""

    # -- params
    def params(self, raw: Any, line: int) -> list[Param]:
        m = self.mapping(raw, line, "params")
        return [self.param(name, value, m.line_of(name)) for name, value in m.items()]
    def param(self, name: str, value: Any, pline: int) -> Param:
        """One param: a list of values (ints, strings or true/false: its kind follows), a
        single int, `{min, max}` (every int between, swept), `{min, max, values}` (`-p`
        may give any int between, `values` is the default sweep), `{values: [...]}`, or
        `{type: bool}`."""
        self.ident(name, pline, "a param name")
        if isinstance(value, YMap):
            return self.param_map(name, value, pline)
        if not isinstance(value, YList):       # one value: a constant int
            return Param(name, [self.integer(value, pline, f"param {name}")], pline)
        return self.param_list(name, list(value), [value.line_of(i) for i in range(len(value))], pline)
    def param_list(self, name: str, items: list[Any], lines: list[int], pline: int) -> Param:
        if not items:
            raise self.at(pline).error("a param needs at least one value", name)
        kind = "bool" if isinstance(items[0], bool) else "enum" if isinstance(items[0], str) else "int"
        for item, at in zip(items, lines):
            ok = (isinstance(item, bool) if kind == "bool" else isinstance(item, str) if kind == "enum"
                  else isinstance(item, int) and not isinstance(item, bool))
            if not ok:
                raise self.at(at).error(f"the values of param {name} must all be of one kind: "
                                        f"ints, strings, or true/false", shortened(item))
        if len(set(items)) != len(items):
            raise self.at(pline).error(f"param {name} lists a value twice", items)
        if kind == "enum":
            for item, at in zip(items, lines):
                if not (item.isidentifier() and not keyword.iskeyword(item)):
                    raise self.at(at).error(f"a value of enum param {name} must be a name "
                                            "(letters, digits, _), usable in expressions", item)
        return Param(name, [str(i) for i in items] if kind == "enum" else items, pline, kind=kind)
    def param_map(self, name: str, value: YMap, pline: int) -> Param:
        if "type" in value:
            self.keys(value, f"param {name}", {"type"}, {"type"})
            if value["type"] != "bool":
                raise self.at(value.line_of("type")).error(
                    f"param {name}: type may only be bool (ints and enums are told by their values)",
                    value["type"])
            return Param(name, [False, True], pline, kind="bool")
        if "min" not in value and "max" not in value:
            self.keys(value, f"param {name}", {"values"}, {"values"})
            raw = value["values"]
            if not isinstance(raw, YList):
                raise self.at(value.line_of("values")).error(f"values of param {name} must be a list")
            return self.param_list(name, list(raw), [raw.line_of(i) for i in range(len(raw))], pline)
        self.keys(value, f"param {name}", {"min", "max", "values"}, {"min", "max"})
        lo = self.integer(value["min"], value.line_of("min"), f"min of param {name}")
        hi = self.integer(value["max"], value.line_of("max"), f"max of param {name}")
        if lo > hi:
            raise self.at(pline).error(f"param {name} has min {lo} > max {hi}: no values")
        if "values" not in value:
            return Param(name, range(lo, hi + 1), pline)
        raw = value["values"]
        if not isinstance(raw, YList):
            raise self.at(value.line_of("values")).error(f"values of param {name} must be a list")
        swept = self.param_list(name, list(raw), [raw.line_of(i) for i in range(len(raw))], pline)
        if swept.kind != "int":
            raise self.at(value.line_of("values")).error(f"param {name} has min and max: its values "
                                                         "must be ints")
        outside = [v for v in swept.values if not lo <= v <= hi]
        if outside:
            raise self.at(value.line_of("values")).error(f"param {name}: value {outside[0]} is outside "
                                                         f"min {lo} .. max {hi}")
        return Param(name, swept.values, pline, within=range(lo, hi + 1))
    def param_binding(self, p: Param) -> E.Binding:
        return E.Binding(p.type, partial(ast.Name, "p_" + p.name, ast.Load()), what="param")
