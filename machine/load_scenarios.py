"""Loading a spec's `scenarios`: each a named run of actions checked against expected states.
"""

from __future__ import annotations

from typing import Any

from .yamlpos import YList, YMap
from .specdata import Param, param_value_text, Var, ScenarioStep, Scenario
from .load_properties import PropertiesLoader


class ScenariosLoader(PropertiesLoader):
    """Loading a spec's `scenarios`: each a named run of actions checked against expected states."""

    # -- scenarios
    def scenarios(self, raw: Any, line: int, params: list[Param], vars_: list[Var]) -> list[Scenario]:
        m = self.mapping(raw, line, "scenarios")
        out = []
        for name, body in m.items():
            s = self.attempt(self.scenario, name, body, m.line_of(name), params, vars_)
            if s is not None:
                out.append(s)
        return out
    def scenario(self, name: str, raw: Any, line: int, params: list[Param], vars_: list[Var]) -> Scenario:
        m = self.mapping(raw, line, f"scenario {name}")
        self.keys(m, f"scenario {name}", {"description", "params", "init", "steps", "expect"},
                  {"steps", "expect"})
        pvals: dict[str, Any] = {}
        praw = m.get("params", YMap())
        praw = self.mapping(praw, m.line_of("params"), f"params of scenario {name}")
        for pname, value in praw.items():
            pl = praw.line_of(pname)
            if pname not in self.params_by_name:
                raise self.at(pl).error("not a declared param", pname)
            declared = self.params_by_name[pname]
            value = str(value) if isinstance(value, str) else value     # YAML's positioned string: a str
            if not declared.accepts(value):
                raise self.at(pl).error(f"{pname}={param_value_text(value)} is not a declared value of "
                                        f"{pname} ({declared.allowed_text()})")
            pvals[pname] = value
        for p in params:
            if p.name not in pvals:
                if p.count != 1:
                    raise self.at(line).error(f"scenario {name} must set param {p.name} "
                                              f"(it has several values)")
                pvals[p.name] = p.values[0]
        init = self.state_values(m.get("init", YMap()), m.line_of("init"), f"init of scenario {name}")
        for v in vars_:
            if len(v.init) > 1 and v.name not in init:
                raise self.at(line).error(f"scenario {name} must choose the initial value of "
                                          f"{v.name} (it has several)")
        steps_raw = m["steps"]
        if not isinstance(steps_raw, YList):
            raise self.at(m.line_of("steps")).error("steps must be a list")
        steps = []
        for i, st in enumerate(steps_raw):
            sl = steps_raw.line_of(i)
            st = self.mapping(st, sl, "a scenario step")
            self.keys(st, "a scenario step", {"action", "choices"}, {"action"})
            act = st["action"]
            if not isinstance(act, str) or act not in self.action_choices:
                raise self.at(sl).error("not an action of this machine", act)
            chs = dict(self.action_choices[act])
            given = self.mapping(st.get("choices", YMap()), st.line_of("choices"), "choices")
            for cname, cs in chs.items():
                if cname not in given and cs.when is None:      # a conditional choice may be absent
                    raise self.at(sl).error(f"action {act} needs a value for choice {cname}")
            for cname, value in given.items():
                cl = given.line_of(cname)
                if cname not in chs:
                    raise self.at(cl).error(f"action {act} has no choice named {cname!r}")
                cs = chs[cname]
                if cs.kind != "range" and value not in cs.labels():
                    raise self.at(cl).error(f"not a value of choice {cname} "
                                            f"({', '.join(map(str, cs.labels()))})", value)
                if cs.kind == "range":
                    self.integer(value, cl, f"choice {cname}")
            steps.append(ScenarioStep(str(act), {k: (str(v) if isinstance(v, str) else v)
                                                 for k, v in given.items()}, sl))
        expect = self.state_values(m["expect"], m.line_of("expect"), f"expect of scenario {name}")
        return Scenario(name, pvals, init, steps, expect, str(m.get("description", "")), line)
    def state_values(self, raw: Any, line: int, what: str) -> dict[str, Any]:
        m = self.mapping(raw, line, what)
        out = {}
        for vname, value in m.items():
            vl = m.line_of(vname)
            _, var = self.var_by_name(vname, vl)
            ok = ((var.kind == "int" and isinstance(value, int) and not isinstance(value, bool))
                  or (var.kind == "bool" and isinstance(value, bool))
                  or (var.kind == "enum" and isinstance(value, str) and value in var.values))
            if not ok:
                raise self.at(vl).error(f"not a value of {var.kind} var {vname}", value)
            out[vname] = str(value) if isinstance(value, str) else value
        return out
