"""Loading a spec's `vars`: each var's kind, domain, initial values and ghost flag.
"""

from __future__ import annotations

import difflib
from typing import Any

from . import expr as E
from .yamlpos import YList, YMap, YStr
from .specdata import Var
from .load_params import ParamsLoader


class VarsLoader(ParamsLoader):
    """Loading a spec's `vars`: each var's kind, domain, initial values and ghost flag."""

    # -- vars
    def vars(self, raw: Any, line: int) -> list[Var]:
        m = self.mapping(raw, line, "vars")
        if not m:
            raise self.at(line).error("a machine needs at least one var")
        out = []
        for name, decl in m.items():
            v = self.attempt(self.var, name, decl, m.line_of(name))
            if v is not None:
                out.append(v)
        return out
    def var(self, name: str, raw: Any, line: int) -> Var:
        self.ident(name, line, "a var name")
        d = self.mapping(raw, line, f"var {name}")
        kind = d.get("type")
        if kind == "int":
            self.keys(d, f"int var {name}", {"type", "min", "max", "init", "description", "ghost"},
                      {"min", "max", "init"})
            lo = self.int_expr(d["min"], self.param_scope, d.line_of("min"), f"min of {name}")
            hi = self.int_expr(d["max"], self.param_scope, d.line_of("max"), f"max of {name}")
            var = Var(name, "int", E.INT, lo, hi, line=line)
        elif kind == "enum":
            self.keys(d, f"enum var {name}", {"type", "values", "init", "description", "ghost"},
                      {"values", "init"})
            vals = d["values"]
            if not isinstance(vals, YList) or not vals:
                raise self.at(d.line_of("values")).error(f"values of {name} must be a non-empty list")
            for i, v in enumerate(vals):
                if not isinstance(v, str):
                    raise self.at(vals.line_of(i)).error(f"enum values of {name} must be strings", v)
            if len(set(vals)) != len(vals):
                raise self.at(d.line_of("values")).error(f"values of {name} list a value twice")
            var = Var(name, "enum", E.EnumT(frozenset(str(v) for v in vals), name), None, None,
                      tuple(str(v) for v in vals), line=line)
        elif kind == "bool":
            self.keys(d, f"bool var {name}", {"type", "init", "description", "ghost"}, {"init"})
            var = Var(name, "bool", E.BOOL, None, None, line=line)
        else:
            raise self.at(d.line_of("type") if "type" in d else line).error(
                f"var {name} needs a type: int, enum or bool", kind)
        init = d["init"]
        iline = d.line_of("init")
        if isinstance(init, YMap):
            self.keys(init, f"init of {name}", {"one_of"}, {"one_of"})
            opts = init["one_of"]
            if not isinstance(opts, YList) or not opts:
                raise self.at(iline).error(f"init one_of of {name} must be a non-empty list")
            var.init = [self.value_expr(o, var, self.param_scope, opts.line_of(i), f"init of {name}")
                        for i, o in enumerate(opts)]
        else:
            var.init = [self.value_expr(init, var, self.param_scope, iline, f"init of {name}")]
        if "ghost" in d:
            var.ghost = self.ghost(d["ghost"], d.line_of("ghost"), name)
        return var
    def ghost(self, raw: Any, line: int, name: str) -> bool:
        """`ghost: true`: the spec's stages alone compute the var (machine/binding.py), so the
        bound code need not have it; without bound code there is nothing it could be missing from."""
        if type(raw) is not bool:
            raise self.at(line).error(f"ghost of {name} must be true or false", raw)
        if raw and not self.bound_spec:
            raise self.at(line).error(f"ghost var {name} is one the bound code does not have, "
                                      "but the spec has no bind:")
        return raw
    def value_expr(self, raw: Any, var: Var, scope: E.Scope, line: int, what: str) -> E.Expr:
        """An expression whose value is stored into `var`: checked against its domain."""
        word = str(raw).strip() if isinstance(raw, str) else None
        if var.kind == "enum" and word in var.values:
            ex = E.literal_expr(word, str(raw))
        elif (var.kind == "enum" and word is not None and word.isidentifier()
              and word not in scope.names and word not in scope.literals):
            close = difflib.get_close_matches(word, list(var.values), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self.at(line).error(f"{what}: {word!r} is not a value of {var.name} "
                                      f"({', '.join(var.values)}){hint}", word)
        else:
            block = isinstance(raw, YStr) and raw.block
            ex = E.check(raw, scope, self.at(line), line_offset_block=block, what=what)
        if type(ex.type) is not type(var.type):
            raise self.at(line).error(f"{what} must be {var.kind}, but this is {ex.type}", ex.text)
        if isinstance(ex.type, E.EnumT) and isinstance(var.type, E.EnumT):    # same kind: checked above
            outside = sorted(ex.type.values - var.type.values)
            if outside:
                raise self.at(line).error(
                    f"{what} can be {', '.join(map(repr, outside))}, which is not a value of "
                    f"{var.name} ({', '.join(var.values)})", ex.text)
        return ex
