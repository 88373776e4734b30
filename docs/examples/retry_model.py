"""The retry loop of docs/examples/retry_loop.yaml, declared in plain Python."""

from haltproof.machine.pymodel import Model, action, always, reachable, step_invariant, terminates_within


class RetryLoop(Model):
    """A tool call retried at most R times, inside a budget of K calls."""

    params = {"K": [1, 2, 3, 4], "R": [0, 1, 2]}

    def domains(self, p):
        return {"calls": range(0, p["K"] + 1), "fails": range(0, p["K"] + 1),
                "status": ["running", "done", "failed", "out_of_budget"]}

    def init(self, p):
        return [{"calls": 0, "fails": 0, "status": "running"}]

    def terminal(self, s, p):
        return s["status"] != "running"

    @action(when=lambda s, p: s["status"] == "running", outcome=["ok", "error"],
            rules=["finished", "gave_up", "exhausted", "retry"])
    def call_tool(self, s, p, outcome):
        calls = s["calls"] + 1
        fails = s["fails"] + (outcome == "error")
        if outcome == "ok":
            return {"calls": calls, "fails": fails, "status": "done"}, "finished"
        if fails > p["R"]:
            return {"calls": calls, "fails": fails, "status": "failed"}, "gave_up"
        if calls >= p["K"]:
            return {"calls": calls, "fails": fails, "status": "out_of_budget"}, "exhausted"
        return {"calls": calls, "fails": fails, "status": "running"}, "retry"

    @always
    def budget_respected(self, s, p):
        return s["calls"] <= p["K"]

    @step_invariant
    def retries_bounded(self, before, after, p, action, choices, rule):
        return rule != "retry" or after["fails"] <= p["R"]

    @reachable
    def can_finish(self, s, p):
        return s["status"] == "done"

    bounded = terminates_within(lambda p: p["K"])
