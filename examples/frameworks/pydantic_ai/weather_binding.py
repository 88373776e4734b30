"""weather.py's real agent bound to weather.yaml: the model's answers and the tool's outcomes are the only glue."""
from pydantic_ai import ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from weather import agent

from haltproof.frameworks.pydantic_ai import OK, AgentAdapter


class WeatherAdapter(AgentAdapter):
    responses = {
        "forecast": ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Paris"})]),
        "answer": ModelResponse(parts=[TextPart("Sunny in Paris, 24 °C.")]),
    }
    tool_outcomes = {"get_forecast": {
        "ok": OK,
        "timeout": ModelRetry("The weather service timed out, please try again."),
        "down": ConnectionError("the weather service is down"),
    }}
    reads = ("tool_runs", "tool_retries")

    def agent(self):
        return agent

    def prompt(self, params):
        return "What is the weather in Paris?"
