"""A Python-model base class in a module of its own, for tests/machine/test_pymodel.py: its
subclasses live in that file, so every declaration inherited from here is in another
file than the spec's path (the subclass's). Nothing here ships."""

from __future__ import annotations

from haltproof.machine.pymodel import Model, action, always, terminates, terminates_within


class Base(Model):
    params = {"N": [2]}

    def domains(self, p):
        return {"x": range(0, p["N"] + 1)}

    def init(self, p):
        return [{"x": 0}]

    def terminal(self, s, p):
        return s["x"] == p["N"]

    @action(when=lambda s, p: s["x"] < p["N"], rules=["up", "never"])
    def inc(self, s, p):
        return {"x": s["x"] + 1}, "up"

    @action(when=lambda s, p: s["x"] > p["N"])
    def jump(self, s, p):
        return {"x": 0}

    @always
    def below_two(self, s, p):
        return s["x"] < 2

    stops = terminates()
    quick = terminates_within(lambda p: p["N"])
