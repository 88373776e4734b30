"""Live binding of agent.run_agent to agent.yaml: each run is the real async generator."""
from agent import Event, ToolError, run_agent
from haltproof import LiveAdapter


class AgentAdapter(LiveAdapter):
    def start(self, params: dict, init: dict) -> dict:
        run = {"move": "", "seen": Event("start", 0, 0, "running")}     # move: the spec's choice

        async def model(history: list[str]) -> str:
            return "answer" if run["move"] == "answer" else "search"

        async def search(query: str) -> str:
            if run["move"] == "tool_error":
                raise ToolError("the search timed out")
            return "3 results"
        run["events"] = run_agent(model, {"search": search}, **params)
        return run

    async def step(self, live: dict, action: str, choices: dict) -> str:
        live["move"] = choices["move"]
        live["seen"] = await anext(live["events"])
        return live["seen"].kind

    def abstract(self, live: dict) -> dict:
        return {k: getattr(live["seen"], k) for k in ("steps", "retries", "status")}
