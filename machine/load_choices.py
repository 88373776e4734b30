"""Loading a spec's choice sets: the shared `sets` and each action's `choose`, plain values,
conditional values and records.
"""

from __future__ import annotations

from typing import Any

from . import expr as E
from .yamlpos import YList, YMap
from .specdata import Unreachable, ChoiceSet
from .load_base import shortened
from .load_vars import VarsLoader


class ChoicesLoader(VarsLoader):
    """Loading a spec's choice sets: the shared `sets` and each action's `choose`, plain values,"""

    # -- choice sets
    def sets(self, raw: Any, line: int) -> dict[str, tuple[Any, int]]:
        m = self.mapping(raw, line, "sets")
        for name in m:
            self.ident(name, m.line_of(name), "a set name")
        return {name: (m[name], m.line_of(name)) for name in m}
    def action_choice_sets(self, aname: str, raw: Any, line: int) -> None:
        self.ident(aname, line, "an action name")
        a = self.mapping(raw, line, f"action {aname}")
        self.keys(a, f"action {aname}", {"when", "choose", "do", "description", "raises", "unreachable_when",
                                          "because", "run"})
        out = []
        if "choose" in a:
            ch = self.mapping(a["choose"], a.line_of("choose"), f"choose of action {aname}")
            for cname, craw in ch.items():
                cline = ch.line_of(cname)
                self.ident(cname, cline, "a choice name")
                when = None
                if isinstance(craw, YMap) and "values" in craw:     # {values: SET, when: COND}
                    self.keys(craw, f"choice {cname}", {"values", "when"}, {"values"})
                    when = (craw["when"], craw.line_of("when")) if "when" in craw else None
                    craw, cline = craw["values"], craw.line_of("values")
                elif isinstance(craw, YMap) and "when" in craw:      # {min, max, when}
                    when = (craw["when"], craw.line_of("when"))
                if isinstance(craw, str):
                    if craw not in self.sets_by_name:
                        raise self.at(cline).error(f"no set named {craw!r} under sets", craw)
                    craw, cline = self.sets_by_name[craw]
                cs = self.choice_set(cname, craw, cline)
                if when is not None:
                    cs.raw_when[None] = when
                out.append((cname, cs))
        self.action_choices[aname] = out
    def choice_set(self, name: str, raw: Any, line: int) -> ChoiceSet:
        if isinstance(raw, YMap):
            self.keys(raw, f"choice {name}", {"min", "max", "when"}, {"min", "max"})
            lo = self.int_expr(raw["min"], self.param_scope, raw.line_of("min"), f"min of choice {name}")
            hi = self.int_expr(raw["max"], self.param_scope, raw.line_of("max"), f"max of choice {name}")
            return ChoiceSet(name, "range", E.INT, lo=lo, hi=hi, line=line)
        if not isinstance(raw, YList):
            raise self.at(line).error(f"choice {name} must be a list of values or records, "
                                      "or a {min, max} range", shortened(raw))
        if not raw:
            raise self.at(line).error(f"choice {name} is an empty set: the action could never happen")
        if all(isinstance(r, YMap) and not _conditional_value(r) for r in raw):
            return self.record_set(name, raw, line)
        whens: dict[Any, tuple[Any, int]] = {}
        declared: dict[Any, Unreachable] = {}
        raw = self.conditional_values(name, raw, whens, declared)
        if any(isinstance(r, (YMap, YList)) for r in raw):
            raise self.at(line).error(f"choice {name} mixes records and plain values")
        for i, v in enumerate(raw):
            self.plain(v, raw.line_of(i), f"a value of choice {name}")
        kinds = {type(E.type_of_value(v)) for v in raw}
        if len(kinds) != 1:
            raise self.at(line).error(f"choice {name} mixes values of different types")
        if len(set(raw)) != len(raw):
            raise self.at(line).error(f"choice {name} lists a value twice")
        vals = [str(v) if isinstance(v, str) else v for v in raw]
        typ = E.type_of_value(vals[0])
        if isinstance(typ, E.EnumT):
            typ = E.EnumT(frozenset(vals), f"choice {name}")
        return ChoiceSet(name, "scalars", typ, items=[(v,) for v in vals], line=line,
                         raw_when={str(k) if isinstance(k, str) else k: w for k, w in whens.items()},
                         value_unreachable={str(k) if isinstance(k, str) else k: u for k, u in declared.items()})
    def conditional_values(self, name: str, raw: YList, whens: dict[Any, tuple[Any, int]],
                           declared: dict[Any, Unreachable]) -> YList:
        """A plain value list with `{value: V, when: COND}` items replaced by V, their
        conditions noted in `whens` (checked once the action's scope exists) and their
        `unreachable_when` declarations in `declared`."""
        out = YList()
        out.line = raw.line
        out.lines = []
        for i, item in enumerate(raw):
            at = raw.line_of(i)
            if _conditional_value(item):
                what = f"a value of choice {name}"
                self.keys(item, what, {"value", "when", "unreachable_when", "because"}, {"value"})
                if "when" not in item and "unreachable_when" not in item:
                    raise self.at(at).error(f"{what} written as a mapping needs a when or an unreachable_when")
                value = self.plain(item["value"], item.line_of("value"), what)
                if "when" in item:
                    whens[value] = (item["when"], item.line_of("when"))
                unreachable = self.unreachable(item, f"value {value} of choice {name}")
                if unreachable is not None:
                    declared[value] = unreachable
                item = value
            out.append(item)
            out.lines.append(at)
        return out
    def record_set(self, name: str, raw: YList, line: int) -> ChoiceSet:
        field_names: list[str] | None = None
        field_types: dict[str, E.Type] = {}
        items: list[tuple[Any, ...]] = []
        seen: dict[str, int] = {}
        whens: dict[Any, tuple[Any, int]] = {}
        declared: dict[Any, Unreachable] = {}
        for i, rec in enumerate(raw):
            rline = raw.line_of(i)
            if "name" not in rec or not isinstance(rec["name"], str):
                raise self.at(rline).error(f"each record of choice {name} needs a string 'name'")
            rname = str(rec["name"])
            if rname in seen:
                raise self.at(rline).error(f"choice {name} has two records named {rname!r} "
                                           f"(first at line {seen[rname]})")
            seen[rname] = rline
            if "when" in rec:            # where this record is a possible value (a record has no field `when`)
                whens[rname] = (rec["when"], rec.line_of("when"))
            unreachable = self.unreachable(rec, f"record {rname} of choice {name}")
            if unreachable is not None:
                declared[rname] = unreachable
            fields = sorted(k for k in rec if k not in ("name", "when", "unreachable_when", "because"))
            if field_names is None:
                field_names = fields
            elif fields != field_names:
                raise self.at(rline).error(f"record {rname!r} of choice {name} has fields "
                                           f"{fields}, the first record has {field_names}")
            for f in fields:
                self.ident(f, rec.line_of(f), "a record field name")
                value = rec[f]
                if isinstance(value, (YMap, YList)) or value is None:
                    raise self.at(rec.line_of(f)).error("a record field must be an integer, "
                                                        "true/false or a string", f)
                t = E.type_of_value(str(value) if isinstance(value, str) else value)
                prev = field_types.get(f)
                if prev is not None and type(prev) is not type(t):
                    raise self.at(rec.line_of(f)).error(
                        f"field {f} of choice {name} is {t} here but {prev} in an earlier record")
                both = E.unify(prev, t) if prev is not None else t
                assert both is not None, "two types of one kind unify"
                field_types[f] = both
            items.append(tuple([rname] + [str(rec[f]) if isinstance(rec[f], str) else rec[f]
                                          for f in field_names or []]))
        fields_idx = {f: (field_types[f], i + 1) for i, f in enumerate(field_names or [])}
        for f, (t, i) in fields_idx.items():
            if isinstance(t, E.EnumT):
                fields_idx[f] = (E.EnumT(t.values, f"{name}.{f}"), i)
        return ChoiceSet(name, "records", E.EnumT(frozenset(seen), f"choice {name}"),
                         items=items, fields=fields_idx, line=line, raw_when=whens, value_unreachable=declared)


def _conditional_value(item: Any) -> bool:
    """`{value: V, when: COND}` in a list of plain values (a record has a `name`)."""
    return isinstance(item, YMap) and "value" in item and "name" not in item
