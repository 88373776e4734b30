"""A weather agent written the way Pydantic AI's docs write one: a tool the model calls, a
retry budget for it, and usage limits on the run.

`get_forecast` calls a weather service that sometimes times out; the tool asks the model to
try again (`ModelRetry`), and the agent allows 2 retries (`retries=2`). In production:

    agent.run_sync('What is the weather in Paris?', model='openai:gpt-5.2', usage_limits=LIMITS)

haltproof runs it with Pydantic AI's `FunctionModel` instead, so nothing here needs a network
or an API key.
"""
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.usage import UsageLimits

LIMITS = UsageLimits(request_limit=4, tool_calls_limit=2)

agent = Agent(instructions='Be concise, reply with one sentence.', retries=2)


class ServiceTimeout(Exception):
    """The weather service did not answer in time."""


def fetch_forecast(city: str) -> str:
    """The weather service (a stand-in: the real one is an HTTP call)."""
    return f'Sunny in {city}, 24 °C'


@agent.tool_plain
def get_forecast(city: str) -> str:
    """Get the weather forecast for a city."""
    try:
        return fetch_forecast(city)
    except ServiceTimeout as exc:
        raise ModelRetry('The weather service timed out, please try again.') from exc
