"""A Python-model base class in a module of its own, for tests/properties/test_vacuity_notices.py: the
notices about what a subclass inherits from here must name this file, not the subclass's.
Nothing here ships."""

from __future__ import annotations

from haltproof.machine.pymodel import Model, action


class ChoiceBase(Model):
    def domains(self, p):
        return {"x": range(0, 3)}

    def init(self, p):
        return [{"x": 0}]

    def terminal(self, s, p):          # never true: x stays within 0..2
        return s["x"] > 2

    @action(when=lambda s, p: s["x"] < 2, speed=["slow", "fast"])
    def inc(self, s, p, speed):
        return {"x": s["x"] + 1}


class NeverTakenBase(Model):
    """`never` is never enabled (x stays within 0..1): a notice about an action never taken."""

    def domains(self, p):
        return {"x": range(0, 2)}

    def init(self, p):
        return [{"x": 0}]

    def terminal(self, s, p):
        return s["x"] == 1

    @action(when=lambda s, p: s["x"] == 0)
    def step(self, s, p):
        return {"x": 1}

    @action(when=lambda s, p: s["x"] > 5)
    def never(self, s, p):
        return {"x": 0}


class RuleNeverReportedBase(Model):
    """`step` declares rules `moved` and `stuck` and only ever reports `moved`: a notice
    about a decide rule that never fires."""

    def domains(self, p):
        return {"x": range(0, 2)}

    def init(self, p):
        return [{"x": 0}]

    def terminal(self, s, p):
        return s["x"] == 1

    @action(when=lambda s, p: s["x"] == 0, rules=["moved", "stuck"])
    def step(self, s, p):
        return {"x": 1}, "moved"
