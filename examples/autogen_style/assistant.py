"""A tool-using assistant in the shape of AutoGen AgentChat's `AssistantAgent`: a stand-in for a
framework haltproof has no integration for (AutoGen is not installed here).

Its run is one call, `await agent.run(task=...)`, that asks a model client (`create`) in a loop:
a reply with function calls runs the tools and goes on, a text reply ends the run. At most
`max_tool_iterations` rounds of tool calls run; with `reflect_on_tool_use`, the model is asked
once more after the last tool results, for a final answer. adapter.py binds it to assistant.yaml
with haltproof's `PausedAdapter` (docs/how-to/other-frameworks.md).
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class FunctionCall:
    id: str
    name: str
    arguments: str          # JSON


@dataclass(frozen=True)
class CreateResult:
    content: str | list[FunctionCall]


class ChatCompletionClient(Protocol):
    async def create(self, messages: list[Any], tools: list[Any]) -> CreateResult: ...


@dataclass
class TaskResult:
    messages: list[Any] = field(default_factory=list)
    stop_reason: str | None = None


async def web_search(query: str) -> str:
    """Search the web."""
    return f"3 results for {query}"


class AssistantAgent:
    def __init__(self, name: str, model_client: ChatCompletionClient, tools: list[Callable[..., Awaitable[str]]],
                 max_tool_iterations: int = 1, reflect_on_tool_use: bool = False):
        self.name, self.model_client = name, model_client
        self.tools = {tool.__name__: tool for tool in tools}
        self.max_tool_iterations, self.reflect_on_tool_use = max_tool_iterations, reflect_on_tool_use

    async def run(self, task: str) -> TaskResult:
        messages: list[Any] = [{"role": "user", "content": task}]
        for _ in range(self.max_tool_iterations):
            result = await self.model_client.create(messages, list(self.tools))
            messages.append(result)
            if isinstance(result.content, str):
                return TaskResult(messages)
            for call in result.content:
                output = await self.tools[call.name](**json.loads(call.arguments))
                messages.append({"role": "tool", "call_id": call.id, "content": output})
        if self.reflect_on_tool_use:
            final = await self.model_client.create(messages, [])
            return TaskResult([*messages, final], "reflected on the tool results")
        return TaskResult(messages, "max_tool_iterations reached")
