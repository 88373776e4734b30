"""assistant.py's agent bound to assistant.yaml: a model client that asks haltproof is the only glue."""
from assistant import AssistantAgent, CreateResult, FunctionCall, web_search

from haltproof.frameworks.paused import PausedAdapter

SEARCH = CreateResult([FunctionCall("call_1", "web_search", '{"query": "haltproof"}')])


class ScriptedClient:                   # the framework's model client: each call waits for haltproof
    def __init__(self, model):
        self.model = model

    async def create(self, messages, tools):
        return await self.model(messages)


class AssistantAdapter(PausedAdapter):
    answers = {"model": {"search": SEARCH, "final": CreateResult("haltproof proves agent loops stop.")}}

    async def run(self, params, model):
        agent = AssistantAgent("assistant", ScriptedClient(model), tools=[web_search],
                               max_tool_iterations=params["max_tool_iterations"], reflect_on_tool_use=True)
        return await agent.run(task="What is haltproof?")
